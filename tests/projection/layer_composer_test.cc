#include "projection/layer_composer.h"

#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/projection/projection_test_util.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FakeCollectiveBackend;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;

constexpr double kSecondsPerWireByte = 1e-10;  // FakeCollectiveBackend default: 10 GB/s

Op TimedOp(std::string_view module, OpKind kind, OpPhase phase, Seconds t) {
  Op op;
  op.name = "op";
  op.module = module;
  op.kind = kind;
  op.phase = phase;
  op.time = t;
  op.clock_scaled_time = t;
  return op;
}

ModuleProfile Module(std::string_view name, Seconds fwd_gemm, Seconds fwd_attn, Seconds dgrad,
                     Seconds wgrad, Seconds bwd_attn) {
  ModuleProfile m;
  m.module = name;
  m.ops.push_back(TimedOp(name, OpKind::kGemm, OpPhase::kForward, fwd_gemm));
  if (fwd_attn.value() > 0) {
    m.ops.push_back(TimedOp(name, OpKind::kAttention, OpPhase::kForward, fwd_attn));
    m.ops.push_back(TimedOp(name, OpKind::kAttention, OpPhase::kBackwardDgrad, bwd_attn));
  }
  m.ops.push_back(TimedOp(name, OpKind::kGemm, OpPhase::kBackwardDgrad, dgrad));
  m.ops.push_back(TimedOp(name, OpKind::kGemm, OpPhase::kBackwardWgrad, wgrad));
  return m;
}

// Attention: 1 ms GEMM + 2 ms kernel forward; 1 + 1 ms GEMMs + 4 ms kernel backward.
// MLP (or MoE): 3 ms forward, 3 + 3 ms backward.
LayerProfile ToyLayer(bool is_moe, Seconds attention_kernel = Milliseconds(2)) {
  LayerProfile l;
  l.is_moe = is_moe;
  l.modules.push_back(Module("attention", Milliseconds(1), attention_kernel, Milliseconds(1),
                             Milliseconds(1), attention_kernel * 2.0));
  l.modules.push_back(Module(is_moe ? "moe" : "mlp", Milliseconds(3), Seconds(0),
                             Milliseconds(3), Milliseconds(3), Seconds(0)));
  return l;
}

struct Fixture {
  ModelSpec model = projector::testing::ToyModel();
  ParallelConfig par;
  TrainingConfig tr;
  FakeCollectiveBackend collective;
  Fixture() {
    tr.seq_len = 512;
    tr.micro_batch = 1;
  }
  LayerCompositionContext Ctx(bool overlap = false) {
    return {.model = model, .parallel = par, .training = tr, .recompute = tr.recompute,
            .tp_comm_overlap = overlap};
  }
  // [micro_batch · seq / CP, hidden] bf16.
  double ActBytes() const {
    return static_cast<double>(tr.micro_batch * tr.seq_len / par.cp * model.hidden_size) * 2.0;
  }
};

TEST(LayerComposerTest, NoParallelismAddsNoCommunication) {
  Fixture fx;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  EXPECT_THAT(l->Forward().value(), IsNearRel(6e-3, 1e-12));
  EXPECT_THAT(l->Backward().value(), IsNearRel(12e-3, 1e-12));
  EXPECT_TRUE(l->comm_ops.empty());
}

TEST(LayerComposerTest, FullyExposedTpAllReduceAddsExactlyItsTime) {
  Fixture fx;
  fx.par.tp = 2;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // Forward: two AllReduces of [tokens, h] (after attention, after MLP), nothing hides them.
  Seconds ar(fx.ActBytes() * kSecondsPerWireByte);
  EXPECT_THAT(l->forward_comm.tp.value(), IsNearRel(2 * ar.value(), 1e-12));
  EXPECT_THAT((l->Forward() - l->forward_compute).value(), IsNearRel(2 * ar.value(), 1e-12));
  // Backward: the input-grad AllReduces run async under the (much longer) wgrad GEMMs.
  EXPECT_DOUBLE_EQ(l->backward_comm.tp.value(), 0.0);
  EXPECT_EQ(l->comm_ops.size(), 4u);
}

TEST(LayerComposerTest, SequenceParallelUsesGatherAndScatterPairs) {
  Fixture fx;
  fx.par.tp = 4;
  fx.par.sequence_parallel = true;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  int ag = 0, rs = 0, ar = 0;
  for (const Op& op : l->comm_ops) {
    ag += op.collective.kind == CollectiveKind::kAllGather;
    rs += op.collective.kind == CollectiveKind::kReduceScatter;
    ar += op.collective.kind == CollectiveKind::kAllReduce;
    EXPECT_EQ(op.collective.group, fx.par.TpGroup());
  }
  // Per block: fwd AG + RS; bwd AG (grad of RS) + AG (wgrad input) + RS (input grad).
  EXPECT_EQ(ag, 6);
  EXPECT_EQ(rs, 4);
  EXPECT_EQ(ar, 0);
  Seconds one(fx.ActBytes() * kSecondsPerWireByte);
  EXPECT_THAT(l->forward_comm.tp.value(), IsNearRel(4 * one.value(), 1e-12));
  // Only the AllGather of the output grad is exposed in backward (one per block).
  EXPECT_THAT(l->backward_comm.tp.value(), IsNearRel(2 * one.value(), 1e-12));
}

TEST(LayerComposerTest, TpCommOverlapHidesForwardCollectivesBehindGemms) {
  Fixture fx;
  fx.par.tp = 2;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(/*overlap=*/true), fx.collective);
  ASSERT_THAT(l, IsOk());
  EXPECT_DOUBLE_EQ(l->forward_comm.tp.value(), 0.0);
}

TEST(LayerComposerTest, CpRingIsExposedOnlyBeyondTheAttentionKernel) {
  Fixture fx;
  fx.par.cp = 2;
  // K and V blocks: tokens/CP · kv heads · (d_qk + d_v) · 2 B, CP − 1 ring steps.
  double kv = 256.0 * 4 * 128 * 2;
  Seconds ring(kv * kSecondsPerWireByte);
  auto hidden = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(hidden, IsOk());
  EXPECT_DOUBLE_EQ(hidden->forward_comm.cp.value(), 0.0);
  Seconds tiny = Microseconds(1);
  auto exposed = ComposeLayer(ToyLayer(false, tiny), fx.Ctx(), fx.collective);
  ASSERT_THAT(exposed, IsOk());
  EXPECT_THAT(exposed->forward_comm.cp.value(), IsNearRel((ring - tiny).value(), 1e-12));
  // Backward circulates K/V and dK/dV: twice the bytes, against twice the kernel time.
  EXPECT_THAT(exposed->backward_comm.cp.value(),
              IsNearRel((ring * 2.0 - tiny * 2.0).value(), 1e-12));
}

TEST(LayerComposerTest, EpAllToAllIsSizedByTheTokensThisGpuHolds) {
  Fixture fx;
  fx.model = projector::testing::ToyMoeModel();
  fx.par.tp = 2;
  fx.par.sequence_parallel = true;
  fx.par.ep = 4;
  fx.par.dp = 4;
  auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // tokens = 512 / TP(SP) = 256; message = 256 · top_k 2 · hidden 256 · 2 B.
  double msg = 256.0 * 2 * 256 * 2;
  int found = 0;
  for (const Op& op : l->comm_ops) {
    if (op.comm_dim != CommDim::kEp) continue;
    ++found;
    EXPECT_EQ(op.collective.kind, CollectiveKind::kAllToAll);
    EXPECT_DOUBLE_EQ(op.collective.bytes.value(), msg);
    EXPECT_EQ(op.collective.group, fx.par.EpGroup());
    EXPECT_EQ(op.repeat, 2);  // dispatch + combine
  }
  EXPECT_EQ(found, 2);  // forward pair, backward pair
  // Without DeepEP the A2A is exposed: 2 in forward, 2 in backward.
  EXPECT_THAT(l->forward_comm.ep.value(), IsNearRel(2 * msg * kSecondsPerWireByte, 1e-12));
  EXPECT_THAT(l->backward_comm.ep.value(), IsNearRel(2 * msg * kSecondsPerWireByte, 1e-12));
}

TEST(LayerComposerTest, DeepEpUsesPxnAndHidesTheA2aBehindExpertCompute) {
  Fixture fx;
  fx.model = projector::testing::ToyMoeModel();
  fx.par.ep = 4;
  fx.par.dp = 4;
  fx.par.deepep = true;
  auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // 2 · 512 · 2 · 256 · 2 B = 1 MiB at 10 GB/s = 0.1 ms < 3 ms of MoE compute.
  EXPECT_DOUBLE_EQ(l->forward_comm.ep.value(), 0.0);
  EXPECT_EQ(fx.collective.last_algorithm(), CollectiveAlgorithm::kPxn);
  // Slow network: exposed = A2A − MoE compute.
  FakeCollectiveBackend slow(Seconds(1e-8));
  auto s = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(s, IsOk());
  double a2a = 2 * 512.0 * 2 * 256 * 2 * 1e-8;
  EXPECT_THAT(s->forward_comm.ep.value(), IsNearRel(a2a - 3e-3, 1e-12));
}

TEST(LayerComposerTest, FullRecomputeRepeatsForwardCollectives) {
  Fixture fx;
  fx.par.tp = 2;
  fx.tr.recompute = Recompute::kFull;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  EXPECT_THAT(l->recompute_comm.tp.value(), IsNearRel(l->forward_comm.tp.value(), 1e-12));
}

}  // namespace
}  // namespace projector
