#include "projection/projection.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

namespace projector {
namespace {

using ::projector::testing::FakeBackends;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::ToyScenario;

TEST(ProjectTest, TgsIsGlobalTokensOverStepTimeOverGpus) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->micro_batches, 64 / (1 * 8));
  double tokens = 64.0 * 512;
  EXPECT_THAT(p->tokens_per_s_per_gpu, IsNearRel(tokens / p->step_time.value() / 8, 1e-12));
  EXPECT_THAT(p->tokens_per_s, IsNearRel(tokens / p->step_time.value(), 1e-12));
  EXPECT_THAT(p->breakdown.Total().value(), IsNearRel(p->step_time.value(), 1e-12));
  EXPECT_GT(p->breakdown.compute.value(), 0.0);
}

// The memory model reads no time, so a projection stopped for memory before its pipeline replay,
// or at its lower bound with a memory limit given, reports the peak the full projection reports;
// under the limit it runs to the end unchanged.
TEST(ProjectTest, AbandonAboveMemoryStopsBeforeTheReplayWithTheSamePeak) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  s.parallel.pp = 2;
  s.parallel.dp = 4;
  auto full = Project(s, fakes.Refs());
  ASSERT_THAT(full, IsOk());
  ASSERT_GT(full->peak_memory_per_gpu.value(), 0.0);

  ProjectionOptions below;
  below.abandon_above_memory = full->peak_memory_per_gpu * 0.999;
  auto stopped = Project(s, fakes.Refs(), below);
  ASSERT_THAT(stopped, IsOk());
  EXPECT_TRUE(stopped->over_memory_limit);
  EXPECT_EQ(stopped->peak_memory_per_gpu.value(), full->peak_memory_per_gpu.value());
  EXPECT_EQ(stopped->memory.stages.size(), full->memory.stages.size());
  EXPECT_EQ(stopped->step_time.value(), 0.0);  // never replayed

  // Stopped at its lower bound instead (a search's bound pass), it still carries that peak.
  ProjectionOptions bounded;
  bounded.abandon_at = Seconds(0);
  bounded.abandon_above_memory = full->peak_memory_per_gpu * 2;
  auto at_bound = Project(s, fakes.Refs(), bounded);
  ASSERT_THAT(at_bound, IsOk());
  EXPECT_TRUE(at_bound->abandoned);
  EXPECT_EQ(at_bound->peak_memory_per_gpu.value(), full->peak_memory_per_gpu.value());

  ProjectionOptions at;
  at.abandon_above_memory = full->peak_memory_per_gpu;  // not above: replayed
  auto kept = Project(s, fakes.Refs(), at);
  ASSERT_THAT(kept, IsOk());
  EXPECT_FALSE(kept->over_memory_limit);
  EXPECT_EQ(kept->step_time.value(), full->step_time.value());
  EXPECT_EQ(kept->peak_memory_per_gpu.value(), full->peak_memory_per_gpu.value());
}

TEST(ProjectTest, MfuIsModelFlopsOverStepOverPeak) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  // 6·N_matmul + 6·L·s·H·(d_qk + d_v) per token, N_matmul excluding the input embedding.
  const ModelSpec& m = s.model;
  double n = m.ActiveParameters() - 1000.0 * 256;
  double per_token = 6 * n + 6.0 * 4 * 512 * 4 * 128;
  EXPECT_THAT(p->model_flops_per_step.value(), IsNearRel(64.0 * 512 * per_token, 1e-12));
  double tflops = p->model_flops_per_step.value() / p->step_time.value() / 8 * 1e-12;
  EXPECT_THAT(p->tflops_per_gpu, IsNearRel(tflops, 1e-12));
  EXPECT_THAT(p->mfu, IsNearRel(tflops * 1e12 / p->peak_flops_per_gpu.value(), 1e-12));
  EXPECT_GT(p->peak_flops_per_gpu.value(), 0.0);
}

// One MTP module on the toy model (4 dense layers, h 256, FFN 1024 SwiGLU, 4 heads of 64, vocab
// 1000, untied): its layer (attention 4·256·256 + 2 norms 2·256 + MLP 3·256·1024), the 2h -> h
// projection 2·256² and two more norms 2·256 join N_matmul, with one more pass of the output
// head (1000·256); L counts 5 layers in the attention term.
TEST(ProjectTest, ModelFlopsCountTheMtpModule) {
  Scenario s = ToyScenario();
  s.model.mtp_layers = 1;
  const double h = 256;
  const double module = 4 * h * h + 2 * h + 3 * h * 1024 + 2 * h * h + 2 * h;
  EXPECT_DOUBLE_EQ(s.model.MtpParameters(/*active_only=*/true), module);
  const double n = s.model.ActiveParameters() - 1000.0 * 256 + module + 1000.0 * 256;
  const double per_token = 6 * n + 6.0 * 5 * 512 * 4 * 128;
  EXPECT_THAT(ModelFlopsPerStep(s.model, s.training).value(),
              IsNearRel(64.0 * 512 * per_token, 1e-12));
  // And the step takes longer than without it.
  FakeBackends fakes;
  auto with = Project(s, fakes.Refs());
  s.model.mtp_layers = 0;
  auto without = Project(s, fakes.Refs());
  ASSERT_THAT(with, IsOk());
  ASSERT_THAT(without, IsOk());
  EXPECT_GT(with->step_time, without->step_time);
}

// The training metrics read the main head's logits only: with an MTP module, whose pass of the
// output head is otherwise the same op list, two metric passes add exactly what they add
// without it (one train_metrics op per micro-batch, not one per head).
TEST(ProjectTest, TrainMetricsRunOnTheMainHeadOnly) {
  FakeBackends fakes;
  auto metric_cost = [&](int64_t mtp_layers) {
    Scenario s = ToyScenario();
    s.model.mtp_layers = mtp_layers;
    s.training.train_metric_passes = 2;
    auto with = Project(s, fakes.Refs());
    s.training.train_metric_passes = 0;
    auto without = Project(s, fakes.Refs());
    EXPECT_THAT(with, IsOk());
    EXPECT_THAT(without, IsOk());
    return (with->breakdown.compute - without->breakdown.compute).value();
  };
  const double main_head_only = metric_cost(0);
  EXPECT_GT(main_head_only, 0.0);
  EXPECT_THAT(metric_cost(1), IsNearRel(main_head_only, 1e-9));
}

// Toy MoE (4 layers, the first dense; 8 experts, top-2, expert FFN 512 SwiGLU, h 256): each of
// the 3 MoE layers activates 2 · 3·256·512 routed-expert parameters. A capacity factor of 0.25
// runs a quarter of the routed tokens, so N_matmul loses 0.75 of them; 0 (dropless) and >= 1
// (nothing dropped under balanced routing) keep them all.
TEST(ProjectTest, ModelFlopsCountOnlyTheExpertWorkACapacityLetsThrough) {
  Scenario s = ToyScenario();
  s.model = projector::testing::ToyMoeModel();
  const double routed = 3.0 * 2 * 3 * 256 * 512;
  EXPECT_DOUBLE_EQ(s.model.RoutedActiveParameters(), routed);
  const double tokens = 64.0 * 512;
  const double full = ModelFlopsPerStep(s.model, s.training).value();
  s.training.moe_capacity_factor = 0.25;
  EXPECT_THAT(ModelFlopsPerStep(s.model, s.training).value(),
              IsNearRel(full - tokens * 6 * 0.75 * routed, 1e-12));
  s.training.moe_capacity_factor = 1.5;
  EXPECT_DOUBLE_EQ(ModelFlopsPerStep(s.model, s.training).value(), full);
}

TEST(ProjectTest, ComputeOnlyScenarioScalesWithClockShare) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  s.parallel.dp = 1;
  s.num_gpus = 1;
  s.training.global_batch = 2;
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  EXPECT_GT(p->clock_scaled_share, 0.0);
  EXPECT_LE(p->clock_scaled_share, 1.0);
  EXPECT_DOUBLE_EQ(p->breakdown.exposed_dp_comm.value(), 0.0);
}

TEST(ProjectTest, KeptOpsAddUpToTheModuleTimesAndChangeNothing) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  auto plain = Project(s, fakes.Refs());
  ProjectionOptions options;
  options.keep_ops = true;
  auto kept = Project(s, fakes.Refs(), options);
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(kept, IsOk());
  EXPECT_TRUE(plain->op_tables.empty());
  EXPECT_DOUBLE_EQ(kept->step_time.value(), plain->step_time.value());
  ASSERT_EQ(kept->op_tables.size(), 3u);  // dense layer, embedding, output
  EXPECT_EQ(kept->op_tables[0].group, "dense layer");
  EXPECT_EQ(kept->op_tables[0].count, s.model.num_layers);
  EXPECT_EQ(kept->op_tables[1].group, "embedding");
  EXPECT_EQ(kept->op_tables[2].group, "output");
  // TP1, no CP/EP: the layer has no communication, so its module times (forward + backward +
  // recompute) are exactly the sum of its op times.
  double ops = 0;
  for (const Op& op : kept->op_tables[0].ops) ops += op.time.value();
  double modules = 0;
  for (const ModuleTimes& m : kept->layer_kinds[0].modules) {
    modules += m.forward.value() + m.backward.value() + m.recompute.value();
  }
  EXPECT_THAT(ops, IsNearRel(modules, 1e-12));
  EXPECT_GT(ops, 0.0);
}

TEST(ProjectTest, MoeModelReportsDenseAndMoeLayers) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  s.model = projector::testing::ToyMoeModel();
  s.parallel.ep = 4;
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  ASSERT_EQ(p->layer_kinds.size(), 2u);
  EXPECT_FALSE(p->layer_kinds[0].is_moe);
  EXPECT_EQ(p->layer_kinds[0].count, 1);
  EXPECT_TRUE(p->layer_kinds[1].is_moe);
  EXPECT_EQ(p->layer_kinds[1].count, 3);
  EXPECT_GT(p->breakdown.exposed_ep_comm.value(), 0.0);
}

TEST(ProjectTest, DoesNotFitFlagFollowsHbmCapacity) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  s.hw.gpu.hbm_capacity = Gigabytes(1);  // below the 2 GiB workspace allowance alone
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  EXPECT_FALSE(p->fits_in_memory);
  s.hw.gpu.hbm_capacity = Gigabytes(80);
  auto q = Project(s, fakes.Refs());
  ASSERT_THAT(q, IsOk());
  EXPECT_TRUE(q->fits_in_memory);
  EXPECT_GT(q->peak_memory_per_gpu.value(), 0.0);
}

// The loss's working set sits on the stage holding the output layer, at the end of its forward:
// with PP 2 (toy: 4 layers, vocab 1000 padded to 1024, seq 512, micro-batch 1, no recompute)
// the eager PyTorch loss keeps 4 B per logit and peaks at 14, Megatron's keeps 4 and peaks at 6,
// so the last stage's activations differ by (14 - 6) B x 512 x 1024 logits and the first
// stage's not at all.
TEST(ProjectTest, LossWorkingSetSitsOnTheLastStage) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  s.parallel.pp = 2;
  s.parallel.dp = 4;
  s.training.loss_kernel = LossKernel::kMegatron;
  auto megatron = Project(s, fakes.Refs());
  s.training.loss_kernel = LossKernel::kPyTorch;
  auto eager = Project(s, fakes.Refs());
  ASSERT_THAT(megatron, IsOk());
  ASSERT_THAT(eager, IsOk());
  ASSERT_EQ(eager->memory.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(eager->memory.stages[0].activations.value(),
                   megatron->memory.stages[0].activations.value());
  EXPECT_THAT(
      eager->memory.stages[1].activations.value() - megatron->memory.stages[1].activations.value(),
      IsNearRel(8.0 * 512 * 1024, 1e-9));
}

TEST(ProjectTest, MeasuredTgsGivesSignedErrorPercent) {
  FakeBackends fakes;
  Scenario s = ToyScenario();
  auto p0 = Project(s, fakes.Refs());
  ASSERT_THAT(p0, IsOk());
  s.measured_tokens_per_s_per_gpu = p0->tokens_per_s_per_gpu / 1.1;
  auto p = Project(s, fakes.Refs());
  ASSERT_THAT(p, IsOk());
  ASSERT_TRUE(p->error_pct.has_value());
  EXPECT_THAT(*p->error_pct, IsNearRel(10.0, 1e-9));
}

}  // namespace
}  // namespace projector

namespace projector {
namespace {

TEST(ReplayedPassesTest, PipelineChunksTimesMicroBatchesTimesPasses) {
  Scenario s = testing::ToyScenario();
  s.parallel.pp = 4;
  s.parallel.vpp = 2;
  s.parallel.dp = 2;
  s.training.micro_batch = 1;
  s.training.global_batch = 64;
  // 64 / (1·2) = 32 micro-batches; pp·vpp = 8 chunks; forward + backward = 2 passes each.
  EXPECT_DOUBLE_EQ(ReplayedPasses(s), 8.0 * 32.0 * 2.0);
  // Zero bubble runs one chunk per rank and a third pass (W) per micro-batch: 4·32·3.
  s.parallel.vpp = 1;
  s.parallel.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
  EXPECT_DOUBLE_EQ(ReplayedPasses(s), 4.0 * 32.0 * 3.0);
}

}  // namespace
}  // namespace projector
