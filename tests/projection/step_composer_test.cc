#include "projection/step_composer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/training_defaults.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

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
  CommInterferenceModel interference;  // none unless a test sets it
  absl::StatusOr<StepResult> Run() {
    StepInputs in{.model = model,
                  .parallel = par,
                  .training = tr,
                  .dense = &layer,
                  .moe = nullptr,
                  .embedding = embedding,
                  .output = output,
                  .mtp_output = std::nullopt,
                  .hbm_capacity = Gigabytes(80),
                  .interference = interference,
                  .timeline = nullptr,
                  .run = ResolveRunChoices(model, par, tr, "sm_90")};
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

TEST(StepComposerTest, ZeroBubbleDefersTheLayersWeightGradients) {
  Fixture fx;
  fx.model.num_layers = 8;
  fx.par.pp = 4;
  fx.par.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
  fx.tr.global_batch = 8;  // m = 8
  // Of each layer's 2 ms backward, 1 ms is weight gradients: per stage f = 2, b = 2, w = 2 ms.
  fx.layer.backward_weight_grad = Milliseconds(1);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // m(f + b + w) + (p − 1)(f + b − w) = 8 · 6 + 3 · 2 = 54 ms, against 1F1B's 66 ms.
  Seconds expected =
      ZeroBubbleH1ClosedForm(8, 4, Milliseconds(2), Milliseconds(2), Milliseconds(2));
  EXPECT_THAT(expected.value(), IsNearRel(54e-3, 1e-12));
  EXPECT_THAT(r->step_time.value(), IsNearRel(expected.value(), 1e-12));
  EXPECT_THAT(r->breakdown.compute.value(), IsNearRel(8 * 6e-3, 1e-12));
  EXPECT_THAT(r->breakdown.pipeline_bubble.value(), IsNearRel(3 * 2e-3, 1e-9));
  // Every stage holds p = 4 micro-batches (the first stage's 1F1B peak).
  for (const StageMemory& st : r->memory.stages) EXPECT_EQ(st.in_flight_micro_batches, 4);
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

// Uneven stages with interleaving: 11 layers over pp 3 (first 3, last 2, middle 6) and vpp 2.
// Each stage's layers are dealt over its chunks, the first chunk taking the remainder: rank 0
// 2 + 1, rank 1 3 + 3, rank 2 1 + 1 (chunk index rank·v + c; layers follow virtual-stage
// order c·p + r, so rank 0's second chunk starts after every rank's first chunk).
TEST(StepComposerTest, UnevenStagesAreDealtOverTheirModelChunks) {
  Fixture fx;
  fx.model.num_layers = 11;
  fx.par.pp = 3;
  fx.par.vpp = 2;
  fx.par.first_stage_layers = 3;
  fx.par.last_stage_layers = 2;
  auto chunks = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(chunks, IsOk());
  const int64_t expected[] = {2, 1, 3, 3, 1, 1};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ((*chunks)[i].num_layers, expected[i]) << i;
  EXPECT_EQ((*chunks)[0].first_layer, 0);
  EXPECT_EQ((*chunks)[1].first_layer, 2 + 3 + 1);  // after virtual stages 0, 1, 2
  EXPECT_TRUE((*chunks)[0].has_embedding);
  EXPECT_TRUE((*chunks)[5].has_output);
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

// An MTP module sits on the output chunk: one more layer (1 + 2 ms) and one more pass of the
// output head (1 + 2 ms) there. PP 2, 4 layers: first stage 2 layers f 2 b 4, last 2 layers +
// output + MTP layer + output again = f 2 + 1 + 1 + 1 = 5, b 4 + 2 + 2 + 2 = 10 ms. One slow
// stage, m = 2: Σ(f + b) + (m − 1)·max(f + b) = 6 + 15 + 15 ms. Under full recompute of all
// layers the MTP layer is recomputed too.
TEST(StepComposerTest, MtpModuleRunsOnTheOutputChunk) {
  Fixture fx;
  fx.model.mtp_layers = 1;
  fx.par.pp = 2;
  fx.tr.global_batch = 2;
  fx.output.forward_compute = Milliseconds(1);
  fx.output.backward_compute = Milliseconds(2);
  auto chunks = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(chunks, IsOk());
  EXPECT_EQ((*chunks)[0].mtp_layers, 0);
  EXPECT_EQ((*chunks)[1].mtp_layers, 1);
  EXPECT_EQ((*chunks)[1].recomputed_mtp, 0);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->step_time.value(), IsNearRel(36e-3, 1e-12));
  fx.tr.recompute = Recompute::kFull;
  auto full = AssignLayers(fx.model, fx.par, fx.tr);
  ASSERT_THAT(full, IsOk());
  EXPECT_EQ((*full)[1].recomputed_mtp, 1);
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

// --grad-reduce-dtype bf16 (Megatron --grad-reduce-in-bf16): the 10 buckets of 40M params
// carry 80 MB each = 8 ms on the 10 GB/s fake, half the fp32 160 ms; without overlap all of
// it is exposed.
TEST(StepComposerTest, Bf16GradReduceHalvesTheDpGradSync) {
  DpFixture fx;
  fx.tr.overlap_grad_reduce = false;
  fx.tr.grad_reduce_dtype = DType::kBf16;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->dp_comm_total.value(), IsNearRel(80e-3, 1e-12));
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(80e-3, 1e-12));
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

// FSDP over DP 2, two micro-batches: 4 layers of 1e8 parameters (10 ms forward, 20 ms
// backward), 1 ms embedding and output passes, on the 10 GB/s fake collective.
struct FsdpFixture : DpFixture {
  FsdpFixture() {
    par.fsdp = true;
    tr.global_batch = 4;  // m = 2
    layer = FixedLayer(Milliseconds(10), Milliseconds(20), 1e8);
    for (ComposedEndModule* m : {&embedding, &output}) {
      m->forward_compute = Milliseconds(1);
      m->backward_compute = Milliseconds(1);
    }
  }
};

TEST(StepComposerTest, FsdpExposureIsCommMinusComputePerLayer) {
  FsdpFixture fx;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Per layer: AG of 2e8 B bf16 = 20 ms, RS of 4e8 B fp32 grads = 40 ms.
  // Forward: layer 1's gather behind the 1 ms embedding, layers 2-4 behind 10 ms layers:
  //   (20 − 1) + 3 · (20 − 10) = 49 ms.
  // Backward: a re-gather + RS per layer behind its 20 ms backward: 4 · (60 − 20) = 160 ms.
  double per_mb = 49e-3 + 160e-3;
  EXPECT_THAT(r->breakdown.exposed_fsdp_comm.value(), IsNearRel(2 * per_mb, 1e-9));
  EXPECT_DOUBLE_EQ(r->breakdown.exposed_dp_comm.value(), 0.0);
  // AdamW over the 1/DP shard: this FSDP-only layout runs a PyTorch-native stack (auto:
  // llm-foundry), whose unfused AdamW and clip_grad_norm_ move 96 B per parameter.
  EXPECT_THAT(r->breakdown.optimizer.value(), IsNearRel(2e8 * 96 * 1e-12, 1e-9));
  EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
}

// The FSDP fixture above with a bf16 ReduceScatter (FSDP MixedPrecision reduce_dtype bf16):
// 2e8 B = 20 ms per layer instead of 40. Forward unchanged (49 ms); backward: a re-gather +
// RS per layer behind its 20 ms backward: 4 · (40 − 20) = 80 ms.
TEST(StepComposerTest, FsdpBf16ReduceScatterHalvesTheGradientTraffic) {
  FsdpFixture fx;
  fx.tr.grad_reduce_dtype = DType::kBf16;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->breakdown.exposed_fsdp_comm.value(), IsNearRel(2 * (49e-3 + 80e-3), 1e-9));
  // FSDP's sharded grads stay fp32 (4 B over the 1/DP shard of the 4e8 layer params); the unit
  // being reduced adds its unsharded bf16 flat gradient (FSDP1, auto for this FSDP-only layout;
  // no fp32 copy when reducing in bf16): 2 B over the largest layer's 1e8 parameters.
  EXPECT_THAT(r->memory.stages[0].gradients.value(), IsNearRel(4.0 * 4e8 / 2 + 2.0 * 1e8, 1e-9));
  fx.tr.grad_reduce_dtype = DType::kFp32;
  auto fp32 = fx.Run();
  ASSERT_THAT(fp32, IsOk());
  // With fp32 reduction the flat gradient's fp32 copy is alive too: 2 + 4 B.
  EXPECT_THAT(fp32->memory.stages[0].gradients.value(), IsNearRel(4.0 * 4e8 / 2 + 6.0 * 1e8, 1e-9));
  // Megatron-FSDP reduces from its persistent buffers: nothing more.
  fx.tr.stack = TrainingStack::kMegatron;
  auto megatron = fx.Run();
  ASSERT_THAT(megatron, IsOk());
  EXPECT_THAT(megatron->memory.stages[0].gradients.value(), IsNearRel(4.0 * 4e8 / 2, 1e-9));
}

// FSDP's memory-bound copies per parameter and micro-batch (FsdpCopyBytesPerParam), bf16
// weights (e = 2), group n, m micro-batches (a = (m − 1)/m of them accumulate 3r/n):
//   llm-foundry (FSDP1), r = 4, n = 8, m = 1: forward 6/8; backward 6/8 + 2·2 (flat-gradient
//     cat) + 2 + 4 (cast to fp32) + 2·4 (pre-divide) = 18.75, 1 and 4 kernels; m = 4 adds
//     (3/4)·12/8 = 1.125 and a kernel; r = 2 drops the cast: 0.75 + 4 + 4 = 8.75;
//   torchtitan (FSDP2), r = 4, n = 8, m = 1: forward 10/8 + 2·2 (copy-out) = 5.25; backward the
//     same re-gather plus chunk_cat 2 + 4: 11.25;
//   megatron (Megatron-FSDP's persistent buffers): nothing.
TEST(StepComposerTest, FsdpCopyBytesPerParamByImplementation) {
  const FsdpCopyBytes fsdp1 = FsdpCopyBytesPerParam(FsdpImpl::kFsdp1, 4, 8, 1);
  EXPECT_DOUBLE_EQ(fsdp1.forward, 0.75);
  EXPECT_DOUBLE_EQ(fsdp1.backward, 18.75);
  EXPECT_EQ(fsdp1.forward_launches, 1);
  EXPECT_EQ(fsdp1.backward_launches, 4);
  const FsdpCopyBytes accumulated = FsdpCopyBytesPerParam(FsdpImpl::kFsdp1, 4, 8, 4);
  EXPECT_DOUBLE_EQ(accumulated.backward, 18.75 + 1.125);
  EXPECT_EQ(accumulated.backward_launches, 5);
  EXPECT_DOUBLE_EQ(FsdpCopyBytesPerParam(FsdpImpl::kFsdp1, 2, 8, 1).backward, 8.75);
  const FsdpCopyBytes fsdp2 = FsdpCopyBytesPerParam(FsdpImpl::kFsdp2, 4, 8, 1);
  EXPECT_DOUBLE_EQ(fsdp2.forward, 5.25);
  EXPECT_DOUBLE_EQ(fsdp2.backward, 11.25);
  const FsdpCopyBytes megatron = FsdpCopyBytesPerParam(FsdpImpl::kMegatronFsdp, 4, 8, 1);
  EXPECT_DOUBLE_EQ(megatron.forward + megatron.backward, 0.0);
}

// The FSDP fixture (DP 2, m = 2, 4 layers of 1e8 parameters; the fake memory backend moves
// 1 TB/s): per micro-batch each layer moves 27 B per parameter under both PyTorch stacks
// (FSDP1: 3 + 3 + 4 + 6 + 8 + (1/2)·12/2; FSDP2: 9 + 9 + 6 + 3), so the step gains
// 2 · 4 · 1e8 · 27 B / 1e12 B/s = 21.6 ms of "FSDP copies"; none under Megatron-FSDP.
TEST(StepComposerTest, FsdpCopiesAddToTheStep) {
  for (TrainingStack stack :
       {TrainingStack::kLlmFoundry, TrainingStack::kTorchTitan, TrainingStack::kMegatron}) {
    FsdpFixture fx;
    fx.tr.stack = stack;
    auto r = fx.Run();
    ASSERT_THAT(r, IsOk());
    SCOPED_TRACE(std::string(TrainingStackName(stack)));
    EXPECT_THAT(r->breakdown.fsdp_copies.value(),
                IsNearRel(stack == TrainingStack::kMegatron ? 0.0 : 21.6e-3, 1e-9));
    EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
  }
}

// training.fsdp_impl overrides the stack's implementation: Megatron with torch FSDP2 (Primus,
// --use-torch-fsdp2) gains FSDP2's 21.6 ms; llm-foundry on Megatron-FSDP's buffers none.
TEST(StepComposerTest, FsdpImplOverridesTheStacks) {
  const std::pair<TrainingStack, FsdpImpl> runs[] = {
      {TrainingStack::kMegatron, FsdpImpl::kFsdp2},
      {TrainingStack::kMegatron, FsdpImpl::kFsdp1},
      {TrainingStack::kLlmFoundry, FsdpImpl::kMegatronFsdp}};
  for (const auto& [stack, impl] : runs) {
    FsdpFixture fx;
    fx.tr.stack = stack;
    fx.tr.fsdp_impl = impl;
    auto r = fx.Run();
    ASSERT_THAT(r, IsOk());
    SCOPED_TRACE(std::string(FsdpImplName(impl)));
    EXPECT_THAT(r->breakdown.fsdp_copies.value(),
                IsNearRel(impl == FsdpImpl::kMegatronFsdp ? 0.0 : 21.6e-3, 1e-9));
  }
  TrainingConfig t;
  ParallelConfig p;
  p.fsdp = true;
  p.dp = 8;
  EXPECT_EQ(ResolvedFsdpImpl(t, p), FsdpImpl::kFsdp1);  // auto stack: llm-foundry
  t.stack = TrainingStack::kTorchTitan;
  EXPECT_EQ(ResolvedFsdpImpl(t, p), FsdpImpl::kFsdp2);
  t.stack = TrainingStack::kMegatron;
  EXPECT_EQ(ResolvedFsdpImpl(t, p), FsdpImpl::kMegatronFsdp);
  EXPECT_EQ(FsdpImplName(FsdpImpl::kMegatronFsdp), "megatron-fsdp");
  EXPECT_THAT(ParseFsdpImpl("zero3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown FSDP implementation 'zero3'; accepted: auto, "
                                 "megatron-fsdp, fsdp1, fsdp2")));
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

// ---------------------------------------------------------------------------------------------
// Compute–communication interference: hidden FSDP/DP collectives slow the compute beside them.

// 100 SMs, a collective holds 25 of them (the fake backend places every group in one node).
CommInterferenceModel QuarterOfTheSms(double hbm_bytes_per_s = 0) {
  return {.compute_units = 100, .scale_up_ctas = 25, .scale_out_ctas = 25,
          .ep_dispatch_ctas = 25, .hbm_bandwidth = BytesPerSecond(hbm_bytes_per_s)};
}

// 4 layers of 1e8 parameters, FSDP over DP 2, one micro-batch; per layer AG 20 ms, RS 40 ms
// (see FsdpExposureIsCommMinusComputePerLayer), all hidden under long compute.
struct HiddenFsdpFixture : DpFixture {
  HiddenFsdpFixture() {
    par.fsdp = true;
    layer = FixedLayer(Milliseconds(100), Milliseconds(200), 1e8);
    embedding.forward_compute = Milliseconds(30);
    embedding.backward_compute = Milliseconds(70);
    interference = QuarterOfTheSms();
  }
};

TEST(StepComposerTest, HiddenFsdpCollectivesCostTheComputeTheySlow) {
  HiddenFsdpFixture fx;
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // Forward: layer 1's 20 ms gather under the 30 ms embedding, layers 2-4 under 100 ms
  // layers; each hidden, each costing 0.25 · 20 ms = 5 ms: 4 · 5 = 20 ms.
  // Backward: AG + RS = 60 ms under each 200 ms backward: 4 · 0.25 · 60 ms = 60 ms.
  EXPECT_THAT(r->breakdown.exposed_fsdp_comm.value(), IsNearRel(80e-3, 1e-9));
  EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
  fx.interference = {};
  auto free = fx.Run();
  ASSERT_THAT(free, IsOk());
  EXPECT_DOUBLE_EQ(free->breakdown.exposed_fsdp_comm.value(), 0.0);
}

TEST(StepComposerTest, MemoryBoundKernelsLoseTheHbmShareOfTheCollective) {
  HiddenFsdpFixture fx;
  fx.layer.forward_memory_bound = Milliseconds(50);  // half the layer forward
  // 100 GB/s of achievable HBM. The 20 ms AG of 2e8 B over 2 ranks copies 1e8 B each way:
  // 2 · 1e8 B / 20 ms = 10 GB/s = 10 % of HBM. Layer forward window: (50 · 0.25 + 50 · 0.1)
  // / 100 = 0.175 of its rate, so a 20 ms gather behind a layer costs 3.5 ms (layers 2-4);
  // layer 1's behind the embedding (all GEMM) still 5 ms. Backward as before: 60 ms.
  fx.interference = QuarterOfTheSms(1e11);
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->breakdown.exposed_fsdp_comm.value(), IsNearRel(5e-3 + 3 * 3.5e-3 + 60e-3, 1e-9));
}

TEST(StepComposerTest, HiddenDpBucketsCostTheBackwardTheySlow) {
  DpFixture fx;
  fx.layer.backward_compute = Seconds(1);
  fx.interference = QuarterOfTheSms();
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // 10 buckets of 16 ms, ready every 0.4 s of the 4 s backward: buckets 1-9 run entirely
  // beside it (9 · 16 ms = 144 ms overlapped, costing 0.25 · 144 = 36 ms); the last starts at
  // the backward's end (16 ms, exposed anyway). The step ends at max(end + 36, end + 16).
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(36e-3, 1e-9));
  // Without overlap_grad_reduce nothing runs beside compute: the same 160 ms as without.
  fx.tr.overlap_grad_reduce = false;
  auto serial = fx.Run();
  ASSERT_THAT(serial, IsOk());
  EXPECT_THAT(serial->breakdown.exposed_dp_comm.value(), IsNearRel(160e-3, 1e-12));
}

TEST(StepComposerTest, HiddenParamGathersCostTheNextForward) {
  DpFixture fx;
  fx.layer.forward_compute = Milliseconds(100);
  fx.layer.backward_compute = Seconds(1);
  fx.par.distributed_optimizer = true;
  fx.interference = QuarterOfTheSms();
  auto r = fx.Run();
  ASSERT_THAT(r, IsOk());
  // ReduceScatter buckets of 160 MB = 16 ms as the AllReduces above: 36 ms. Param AllGathers
  // of 80 MB = 8 ms per bucket: the first forward waits for one (8 ms); the other 9 (72 ms)
  // run under the 400 ms forward and cost 0.25 · 72 = 18 ms.
  EXPECT_THAT(r->breakdown.exposed_dp_comm.value(), IsNearRel(36e-3 + 8e-3 + 18e-3, 1e-9));
}

// Invariants: interference never makes a step faster, and a model that takes nothing (or a
// step with no communication) is exactly the interference-free step.
TEST(StepComposerTest, InterferenceNeverMakesAStepFaster) {
  struct Case {
    bool fsdp, distributed_optimizer;
    int64_t pp;
    Seconds backward;
  };
  const Case cases[] = {{false, false, 1, Milliseconds(10)}, {false, false, 1, Seconds(1)},
                        {false, true, 1, Seconds(1)},        {true, false, 1, Milliseconds(20)},
                        {true, false, 2, Milliseconds(500)}, {false, true, 2, Milliseconds(40)}};
  for (const Case& c : cases) {
    DpFixture fx;
    fx.par.fsdp = c.fsdp;
    fx.par.distributed_optimizer = c.distributed_optimizer;
    fx.par.pp = c.pp;
    fx.tr.global_batch = 8;
    fx.layer.backward_compute = c.backward;
    fx.layer.backward_memory_bound = c.backward * 0.3;
    auto free = fx.Run();
    ASSERT_THAT(free, IsOk());
    fx.interference = {.compute_units = 100, .hbm_bandwidth = BytesPerSecond(0)};
    auto zero = fx.Run();
    ASSERT_THAT(zero, IsOk());
    EXPECT_DOUBLE_EQ(zero->step_time.value(), free->step_time.value());
    double previous = free->step_time.value();
    for (int64_t ctas : {5, 25, 60}) {
      fx.interference = {.compute_units = 100, .scale_up_ctas = ctas, .scale_out_ctas = ctas,
                         .ep_dispatch_ctas = ctas, .hbm_bandwidth = BytesPerSecond(1e11)};
      auto r = fx.Run();
      ASSERT_THAT(r, IsOk());
      EXPECT_GE(r->step_time.value(), previous * (1 - 1e-12))
          << "fsdp " << c.fsdp << " pp " << c.pp << " ctas " << ctas;
      EXPECT_THAT(r->breakdown.Total().value(), IsNearRel(r->step_time.value(), 1e-12));
      previous = r->step_time.value();
    }
  }
  // No data parallelism: no collective, nothing to interfere.
  Fixture single;
  single.model.num_layers = 8;
  single.par.pp = 4;
  single.tr.global_batch = 8;
  auto plain = single.Run();
  single.interference = QuarterOfTheSms(1e11);
  auto with = single.Run();
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(with, IsOk());
  EXPECT_DOUBLE_EQ(with->step_time.value(), plain->step_time.value());
}

}  // namespace
}  // namespace projector
