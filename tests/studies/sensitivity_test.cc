#include "studies/sensitivity.h"

#include <string>
#include <vector>

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "projection/projection.h"
#include "report/report.h"
#include "scenario/training_defaults.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

double TgsOf(const Scenario& s) {
  const BackendSet backends = *MakeBackendSet(s.backends, s.hw);
  absl::StatusOr<Projection> p = Project(s, RefsOf(backends));
  EXPECT_THAT(p, IsOk());
  return p->tokens_per_s_per_gpu;
}

// A library model on `num_gpus` H100 at seq 4096; the layout and run are the caller's.
Scenario OnH100(const char* model, int64_t num_gpus, int64_t global_batch) {
  Scenario s;
  s.name = model;
  s.model = *ResolveModel(model);
  s.hw = *ResolveHardwareProfile("h100-sxm");
  s.num_gpus = num_gpus;
  s.training.seq_len = 4096;
  s.training.global_batch = global_batch;
  return s;
}

std::vector<std::string> Settings(const std::vector<SettingChange>& changes) {
  std::vector<std::string> out;
  for (const SettingChange& c : changes) out.push_back(c.setting + " " + c.alternative);
  return out;
}

// Llama 3.1 8B on one H100 in bf16: no DP, TP, experts or FP8, so CUDA graphs are the only
// setting that applies; replaying the step from graphs drops the host's per-op cost and can
// only speed it up.
TEST(RunSettingSensitivityTest, OneGpuDenseBf16HasOnlyCudaGraphs) {
  Scenario s = OnH100("llama3.1-8b", 1, 4);
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  auto changes = RunSettingSensitivity(s);
  ASSERT_THAT(changes, IsOk());
  ASSERT_EQ(changes->size(), 1u);
  const SettingChange& c = (*changes)[0];
  EXPECT_EQ(c.setting, "cuda_graphs");
  EXPECT_EQ(c.projected, "false");
  EXPECT_EQ(c.alternative, "true");
  EXPECT_EQ(c.result.flags, "--cuda-graphs");
  EXPECT_GE(c.result.tokens_per_s_per_gpu, TgsOf(s));
}

// Qwen3-30B-A3B on 16 H100, TP2 EP8 DP8, fp8 on the megatron stack (auto recipe: delayed on
// Hopper). A dropless MoE cannot be captured in CUDA graphs (refused), so graphs appear only
// with token drop; MXFP8 needs Blackwell (refused on H100); every other setting applies.
Scenario Qwen30bOn16H100() {
  Scenario s = OnH100("qwen3-30b-a3b", 16, 64);
  s.parallel.tp = 2;
  s.parallel.sequence_parallel = true;
  s.parallel.ep = 8;
  s.parallel.dp = 8;
  s.training.precision = DType::kFp8;
  EXPECT_THAT(ResolveKernels(s, "test"), IsOk());
  return s;
}

TEST(RunSettingSensitivityTest, MoeFp8SwitchesEachSettingThatApplies) {
  const Scenario s = Qwen30bOn16H100();
  auto changes = RunSettingSensitivity(s);
  ASSERT_THAT(changes, IsOk());
  EXPECT_THAT(Settings(*changes), ElementsAre("moe token routing capacity 1, padded, CUDA graphs",
                                              "deepep true", "moe_a2a_overlap true",
                                              "moe_router_padding true", "fp8_recipe tensorwise",
                                              "fp8_recipe blockwise", "overlap_grad_reduce false",
                                              "grad_reduce_dtype bf16", "tp_comm_overlap true"));
  const double tgs = TgsOf(s);
  for (const SettingChange& c : *changes) {
    if (c.setting == "moe token routing") {
      EXPECT_EQ(c.projected, "dropless");
      // Padding to capacity 1 is the balanced load dropless routing assumes (moe_imbalance 1),
      // without the host sync for the token counts and with the host's per-op cost replayed
      // from graphs: never slower.
      EXPECT_GE(c.result.tokens_per_s_per_gpu, tgs);
    }
    if (c.setting == "fp8_recipe") {
      EXPECT_EQ(c.projected, "delayed");
    }
    if (c.setting == "moe_router_padding") {
      // Auto without DeepEP: Transformer Engine's Fp8Padding copies; the alternative pads the
      // routing map, E·(16 − 1)/2 = 960 more pairs a rank instead of four copies of the rows.
      EXPECT_EQ(c.projected, "false");
      EXPECT_EQ(c.result.flags, "--moe-router-padding true");
    }
  }
  // Each row is the scenario with that one setting switched, projected on its own.
  Scenario overlap = s;
  overlap.training.moe_a2a_overlap = true;
  ASSERT_THAT(ResolveKernels(overlap, "test"), IsOk());
  EXPECT_DOUBLE_EQ((*changes)[2].result.tokens_per_s_per_gpu, TgsOf(overlap));
  EXPECT_EQ((*changes)[2].result.flags, "--moe-a2a-overlap");
}

// The report: one row per setting, then the range over them and the projection itself.
// Projection 1000 TGS; rows at 1100 (+10.0%) and 800 (−20.0%): range 800 .. 1100.
TEST(SensitivityReportTest, RowsAndRange) {
  std::vector<SettingChange> changes = {{.setting = "cuda_graphs",
                                         .projected = "false",
                                         .alternative = "true",
                                         .result = {.flags = "--cuda-graphs",
                                                    .peak_memory = Gibibytes(10),
                                                    .tokens_per_s_per_gpu = 1100}},
                                        {.setting = "fp8_recipe",
                                         .projected = "mxfp8",
                                         .alternative = "tensorwise",
                                         .result = {.flags = "--fp8-recipe tensorwise",
                                                    .peak_memory = Gibibytes(90),
                                                    .tokens_per_s_per_gpu = 800,
                                                    .fits = false}}};
  const std::string text = SensitivityText(changes, 1000);
  EXPECT_THAT(text, HasSubstr("cuda_graphs          false        -> true"));
  EXPECT_THAT(text, HasSubstr("TGS    1100.0 ( +10.0%)  peak   10.0 GiB  --cuda-graphs\n"));
  EXPECT_THAT(text, HasSubstr("TGS     800.0 ( -20.0%)  peak   90.0 GiB  DOES NOT FIT  "
                              "--fp8-recipe tensorwise\n"));
  EXPECT_THAT(text, HasSubstr("range 800.0 .. 1100.0 TGS (-20.0% .. +10.0% of the projection)"));
  const nlohmann::json j = SensitivityJson(changes, 1000);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[1]["setting"], "fp8_recipe");
  EXPECT_EQ(j[1]["projected"], "mxfp8");
  EXPECT_EQ(j[1]["alternative"], "tensorwise");
  EXPECT_EQ(j[1]["flags"], "--fp8-recipe tensorwise");
  EXPECT_DOUBLE_EQ(j[1]["change_pct"].get<double>(), -20.0);
  EXPECT_EQ(j[1]["fits"], false);
  EXPECT_THAT(SensitivityText({}, 1000), HasSubstr("no setting of the catalogue applies"));
}

}  // namespace
}  // namespace projector
