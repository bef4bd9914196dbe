#include "projection/step_composer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/projection/projection_test_util.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FakeCollectiveBackend;
using ::projector::testing::FakeMemoryBackend;
using ::projector::testing::FixedLayer;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

struct Fixture {
  ModelSpec model = projector::testing::ToyModel();
  ParallelConfig par;
  TrainingConfig tr;
  ComposedLayer layer = FixedLayer(Milliseconds(1), Milliseconds(2));
  ComposedEndModule embedding, output;
  testing::FakeGemmBackend gemm;
  testing::FakeAttentionBackend attention;
  FakeMemoryBackend memory;
  FakeCollectiveBackend collective;

  explicit Fixture(Seconds wire_seconds_per_byte = Seconds(0))
      : collective(wire_seconds_per_byte) {
    tr.seq_len = 512;
    tr.micro_batch = 1;
  }
  absl::StatusOr<StepResult> Run() {
    StepInputs in{.model = model, .parallel = par, .training = tr, .dense = &layer,
                  .moe = nullptr, .embedding = embedding, .output = output,
                  .hbm_capacity = Gigabytes(80)};
    return ComposeStep(in, BackendRefs{.gemm = gemm, .attention = attention, .memory = memory,
                                       .collective = collective});
  }
};

TEST(StepComposerTest, MicroBatchesAreGlobalOverMicroTimesDp) {
  ParallelConfig par;
  par.dp = 8;
  TrainingConfig tr;
  tr.global_batch = 64;
  tr.micro_batch = 2;
  EXPECT_EQ(MicroBatches(par, tr), 4);
  Fixture fx;
  fx.par.dp = 8;
  fx.tr.global_batch = 4;
  EXPECT_THAT(fx.Run(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("global batch")));
}

TEST(StepComposerTest, OneFOneBStepIsTheClosedForm) {
  Fixture fx;
  fx.model.num_layers = 8;
  fx.par.pp = 4;
  fx.tr.global_batch = 8;  // m = 8
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->micro_batches, 8);
  // Two layers per stage: f = 2 ms, b = 4 ms; (m + p − 1)(f + b) = 11 · 6 ms.
  Seconds expected = OneFOneBClosedForm(8, 4, Milliseconds(2), Milliseconds(4));
  EXPECT_THAT(r->step_time.value(), IsNearRel(expected.value(), 1e-12));
  EXPECT_THAT(r->breakdown.compute.value(), IsNearRel(8 * 6e-3, 1e-12));
  EXPECT_THAT(r->breakdown.pipeline_bubble.value(), IsNearRel(3 * 6e-3, 1e-9));
  EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
}

TEST(StepComposerTest, InterleavedBubbleShrinksByVpp) {
  Fixture fx;
  fx.model.num_layers = 8;
  fx.par.pp = 4;
  fx.par.vpp = 2;
  fx.tr.global_batch = 8;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Bubble (p − 1)(f + b)/v with f + b = 6 ms per stage.
  EXPECT_THAT(r->breakdown.pipeline_bubble.value(), IsNearRel(3 * 6e-3 / 2, 1e-9));
  EXPECT_THAT(r->step_time.value(),
              IsNearRel(InterleavedClosedForm(8, 4, 2, Milliseconds(2), Milliseconds(4)).value(),
                        1e-9));
}

TEST(StepComposerTest, UnevenStagesAndEndModulesAreHonoured) {
  Fixture fx;
  fx.model.num_layers = 6;
  fx.par.pp = 2;
  fx.par.first_stage_layers = 2;  // 2 + 4
  fx.tr.global_batch = 4;
  auto chunks = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(chunks, IsOk());
  EXPECT_EQ((*chunks)[0].num_layers, 2);
  EXPECT_EQ((*chunks)[1].num_layers, 4);
  EXPECT_TRUE((*chunks)[0].has_embedding);
  EXPECT_TRUE((*chunks)[1].has_output);
  fx.output.forward_compute = Milliseconds(1);
  fx.output.backward_compute = Milliseconds(2);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Last stage: 4 layers + output = f 5 ms, b 10 ms; first: f 2, b 4. One slow stage:
  // Σ(f + b) + (m − 1)·max(f + b) = 6 + 15 + 3 · 15 ms.
  EXPECT_THAT(r->step_time.value(), IsNearRel(66e-3, 1e-12));
  fx.par.first_stage_layers = 7;
  EXPECT_THAT(fx.Run(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("uneven")));
}

TEST(StepComposerTest, EmbeddingAndLossTakeALayerSlotWhenLayersPlusTwoDivide) {
  Fixture fx;
  fx.model.num_layers = 14;  // 14 + 2 = 16 slots over pp 4 · vpp 2 = 8 virtual stages
  fx.par.pp = 4;
  fx.par.vpp = 2;
  auto chunks = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(chunks, IsOk());
  // Chunk index is rank·v + c; virtual stage vs = c·p + r. First vs (rank 0, chunk 0) and last
  // (rank 3, chunk 1) hold one layer next to the embedding / loss, the rest two each.
  int64_t total = 0;
  for (const ChunkAssignment& a : *chunks) total += a.num_layers;
  EXPECT_EQ(total, 14);
  EXPECT_EQ((*chunks)[0].num_layers, 1);
  EXPECT_TRUE((*chunks)[0].has_embedding);
  EXPECT_EQ((*chunks)[3 * 2 + 1].num_layers, 1);
  EXPECT_TRUE((*chunks)[3 * 2 + 1].has_output);
  EXPECT_EQ((*chunks)[1].num_layers, 2);
}

TEST(StepComposerTest, MoeModelsPlaceLeadingDenseLayersAsDense) {
  Fixture fx;
  fx.model = projector::testing::ToyMoeModel();  // layer 0 dense, 1..3 MoE
  fx.par.pp = 2;
  auto chunks = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(chunks, IsOk());
  EXPECT_EQ((*chunks)[0].dense_layers, 1);
  EXPECT_EQ((*chunks)[0].moe_layers, 1);
  EXPECT_EQ((*chunks)[1].dense_layers, 0);
  EXPECT_EQ((*chunks)[1].moe_layers, 2);
}

TEST(StepComposerTest, FullRecomputeAddsOneForwardPerRecomputedLayer) {
  Fixture fx;
  fx.tr.recompute = Recompute::kFull;
  fx.tr.recompute_layers = 3;
  fx.tr.global_batch = 1;
  fx.layer.recompute_compute = Milliseconds(1);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // 4 layers · (1 + 2) ms + 3 recomputed · 1 ms.
  EXPECT_THAT(r->step_time.value(), IsNearRel(15e-3, 1e-12));
}

// 4 layers of 1e8 parameters, DP 2, one micro-batch: 10 buckets of 40M params, each an
// AllReduce of 160 MB fp32 grads = 16 ms on the 10 GB/s fake.
struct DpFixture : Fixture {
  DpFixture() : Fixture(Seconds(1e-10)) {
    layer = FixedLayer(Milliseconds(10), Milliseconds(10), 1e8);
    par.dp = 2;
    tr.global_batch = 2;
  }
};

TEST(StepComposerTest, DpGradSyncExposesWhatTheLastBackwardCannotHide) {
  DpFixture fx;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Buckets ready every 4 ms over the 40 ms backward; the stream is the bottleneck:
  // exposed = C − (backward − one bucket's production) = 160 − 36 ms (≥ last bucket 16 ms).
  EXPECT_THAT(r->dp_comm_total.value(), IsNearRel(160e-3, 1e-12));
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(124e-3, 1e-9));
  EXPECT_LE(r->breakdown.exposed_dp_comm, r->dp_comm_total);
}

TEST(StepComposerTest, DpGradSyncHidesAllButTheLastBucketBehindALongBackward) {
  DpFixture fx;
  fx.layer.backward_compute = Seconds(1);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(16e-3, 1e-9));
}

TEST(StepComposerTest, DpGradSyncFullyExposedWithoutOverlapAndZeroWithoutDp) {
  DpFixture fx;
  fx.tr.overlap_grad_reduce = false;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(160e-3, 1e-12));
  DpFixture single;
  single.par.dp = 1;
  single.tr.global_batch = 1;
  auto s = single.Run();
  ASSERT_THAT(s, IsOk());
  EXPECT_DOUBLE_EQ(s->breakdown.exposed_dp_comm.value(), 0.0);
}

TEST(StepComposerTest, OptimizerStepIsMemoryBoundOverTheUpdatedParams) {
  DpFixture fx;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // 4e8 params · 34 B at 1 TB/s (fake memory backend).
  EXPECT_THAT(r->breakdown.optimizer.value(), IsNearRel(4e8 * 34 * 1e-12, 1e-9));
  DpFixture sharded;
  sharded.par.distributed_optimizer = true;
  auto s = sharded.Run();
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->breakdown.optimizer.value(), IsNearRel(2e8 * 34 * 1e-12, 1e-9));
}

TEST(StepComposerTest, FsdpExposureIsCommMinusComputePerLayer) {
  DpFixture fx;
  fx.par.fsdp = true;
  fx.tr.global_batch = 4;  // m = 2
  fx.layer = FixedLayer(Milliseconds(10), Milliseconds(20), 1e8);
  fx.embedding.forward_compute = Milliseconds(1);
  fx.embedding.backward_compute = Milliseconds(1);
  fx.output.forward_compute = Milliseconds(1);
  fx.output.backward_compute = Milliseconds(1);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Per layer: AG of 2e8 B bf16 = 20 ms, RS of 4e8 B fp32 grads = 40 ms.
  // Forward: layer 1's gather behind the 1 ms embedding, layers 2-4 behind 10 ms layers:
  //   (20 − 1) + 3 · (20 − 10) = 49 ms.
  // Backward: a re-gather + RS per layer behind its 20 ms backward: 4 · (60 − 20) = 160 ms.
  double per_mb = 49e-3 + 160e-3;
  EXPECT_THAT(r->breakdown.exposed_fsdp_comm.value(), IsNearRel(2 * per_mb, 1e-9));
  EXPECT_DOUBLE_EQ(r->breakdown.exposed_dp_comm.value(), 0.0);
  // Adam over the 1/DP shard.
  EXPECT_THAT(r->breakdown.optimizer.value(), IsNearRel(2e8 * 34 * 1e-12, 1e-9));
  EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
}

TEST(StepComposerTest, FsdpFullyHiddenBehindLongComputeExposesNothing) {
  DpFixture fx;
  fx.par.fsdp = true;
  fx.tr.global_batch = 2;
  fx.layer = FixedLayer(Seconds(1), Seconds(1), 1e8);
  fx.embedding.forward_compute = Seconds(1);
  fx.embedding.backward_compute = Seconds(1);
  fx.output.forward_compute = Seconds(1);
  fx.output.backward_compute = Seconds(1);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_DOUBLE_EQ(r->breakdown.exposed_fsdp_comm.value(), 0.0);
}

TEST(StepComposerTest, ExpertDpGroupDividesTheStageByEpTimesEtp) {
  ParallelConfig par;
  par.tp = 2;
  par.dp = 16;
  par.ep = 8;
  ProcessGroup g = ExpertDpGroup(par);
  EXPECT_EQ(g.size, 4);  // DP·CP·TP / (EP·ETP) = 32 / 8
  EXPECT_EQ(g.stride, 8);
}

}  // namespace
}  // namespace projector
