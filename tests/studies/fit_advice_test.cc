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
// same TGS, and it fits.
TEST(AdviseFitTest, EveryChangeFitsAndReproducesFromItsFlags) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(BaseFlags());
  ASSERT_THAT(s, IsOk());
  absl::StatusOr<BackendSet> set = MakeBackendSet(s->backends, s->hw);
  ASSERT_THAT(set, IsOk());
  absl::StatusOr<Projection> p = Project(*s, RefsOf(*set));
  ASSERT_THAT(p, IsOk());
  ASSERT_FALSE(p->fits_in_memory);
  absl::StatusOr<FitAdvice> advice = AdviseFit(*s, *p);
  ASSERT_THAT(advice, IsOk());
  EXPECT_GT(advice->Over().value(), 0.0);
  ASSERT_FALSE(advice->changes.empty());
  EXPECT_LE(advice->changes.size(), 3u);
  for (size_t i = 0; i < advice->changes.size(); ++i) {
    const FitChange& c = advice->changes[i];
    EXPECT_LE(c.peak_memory.value(), advice->capacity.value()) << c.flags;
    if (i > 0) {
      EXPECT_LE(c.tokens_per_s_per_gpu, advice->changes[i - 1].tokens_per_s_per_gpu);
    }
    FlagValues f = BaseFlags();
    AddAdviceFlags(c.flags, f);
    absl::StatusOr<Scenario> changed = ScenarioFromFlags(f);
    ASSERT_THAT(changed, IsOk()) << c.flags;
    bool fits = false;
    EXPECT_THAT(ProjectTgs(*changed, fits), IsNearRel(c.tokens_per_s_per_gpu, 1e-9)) << c.flags;
    EXPECT_TRUE(fits) << c.flags;
  }
}

}  // namespace
}  // namespace projector
