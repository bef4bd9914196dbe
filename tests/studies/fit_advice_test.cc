#include "studies/fit_advice.h"

#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/scenario_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;

// Llama 3.1 70B on 64 H100 with the default layout (TP1, DP64): 611 GiB per GPU.
FlagValues BaseFlags() {
  FlagValues f;
  for (auto [name, value] : {std::pair{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"},
                             {"num-gpus", "64"}, {"seq-len", "8192"}, {"micro-batch", "1"},
                             {"global-batch", "64"}}) {
    f.Add(name, value);
  }
  return f;
}

// "--tp 8 --sequence-parallel --recompute full" added to the flags as a user would type it.
void AddAdviceFlags(const std::string& flags, FlagValues& f) {
  const std::vector<std::string> words = absl::StrSplit(flags, ' ');
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string name = words[i].substr(2);
    const bool has_value = i + 1 < words.size() && !words[i + 1].starts_with("--");
    f.Add(name, has_value ? words[++i] : "true");
  }
}

double ProjectTgs(const Scenario& s, bool& fits) {
  absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
  EXPECT_THAT(set, IsOk());
  absl::StatusOr<Projection> p = Project(s, RefsOf(*set));
  EXPECT_THAT(p, IsOk());
  fits = p.ok() && p->fits_in_memory;
  return p.ok() ? p->tokens_per_s_per_gpu : 0.0;
}

// Every change offered fits, they come fastest first, and typing its flags reproduces it: the
// same TGS, and it fits. Returns the changes' flags.
std::vector<std::string> CheckAdvice(const FlagValues& base) {
  std::vector<std::string> offered;
  absl::StatusOr<Scenario> s = ScenarioFromFlags(base);
  EXPECT_THAT(s, IsOk());
  if (!s.ok()) return offered;
  absl::StatusOr<BackendSet> set = MakeBackendSet(s->backends, s->hw);
  EXPECT_THAT(set, IsOk());
  if (!set.ok()) return offered;
  absl::StatusOr<Projection> p = Project(*s, RefsOf(*set));
  EXPECT_THAT(p, IsOk());
  if (!p.ok()) return offered;
  EXPECT_FALSE(p->fits_in_memory);
  absl::StatusOr<FitAdvice> advice = AdviseFit(*s, *p);
  EXPECT_THAT(advice, IsOk());
  if (!advice.ok()) return offered;
  EXPECT_GT(advice->Over().value(), 0.0);
  EXPECT_FALSE(advice->changes.empty());
  EXPECT_LE(advice->changes.size(), 3u);
  for (size_t i = 0; i < advice->changes.size(); ++i) {
    const FitChange& c = advice->changes[i];
    EXPECT_LE(c.peak_memory.value(), advice->capacity.value()) << c.flags;
    if (i > 0) {
      EXPECT_LE(c.tokens_per_s_per_gpu, advice->changes[i - 1].tokens_per_s_per_gpu);
    }
    offered.push_back(c.flags);
    FlagValues f = base;
    AddAdviceFlags(c.flags, f);
    absl::StatusOr<Scenario> changed = ScenarioFromFlags(f);
    EXPECT_THAT(changed, IsOk()) << c.flags;
    if (!changed.ok()) continue;
    bool fits = false;
    EXPECT_THAT(ProjectTgs(*changed, fits), IsNearRel(c.tokens_per_s_per_gpu, 1e-9)) << c.flags;
    EXPECT_TRUE(fits) << c.flags;
  }
  return offered;
}

TEST(AdviseFitTest, EveryChangeFitsAndReproducesFromItsFlags) { CheckAdvice(BaseFlags()); }

// DeepSeek-V3 on 1,024 H100 (TP2 PP8 VPP4 EP64, fp8) with 70 GiB of HBM is 6.9 GiB over: Megatron-
// Core's output-discarding recompute modules (MLA's up-projections, the separate norms, the
// experts' activation) make it fit for the least compute, ahead of more TP or CP.
TEST(AdviseFitTest, OffersTheCheapRecomputeModulesOfAnMlaMoeModel) {
  FlagValues f;
  for (auto [name, value] :
       {std::pair{"model", "deepseek-v3"}, {"gpu-arch", "h100-sxm"}, {"num-gpus", "1024"},
        {"tp", "2"}, {"pp", "8"}, {"vpp", "4"}, {"first-stage-layers", "7"},
        {"last-stage-layers", "6"}, {"ep", "64"}, {"sequence-parallel", "true"},
        {"precision", "fp8"}, {"seq-len", "4096"}, {"micro-batch", "1"},
        {"global-batch", "8192"}, {"hbm-gib", "70"}}) {
    f.Add(name, value);
  }
  const std::vector<std::string> offered = CheckAdvice(f);
  ASSERT_FALSE(offered.empty());
  EXPECT_EQ(offered.front(), "--recompute selective --recompute-modules mla_up_proj,layernorm,moe_act");
}

}  // namespace
}  // namespace projector
