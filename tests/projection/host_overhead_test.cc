#include "projection/host_overhead.h"

#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace projector {
namespace {

constexpr double kUs = 1e-6;

double Us(Seconds s) { return s.value() / kUs; }

IssuedWork Work(double host_us, double gpu_us) {
  return {.host = Microseconds(host_us), .gpu = Microseconds(gpu_us)};
}

TEST(DrainedMakespanTest, EmptySequenceTakesNoTime) {
  EXPECT_EQ(DrainedMakespan({}).value(), 0.0);
}

// GPU-bound: the host issues every op before the GPU needs it; only the first op's issue time
// is exposed: 10 + 3·100 = 310 µs.
TEST(DrainedMakespanTest, GpuBoundSequenceExposesOnlyTheFirstIssue) {
  EXPECT_NEAR(Us(DrainedMakespan({Work(10, 100), Work(10, 100), Work(10, 100)})), 310.0, 1e-9);
}

// Host-bound: the GPU finishes each op before the next is issued; only the last op's GPU time
// follows the host: 3·50 + 5 = 155 µs.
TEST(DrainedMakespanTest, HostBoundSequenceExposesOnlyTheLastKernel) {
  EXPECT_NEAR(Us(DrainedMakespan({Work(50, 5), Work(50, 5), Work(50, 5)})), 155.0, 1e-9);
}

// Mixed, by the recurrence F_i = max(F_{i-1}, H_i) + g_i:
//   op1 issued 10, F = 10 + 200 = 210; op2 issued 60, F = 210 + 5 = 215;
//   op3 issued 360, F = 360 + 5 = 365.
// Max-plus form: max(10 + 210, 60 + 10, 360 + 5) = 365.
TEST(DrainedMakespanTest, MixedSequenceFollowsTheRecurrence) {
  EXPECT_NEAR(Us(DrainedMakespan({Work(10, 200), Work(50, 5), Work(300, 5)})), 365.0, 1e-9);
}

// Bounds: max(Σh, Σg) <= makespan <= Σh + Σg, for sequences of each kind.
TEST(DrainedMakespanTest, LiesBetweenTheMaxAndTheSumOfHostAndGpu) {
  const std::vector<std::vector<IssuedWork>> cases = {
      {Work(10, 100), Work(10, 100)},
      {Work(50, 5), Work(50, 5), Work(1, 300)},
      {Work(0, 7), Work(13, 0), Work(4, 4), Work(90, 2)}};
  for (const auto& seq : cases) {
    double h = 0, g = 0;
    for (const IssuedWork& w : seq) {
      h += Us(w.host);
      g += Us(w.gpu);
    }
    const double t = Us(DrainedMakespan(seq));
    EXPECT_GE(t, std::max(h, g) - 1e-9);
    EXPECT_LE(t, h + g + 1e-9);
  }
}

TEST(MoeForwardSyncsHostTest, OnlyPaddedCapacityAvoidsTheSync) {
  TrainingConfig t;
  EXPECT_TRUE(MoeForwardSyncsHost(t));  // dropless
  t.moe_capacity_factor = 1.0;
  EXPECT_TRUE(MoeForwardSyncsHost(t));  // dropped but not padded: counts vary
  t.moe_pad_to_capacity = true;
  EXPECT_FALSE(MoeForwardSyncsHost(t));
}

Op MakeOp(std::string_view name, OpKind kind, OpPhase phase, double gpu_us, int64_t repeat = 1,
          int64_t fanout = 1) {
  Op op;
  op.name = name;
  op.module = "moe";
  op.kind = kind;
  op.phase = phase;
  op.repeat = repeat;
  op.host_fanout = fanout;
  op.time = Microseconds(gpu_us);
  return op;
}

TEST(HostDispatchesTest, CountsRepeatsKernelsAndFanout) {
  Op gemm = MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kForward, 1, /*repeat=*/1,
                   /*fanout=*/16);
  EXPECT_EQ(HostDispatches(gemm), 16);
  Op legacy = MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kForward, 1, /*repeat=*/4);
  EXPECT_EQ(HostDispatches(legacy), 4);
  Op eager = MakeOp("rms_norm", OpKind::kMemory, OpPhase::kForward, 1, /*repeat=*/2);
  eager.memory.launches = 8;
  EXPECT_EQ(HostDispatches(eager), 16);
}

// The measured relative host cost of one call (tools/gpu_host_probe.py): a forward GEMM is the
// unit, the rest as measured; a recomputed op is a forward call, a collective 1.
TEST(HostCallWeightTest, BackwardCallsCostMoreThanForwardOnes) {
  EXPECT_EQ(HostCallWeight(OpKind::kGemm, OpPhase::kForward), 1.0);
  EXPECT_EQ(HostCallWeight(OpKind::kGemm, OpPhase::kBackwardDgrad), 1.57);
  EXPECT_EQ(HostCallWeight(OpKind::kGemm, OpPhase::kBackwardWgrad), 1.57);
  EXPECT_EQ(HostCallWeight(OpKind::kGemm, OpPhase::kRecompute), 1.0);
  EXPECT_EQ(HostCallWeight(OpKind::kMemory, OpPhase::kForward), 0.39);
  EXPECT_EQ(HostCallWeight(OpKind::kMemory, OpPhase::kBackwardDgrad), 0.92);
  EXPECT_EQ(HostCallWeight(OpKind::kAttention, OpPhase::kForward), 1.56);
  EXPECT_EQ(HostCallWeight(OpKind::kAttention, OpPhase::kBackwardDgrad), 5.24);
  EXPECT_EQ(HostCallWeight(OpKind::kCollective, OpPhase::kBackwardDgrad), 1.0);
}

// Equivalents: repeat × (weight × calls + the module's Python). A TE expert GEMM of 16 experts
// in backward: 16 × 1.57 = 25.12; its forward with the module's 1.7: 16 + 1.7 = 17.7; a
// two-launch element-wise op repeated 3 times in forward: 3 × 2 × 0.39 = 2.34.
TEST(HostCallWeightTest, EquivalentsWeightTheCallsNotTheModulePython) {
  Op dgrad = MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kBackwardDgrad, 20, 1, 16);
  EXPECT_NEAR(HostDispatchEquivalents(dgrad), 25.12, 1e-12);
  Op forward = MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kForward, 10, 1, 16);
  forward.host_extra = 1.7;
  EXPECT_NEAR(HostDispatchEquivalents(forward), 17.7, 1e-12);
  EXPECT_NEAR(HostDispatches(forward), 17.7, 1e-12);
  Op eager = MakeOp("norm", OpKind::kMemory, OpPhase::kForward, 5, 3);
  eager.memory.launches = 2;
  EXPECT_NEAR(HostDispatchEquivalents(eager), 2.34, 1e-12);
  EXPECT_EQ(HostDispatches(eager), 6);
}

// A MoE layer with one attention op (400 µs GPU) and the MoE ops router (5 µs), permute (5),
// expert GEMM (10, 16 experts' dispatches) and unpermute (5), in forward; one backward op per
// module. Host cost 10 µs per dispatch-equivalent, each call weighted by HostCallWeight: a
// forward GEMM call 10 µs, an element-wise one 3.9, the attention forward 15.6 and backward
// 52.4, a backward GEMM call 15.7.
struct ToyHostLayer {
  LayerProfile layer;
  OpList comm;
  ToyHostLayer() {
    layer.is_moe = true;
    ModuleProfile attention;
    attention.module = "attention";
    attention.ops.push_back(MakeOp("attention_core", OpKind::kAttention, OpPhase::kForward, 400));
    attention.ops.push_back(
        MakeOp("attention_core", OpKind::kAttention, OpPhase::kBackwardDgrad, 800));
    ModuleProfile moe;
    moe.module = "moe";
    moe.ops.push_back(MakeOp("router", OpKind::kGemm, OpPhase::kForward, 5));
    moe.ops.push_back(MakeOp("permute", OpKind::kMemory, OpPhase::kForward, 5));
    moe.ops.push_back(MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kForward, 10, 1, 16));
    moe.ops.push_back(MakeOp("unpermute", OpKind::kMemory, OpPhase::kForward, 5));
    moe.ops.push_back(MakeOp("expert_fc1", OpKind::kGemm, OpPhase::kBackwardDgrad, 20, 1, 16));
    layer.modules = {attention, moe};
  }
  LayerHostInput Input() const {
    return {.layer = layer,
            .comm_ops = comm,
            .gpu_forward = Microseconds(425),
            .gpu_backward = Microseconds(820),
            .gpu_recompute = Seconds(0),
            .forward_comm = Seconds(0)};
  }
};

// Dropless: after the sync (past the permutation) the host issues expert_fc1 (160 µs host,
// 10 GPU), unpermute (3.9, 5), attention (15.6, 400), router (10, 5), permute (3.9, 5), after
// an empty communication item (0, 0). Issue times 160, 163.9, 179.5, 189.5, 193.4; finishes
// 170, 175, 579.5, 584.5, 589.5: makespan 589.5 µs against 425 µs of GPU work, 164.5 exposed.
// Backward: 16 GEMM calls at 15.7 and the attention's 52.4, 303.6 µs host against 820 µs GPU:
// nothing exposed.
TEST(LayerHostExposureTest, DroplessMoeForwardDrainsAtItsSync) {
  ToyHostLayer toy;
  TrainingConfig t;
  HostExposure e = LayerHostExposure(toy.Input(), {.per_dispatch = Microseconds(10)}, t);
  EXPECT_NEAR(Us(e.forward), 164.5, 1e-6);
  EXPECT_EQ(e.backward.value(), 0.0);
}

// Padded to capacity: no sync, the host runs ahead: 19.34 forward dispatch-equivalents, 193.4
// µs against 425 µs: nothing exposed. A slower host (30 µs each: 580.2 µs) exposes 155.2 µs.
TEST(LayerHostExposureTest, PaddedMoeHidesTheHostBehindItsGpuWork) {
  ToyHostLayer toy;
  TrainingConfig t;
  t.moe_capacity_factor = 1.0;
  t.moe_pad_to_capacity = true;
  EXPECT_EQ(LayerHostExposure(toy.Input(), {.per_dispatch = Microseconds(10)}, t).forward.value(),
            0.0);
  EXPECT_NEAR(Us(LayerHostExposure(toy.Input(), {.per_dispatch = Microseconds(30)}, t).forward),
              155.2, 1e-6);
}

TEST(LayerHostExposureTest, CudaGraphsAndAnUnmodelledHostCostNothing) {
  ToyHostLayer toy;
  TrainingConfig t;
  HostExposure graphs =
      LayerHostExposure(toy.Input(), {.per_dispatch = Microseconds(100), .cuda_graphs = true}, t);
  HostExposure none = LayerHostExposure(toy.Input(), {}, t);
  for (const HostExposure& e : {graphs, none}) {
    EXPECT_EQ(e.forward.value() + e.backward.value() + e.recompute.value(), 0.0);
  }
}

// The sync never makes the host cheaper than running ahead would: exposure with the sync >=
// exposure without it, for every host speed.
TEST(LayerHostExposureTest, SyncNeverExposesLessThanRunningAhead) {
  ToyHostLayer toy;
  TrainingConfig dropless, padded;
  padded.moe_capacity_factor = 1.0;
  padded.moe_pad_to_capacity = true;
  for (double us : {1.0, 5.0, 10.0, 20.0, 40.0, 80.0}) {
    const HostCostModel host{.per_dispatch = Microseconds(us)};
    EXPECT_GE(LayerHostExposure(toy.Input(), host, dropless).forward.value(),
              LayerHostExposure(toy.Input(), host, padded).forward.value() - 1e-15)
        << us << " us per dispatch";
  }
}

}  // namespace
}  // namespace projector
