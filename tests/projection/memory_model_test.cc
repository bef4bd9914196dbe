#include "projection/memory_model.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;

StageMemoryInput OneBillionParams() {
  StageMemoryInput in;
  in.dense_parameters = 1e9;
  in.activations_per_micro_batch = Gibibytes(1);
  in.in_flight_chunk_micro_batches = 4;
  in.largest_layer_parameters = 1e8;
  return in;
}

TEST(MemoryModelTest, PlainDataParallelHolds18BytesPerParam) {
  MemoryFootprint m = EstimateMemory({OneBillionParams()}, {.dense_shard = 8,
                                                            .hbm_capacity = Gigabytes(192)});
  const StageMemory& s = m.stages[0];
  EXPECT_DOUBLE_EQ(s.weights.value(), 2e9);
  EXPECT_DOUBLE_EQ(s.gradients.value(), 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer_state.value(), 12e9);
  EXPECT_DOUBLE_EQ(s.activations.value(), Gibibytes(4).value());  // 4 in flight × 1 GiB
  double live = 18e9 + Gibibytes(4).value();
  EXPECT_THAT(s.workspace.value(), IsNearRel(Gibibytes(2).value() + 0.05 * live, 1e-12));
  EXPECT_THAT(s.total.value(), IsNearRel(live + s.workspace.value(), 1e-12));
  EXPECT_TRUE(m.fits);
}

TEST(MemoryModelTest, DistributedOptimizerShardsOnlyTheOptimizerState) {
  // Megatron distributed optimizer: 6 + 12/d bytes per parameter.
  MemoryFootprint m = EstimateMemory(
      {OneBillionParams()},
      {.distributed_optimizer = true, .dense_shard = 8, .hbm_capacity = Gigabytes(192)});
  const StageMemory& s = m.stages[0];
  EXPECT_DOUBLE_EQ(s.weights.value(), 2e9);
  EXPECT_DOUBLE_EQ(s.gradients.value(), 4e9);
  EXPECT_DOUBLE_EQ(s.optimizer_state.value(), 12e9 / 8);
}

TEST(MemoryModelTest, Bf16GradReduceHalvesTheMainGradBuffer) {
  // Megatron --grad-reduce-in-bf16: the main-grad buffer holds bf16, 2 + 2 + 12/d B/param.
  MemoryFootprint m = EstimateMemory({OneBillionParams()}, {.distributed_optimizer = true,
                                                            .dense_shard = 8,
                                                            .grad_bytes_per_param = 2.0,
                                                            .hbm_capacity = Gigabytes(192)});
  EXPECT_DOUBLE_EQ(m.stages[0].gradients.value(), 2e9);
  EXPECT_DOUBLE_EQ(m.stages[0].optimizer_state.value(), 12e9 / 8);
}

TEST(MemoryModelTest, FsdpShardsEverythingAndHoldsTwoGatheredLayers) {
  StageMemoryInput in = OneBillionParams();
  in.expert_parameters = 2e9;
  MemoryFootprint m = EstimateMemory(
      {in}, {.fsdp = true, .dense_shard = 8, .expert_shard = 2, .hbm_capacity = Gigabytes(192)});
  const StageMemory& s = m.stages[0];
  double sharded = 1e9 / 8 + 2e9 / 2;
  // No bf16 copy of the shard (the fp32 shard is the master copy in the 12 B optimizer
  // state): only the two gathered 1e8-parameter layers in bf16.
  EXPECT_DOUBLE_EQ(s.weights.value(), 2 * 1e8 * 2);
  EXPECT_DOUBLE_EQ(s.gradients.value(), 4 * sharded);
  EXPECT_DOUBLE_EQ(s.optimizer_state.value(), 12 * sharded);
}

// Two stages of 1e9 and 3e9 parameters (a split of 4e9), plain DP: 18 B each, 72e9 B summed;
// any split of them over 2 stages peaks at least at the mean, 36e9 B, with its 5% fragmentation
// and the fixed 2 GiB: 2 GiB + 37.8e9 B. The uneven split's own peak (54e9 B of state on stage
// 1, plus its activations) is above it, and so is the even split's. Under FSDP only the sharded
// optimizer state counts (the gathered layers depend on the largest layer of each stage).
TEST(MemoryModelTest, PeakLowerBoundOverSplitsIsTheMeanParameterState) {
  StageMemoryInput light = OneBillionParams(), heavy = OneBillionParams();
  heavy.dense_parameters = 3e9;
  const MemoryModelConfig plain{.dense_shard = 8, .hbm_capacity = Gigabytes(192)};
  MemoryFootprint uneven = EstimateMemory({light, heavy}, plain);
  Bytes sum;
  for (const StageMemory& s : uneven.stages) sum += SplitInvariantStateBytes(s, false);
  EXPECT_DOUBLE_EQ(sum.value(), 72e9);
  const Bytes bound = PeakLowerBoundOverSplits(sum, 2);
  EXPECT_THAT(bound.value(), IsNearRel(Gibibytes(2).value() + 1.05 * 36e9, 1e-12));
  StageMemoryInput even = OneBillionParams();
  even.dense_parameters = 2e9;
  EXPECT_GT(uneven.peak, bound);
  EXPECT_GT(EstimateMemory({even, even}, plain).peak, bound);

  const MemoryModelConfig fsdp{.fsdp = true, .dense_shard = 8, .hbm_capacity = Gigabytes(192)};
  MemoryFootprint sharded = EstimateMemory({light, heavy}, fsdp);
  EXPECT_DOUBLE_EQ(SplitInvariantStateBytes(sharded.stages[1], true).value(), 12 * 3e9 / 8);
}

TEST(MemoryModelTest, DeferredWeightGradsKeepTheirWorkingSet) {
  // ZB-H1 rank 2 of 4 under full recompute, right after a B: 1 micro-batch before its B (its
  // layer inputs, 1 GiB) and 3 past B waiting for W, each keeping the rebuilt 5 GiB.
  StageMemoryInput in = OneBillionParams();
  in.deferred_weight_grad_micro_batches = 3;
  in.deferred_weight_grad_bytes = Gibibytes(5);
  MemoryFootprint m = EstimateMemory({in}, {.dense_shard = 8, .hbm_capacity = Gigabytes(192)});
  EXPECT_DOUBLE_EQ(m.stages[0].activations.value(), Gibibytes(1 + 3 * 5).value());
  EXPECT_EQ(m.stages[0].in_flight_micro_batches, 4);
}

TEST(MemoryModelTest, InterleavedActivationsCountChunkMicroBatches) {
  StageMemoryInput in = OneBillionParams();
  in.in_flight_chunk_micro_batches = 6;  // units of one chunk = 1/vpp of the stage
  MemoryFootprint m = EstimateMemory({in}, {.vpp = 2, .hbm_capacity = Gigabytes(192)});
  EXPECT_DOUBLE_EQ(m.stages[0].activations.value(), Gibibytes(3).value());
}

// The loss's working set sits on top of every stored micro-batch; the train metrics' after the
// micro-batch's backward, when its own activations (1 GiB of the 4 in flight) are freed. So a
// 1.5 GiB after-backward set stays under the 4 GiB + 0.5 GiB transient peak, and a 5 GiB one
// makes the peak 3 + 5 GiB.
TEST(MemoryModelTest, AfterBackwardWorkingSetReplacesTheMicroBatchItFollows) {
  StageMemoryInput in = OneBillionParams();
  in.transient_working_set = Gibibytes(0.5);
  in.after_backward_working_set = Gibibytes(1.5);
  MemoryFootprint m = EstimateMemory({in}, {.dense_shard = 8, .hbm_capacity = Gigabytes(192)});
  EXPECT_DOUBLE_EQ(m.stages[0].activations.value(), Gibibytes(4.5).value());
  in.after_backward_working_set = Gibibytes(5);
  m = EstimateMemory({in}, {.dense_shard = 8, .hbm_capacity = Gigabytes(192)});
  EXPECT_DOUBLE_EQ(m.stages[0].activations.value(), Gibibytes(3 + 5).value());
}

TEST(MemoryModelTest, PeakIsTheLargestStageAndFlagsWhatDoesNotFit) {
  StageMemoryInput small = OneBillionParams();
  StageMemoryInput big = OneBillionParams();
  big.in_flight_chunk_micro_batches = 40;
  MemoryFootprint m = EstimateMemory({small, big}, {.hbm_capacity = Gigabytes(40)});
  EXPECT_EQ(m.peak_stage, 1);
  EXPECT_DOUBLE_EQ(m.peak.value(), m.stages[1].total.value());
  EXPECT_FALSE(m.fits);
  MemoryFootprint roomy = EstimateMemory({small, big}, {.hbm_capacity = Gigabytes(1000)});
  EXPECT_TRUE(roomy.fits);
}

}  // namespace
}  // namespace projector
