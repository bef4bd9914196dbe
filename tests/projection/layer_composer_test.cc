#include "projection/layer_composer.h"

#include <string_view>
#include <tuple>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

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
  CommInterferenceModel interference;  // none unless a test sets it
  LayerCompositionContext Ctx(bool overlap = false) {
    return {.model = model, .parallel = par, .training = tr, .recompute = tr.recompute,
            .tp_comm_overlap = overlap, .interference = interference};
  }
  // [micro_batch · seq / CP, hidden] bf16.
  double ActBytes() const {
    return static_cast<double>(tr.micro_batch * tr.seq_len / par.cp * model.hidden_size) * 2.0;
  }
};

// The toy MoE model on EP4 over DP4 (no TP) with DeepEP's kernels, and the A2A overlap as given.
void UseToyMoeWithDeepEp(Fixture& fx, bool a2a_overlap) {
  fx.model = projector::testing::ToyMoeModel();
  fx.par.ep = 4;
  fx.par.dp = 4;
  fx.par.deepep = true;
  fx.tr.moe_a2a_overlap = a2a_overlap;
}

// The toy MoE model with TP2 + SP and EP4 over DP4.
void UseToyMoe(Fixture& fx) {
  fx.model = projector::testing::ToyMoeModel();
  fx.par.tp = 2;
  fx.par.sequence_parallel = true;
  fx.par.ep = 4;
  fx.par.dp = 4;
}

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

// Zero-bubble schedules run the wgrad GEMMs in a later W pass: the backward collectives hidden
// behind them in 1F1B are exposed in B. Without SP: the input-grad AllReduce of each block (2 ar).
// With SP (TP4): the output-grad AllGather and now also the input-grad ReduceScatter of each
// block (2 + 2 units); the wgrad input's re-gather still hides under the dgrad GEMM.
TEST(LayerComposerTest, DeferredWeightGradsExposeTheBackwardTpCollectives) {
  Fixture fx;
  fx.par.tp = 2;
  LayerCompositionContext ctx = fx.Ctx();
  ctx.weight_grad_deferred = true;
  auto l = ComposeLayer(ToyLayer(false), ctx, fx.collective);
  ASSERT_THAT(l, IsOk());
  Seconds ar(fx.ActBytes() * kSecondsPerWireByte);
  EXPECT_THAT(l->backward_comm.tp.value(), IsNearRel(2 * ar.value(), 1e-12));
  // The weight-gradient share of the backward: the 1 + 3 ms wgrad GEMMs.
  EXPECT_THAT(l->backward_weight_grad.value(), IsNearRel(4e-3, 1e-12));

  fx.par.tp = 4;
  fx.par.sequence_parallel = true;
  LayerCompositionContext sp_ctx = fx.Ctx();
  sp_ctx.weight_grad_deferred = true;
  l = ComposeLayer(ToyLayer(false), sp_ctx, fx.collective);
  ASSERT_THAT(l, IsOk());
  Seconds one(fx.ActBytes() * kSecondsPerWireByte);
  EXPECT_THAT(l->backward_comm.tp.value(), IsNearRel(4 * one.value(), 1e-12));
}

// FP8 with SP: Transformer Engine gathers FP8 inputs and output gradients (1 B per element) and
// reduce-scatters bf16 GEMM outputs. Forward per block: AG at half + RS at full = 1.5 units
// (3 for two blocks); backward exposed: the output-grad AG at half per block (1 unit).
TEST(LayerComposerTest, Fp8SequenceParallelGathersOneBytePerElement) {
  Fixture fx;
  fx.par.tp = 4;
  fx.par.sequence_parallel = true;
  fx.tr.precision = DType::kFp8;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  for (const Op& op : l->comm_ops) {
    const double expected = op.collective.kind == CollectiveKind::kAllGather
                                ? fx.ActBytes() / 2
                                : fx.ActBytes();
    EXPECT_DOUBLE_EQ(op.collective.bytes.value(), expected) << op.name;
  }
  Seconds one(fx.ActBytes() * kSecondsPerWireByte);
  EXPECT_THAT(l->forward_comm.tp.value(), IsNearRel(3 * one.value(), 1e-12));
  EXPECT_THAT(l->backward_comm.tp.value(), IsNearRel(1 * one.value(), 1e-12));
  // Without SP the AllReduce stays in bf16.
  fx.par.sequence_parallel = false;
  auto ar = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(ar, IsOk());
  for (const Op& op : ar->comm_ops) EXPECT_DOUBLE_EQ(op.collective.bytes.value(), fx.ActBytes());
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
  UseToyMoe(fx);
  auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // tokens = 512 / TP(SP) = 256; message = 256 · top_k 2 · hidden 256 · 2 B.
  double msg = 256.0 * 2 * 256 * 2;
  // Dropless: before the dispatch the EP ranks gather their per-expert token counts, 8 experts
  // · 8 B from each of 4 ranks = 256 B, in forward only.
  const double counts = 8.0 * 8 * 4;
  int found = 0;
  for (const Op& op : l->comm_ops) {
    if (op.comm_dim != CommDim::kEp) continue;
    if (op.name == "ep_count_gather") {
      EXPECT_EQ(op.collective.kind, CollectiveKind::kAllGather);
      EXPECT_DOUBLE_EQ(op.collective.bytes.value(), counts);
      EXPECT_EQ(op.phase, OpPhase::kForward);
      continue;
    }
    ++found;
    EXPECT_EQ(op.collective.kind, CollectiveKind::kAllToAll);
    EXPECT_DOUBLE_EQ(op.collective.bytes.value(), msg);
    EXPECT_EQ(op.collective.group, fx.par.EpGroup());
    EXPECT_EQ(op.repeat, 2);  // dispatch + combine
  }
  EXPECT_EQ(found, 2);  // forward pair, backward pair
  // Without DeepEP the A2A is exposed: 2 in forward (after the count gather), 2 in backward.
  EXPECT_THAT(l->forward_comm.ep.value(),
              IsNearRel((2 * msg + counts) * kSecondsPerWireByte, 1e-12));
  EXPECT_THAT(l->backward_comm.ep.value(), IsNearRel(2 * msg * kSecondsPerWireByte, 1e-12));
}

// The busiest EP rank receives and sends back L times the balanced share, and every rank waits
// for it: with moe_imbalance 1.4 the A2A message above is ×1.4; padding to capacity 1.25 gives
// ×1.25 whatever the imbalance.
TEST(LayerComposerTest, EpAllToAllCarriesTheBusiestRanksLoad) {
  for (auto [imbalance, capacity, pad, load] :
       {std::tuple<double, double, bool, double>{1.4, 0.0, false, 1.4},
        {1.4, 1.2, false, 1.2},
        {1.0, 1.25, true, 1.25}}) {
    Fixture fx;
  UseToyMoe(fx);
    fx.tr.moe_imbalance = imbalance;
    fx.tr.moe_capacity_factor = capacity;
    fx.tr.moe_pad_to_capacity = pad;
    auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
    ASSERT_THAT(l, IsOk());
    const double msg = 256.0 * 2 * 256 * 2 * load;
    for (const Op& op : l->comm_ops) {
      if (op.comm_dim == CommDim::kEp && op.collective.kind == CollectiveKind::kAllToAll) {
        EXPECT_DOUBLE_EQ(op.collective.bytes.value(), msg) << imbalance << " " << capacity;
      }
    }
    // The 256 B count gather of the previous test, except padded to capacity (static splits).
    const double counts = pad ? 0.0 : 256.0;
    EXPECT_THAT(l->forward_comm.ep.value(),
                IsNearRel((2 * msg + counts) * kSecondsPerWireByte, 1e-12));
  }
}

// Router padding under fp8 (RunChoices::moe_router_padding, alignment 16): the alltoall
// dispatcher pads each rank's routing map before the dispatch, E·(16 − 1)/2 = 8·7.5 = 60 pairs
// more than its 256·2 = 512, which the All-to-All carries: (512 + 60)·256·2 B. DeepEP pads
// after its dispatch and sends none of them.
TEST(LayerComposerTest, RouterPaddingBeforeTheDispatchIsSent) {
  for (bool deepep : {false, true}) {
    Fixture fx;
    UseToyMoe(fx);
    fx.par.deepep = deepep;
    LayerCompositionContext ctx = fx.Ctx();
    ctx.run.moe_quant_align = 16;
    ctx.run.moe_router_padding = true;
    auto l = ComposeLayer(ToyLayer(true), ctx, fx.collective);
    ASSERT_THAT(l, IsOk());
    const double msg = (deepep ? 512.0 : 572.0) * 256 * 2;
    int found = 0;
    for (const Op& op : l->comm_ops) {
      if (op.comm_dim == CommDim::kEp && op.collective.kind == CollectiveKind::kAllToAll) {
        EXPECT_DOUBLE_EQ(op.collective.bytes.value(), msg) << deepep;
        ++found;
      }
    }
    EXPECT_EQ(found, 2);
  }
}

// DeepEP alone changes the kernels (PXN), not the exposure: its dispatch and combine run in the
// layer's stream, all exposed, 2 · 512 · 2 · 256 · 2 B = 1 MiB at 10 GB/s = 0.1 ms each pass.
// Megatron's A2A overlap hides them behind the other micro-batch's 3 ms of MoE compute, for the
// NCCL All-to-All as for DeepEP.
TEST(LayerComposerTest, DeepEpAloneIsExposedTheA2aOverlapHidesEitherDispatcher) {
  Fixture fx;
  UseToyMoeWithDeepEp(fx, /*a2a_overlap=*/false);
  const double a2a = 2 * 512.0 * 2 * 256 * 2 * kSecondsPerWireByte;
  auto exposed = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
  ASSERT_THAT(exposed, IsOk());
  EXPECT_THAT(exposed->forward_comm.ep.value(), IsNearRel(a2a, 1e-12));
  EXPECT_THAT(exposed->backward_comm.ep.value(), IsNearRel(a2a, 1e-12));
  EXPECT_EQ(fx.collective.last_algorithm(), CollectiveAlgorithm::kPxn);
  for (bool deepep : {false, true}) {
    fx.par.deepep = deepep;
    fx.tr.moe_a2a_overlap = true;
    auto hidden = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
    ASSERT_THAT(hidden, IsOk());
    EXPECT_DOUBLE_EQ(hidden->forward_comm.ep.value(), 0.0) << deepep;
    EXPECT_DOUBLE_EQ(hidden->backward_comm.ep.value(), 0.0) << deepep;
  }
}

// Megatron-Core's shared-expert overlap: the shared experts' fc1 (0.6 ms) and activation
// (0.1 ms) run beside the dispatch, their fc2 (0.3 ms) beside the combine; backward in order.
// At 100 MB/s each A2A of 512 · 2 · 256 · 2 B takes 5.24288 ms, so the forward exposes
// 2 · 5.24288 − 0.7 − 0.3 ms besides the count gather, the backward all of it.
TEST(LayerComposerTest, SharedExpertOverlapHidesEachA2aBehindItsSharedWork) {
  Fixture fx;
  UseToyMoe(fx);
  fx.par.tp = 1;
  fx.par.sequence_parallel = false;
  LayerProfile layer = ToyLayer(true);
  ModuleProfile& moe = layer.modules.back();
  auto add = [&](std::string_view name, OpKind kind, OpPhase phase, double ms) {
    Op op = TimedOp("moe", kind, phase, Milliseconds(ms));
    op.name = name;
    moe.ops.push_back(op);
  };
  add(kSharedExpertFc1, OpKind::kGemm, OpPhase::kForward, 0.6);
  add(kSharedExpertAct, OpKind::kMemory, OpPhase::kForward, 0.1);
  add(kSharedExpertFc2, OpKind::kGemm, OpPhase::kForward, 0.3);
  add(kSharedExpertFc2, OpKind::kGemm, OpPhase::kBackwardDgrad, 0.3);
  FakeCollectiveBackend slow(Seconds(1e-8));
  auto in_order = ComposeLayer(layer, fx.Ctx(), slow);
  fx.tr.moe_shared_expert_overlap = true;
  auto beside = ComposeLayer(layer, fx.Ctx(), slow);
  ASSERT_THAT(in_order, IsOk());
  ASSERT_THAT(beside, IsOk());
  const double one_way = 512.0 * 2 * 256 * 2 * 1e-8;
  EXPECT_THAT(in_order->forward_comm.ep.value() - beside->forward_comm.ep.value(),
              IsNearRel(1.0e-3, 1e-9));
  EXPECT_GT(beside->forward_comm.ep.value(), 2 * one_way - 1.0e-3 - 1e-12);
  EXPECT_DOUBLE_EQ(beside->backward_comm.ep.value(), in_order->backward_comm.ep.value());
  // A fast network hides both A2As: only the count gather is left.
  auto hidden = ComposeLayer(layer, fx.Ctx(), fx.collective);
  ASSERT_THAT(hidden, IsOk());
  EXPECT_LT(hidden->forward_comm.ep.value(), 1e-6);
}

TEST(LayerComposerTest, DeepEpUsesPxnAndTheOverlapHidesTheA2aBehindExpertCompute) {
  Fixture fx;
  UseToyMoeWithDeepEp(fx, /*a2a_overlap=*/true);
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

// DeepEP carries the model's routing to the All-to-All (so the backend can send a row once per
// node) and, under FP8 training with moe_dispatch_fp8 (as DeepSeek trained), dispatches in FP8:
// per direction one A2A of 1 + 4/128 B per element (E4M3 plus an fp32 scale per 128) and one
// BF16 A2A of 2 B: for 512 tokens · top_k 2 · hidden 256 = 262144 elements, 270336 B + 524288 B,
// at 10 GB/s 79.5 us forward and backward. Without it (Megatron-Core's DeepEP path) BF16 both
// ways.
TEST(LayerComposerTest, DeepEpDispatchesInFp8UnderFp8TrainingAndCarriesTheRouting) {
  Fixture fx;
  UseToyMoeWithDeepEp(fx, /*a2a_overlap=*/true);
  fx.model.moe->num_groups = 2;
  fx.model.moe->topk_groups = 1;
  fx.tr.precision = DType::kFp8;
  FakeCollectiveBackend slow(Seconds(1e-8));  // 100 MB/s: nothing hides behind 3 ms
  const double elements = 512.0 * 2 * 256;
  auto bf16_layer = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(bf16_layer, IsOk());
  int bf16_a2as = 0;
  for (const Op& op : bf16_layer->comm_ops) {
    if (op.comm_dim != CommDim::kEp) continue;
    ++bf16_a2as;
    EXPECT_DOUBLE_EQ(op.collective.bytes.value(), elements * 2.0);
    EXPECT_EQ(op.repeat, 2);
  }
  EXPECT_EQ(bf16_a2as, 2);
  fx.tr.moe_dispatch_fp8 = true;
  auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(l, IsOk());
  const double fp8 = elements * (1.0 + 4.0 / 128.0), bf16 = elements * 2.0;
  double sent = 0;
  int found = 0;
  for (const Op& op : l->comm_ops) {
    if (op.comm_dim != CommDim::kEp) continue;
    ++found;
    EXPECT_EQ(op.repeat, 1);
    EXPECT_EQ(op.collective.routing.top_k, fx.model.moe->top_k);
    EXPECT_EQ(op.collective.routing.experts, fx.model.moe->num_experts);
    EXPECT_EQ(op.collective.routing.groups, 2);
    EXPECT_EQ(op.collective.routing.topk_groups, 1);
    sent += op.collective.bytes.value();
  }
  EXPECT_EQ(found, 4);  // dispatch, combine; the combine's and the dispatch's gradients
  EXPECT_DOUBLE_EQ(sent, 2 * (fp8 + bf16));
  EXPECT_THAT(l->forward_comm.ep.value(), IsNearRel((fp8 + bf16) * 1e-8 - 3e-3, 1e-12));
  // BF16 training: one pair of BF16 A2As per direction, still with the routing.
  fx.tr.precision = DType::kBf16;
  auto b = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(b, IsOk());
  for (const Op& op : b->comm_ops) {
    if (op.comm_dim != CommDim::kEp) continue;
    EXPECT_DOUBLE_EQ(op.collective.bytes.value(), bf16);
    EXPECT_EQ(op.repeat, 2);
    EXPECT_EQ(op.collective.routing.top_k, fx.model.moe->top_k);
  }
  // Without DeepEP: a plain All-to-All, no routing.
  fx.par.deepep = false;
  auto plain = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(plain, IsOk());
  for (const Op& op : plain->comm_ops) {
    if (op.comm_dim == CommDim::kEp) {
      EXPECT_EQ(op.collective.routing.top_k, 0);
    }
  }
}

TEST(LayerComposerTest, FullRecomputeRepeatsForwardCollectives) {
  Fixture fx;
  fx.par.tp = 2;
  fx.tr.recompute = Recompute::kFull;
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  EXPECT_THAT(l->recompute_comm.tp.value(), IsNearRel(l->forward_comm.tp.value(), 1e-12));
}

// ---------------------------------------------------------------------------------------------
// Compute–communication interference.

// 100 SMs; a collective inside a node holds 20 of them, one across nodes 10, a DeepEP-style
// dispatch 5; 1 TB/s of achievable HBM.
CommInterferenceModel TestInterference(double hbm_bytes_per_s = 1e12) {
  return {.compute_units = 100, .scale_up_ctas = 20, .scale_out_ctas = 10,
          .ep_dispatch_ctas = 5, .hbm_bandwidth = BytesPerSecond(hbm_bytes_per_s)};
}

CollectiveEstimate Timed(Seconds t, int64_t nodes = 1) {
  CollectiveEstimate e;
  e.time = t;
  e.nodes_spanned = nodes;
  return e;
}

TEST(CommInterferenceTest, SlowdownIsTheCtaShareAndTheHbmTrafficShare) {
  const CommInterferenceModel m = TestInterference();
  const ProcessGroup eight{.size = 8, .stride = 1};
  // 8 MB over 8 ranks in 1 ms: each rank sends and receives 7/8 · 8 MB = 7 MB per direction.
  const Bytes s(8e6);
  CommSlowdown ag = CollectiveSlowdown(
      m, {.kind = CollectiveKind::kAllGather, .bytes = s, .group = eight}, Timed(Milliseconds(1)));
  EXPECT_DOUBLE_EQ(ag.compute, 0.2);  // 20 CTAs / 100 SMs
  // AG copies: read to send + write on receipt = 2 B per wire byte: 2 · 7 MB / 1 ms / 1 TB/s.
  EXPECT_THAT(ag.memory, IsNearRel(0.014, 1e-12));
  // RS also reads the local operand it reduces into: 3 · 7 MB / 1 ms / 1 TB/s.
  CommSlowdown rs = CollectiveSlowdown(
      m, {.kind = CollectiveKind::kReduceScatter, .bytes = s, .group = eight},
      Timed(Milliseconds(1)));
  EXPECT_THAT(rs.memory, IsNearRel(0.021, 1e-12));
  // AR = RS + AG: (3 + 2) · 7 MB / 1 ms / 1 TB/s.
  CommSlowdown ar = CollectiveSlowdown(
      m, {.kind = CollectiveKind::kAllReduce, .bytes = s, .group = eight}, Timed(Milliseconds(1)));
  EXPECT_THAT(ar.memory, IsNearRel(0.035, 1e-12));
  // Across nodes: the scale-out channel count; a DeepEP-style dispatch: its own SM budget.
  EXPECT_DOUBLE_EQ(CollectiveSlowdown(m, {.kind = CollectiveKind::kAllGather, .bytes = s,
                                          .group = eight},
                                      Timed(Milliseconds(1), 2))
                       .compute,
                   0.1);
  EXPECT_DOUBLE_EQ(CollectiveSlowdown(m, {.kind = CollectiveKind::kAllToAll, .bytes = s,
                                          .group = eight},
                                      Timed(Milliseconds(1), 2), /*ep_dispatch=*/true)
                       .compute,
                   0.05);
  // Faster than HBM can feed it: capped at the whole bandwidth.
  EXPECT_DOUBLE_EQ(CollectiveSlowdown(m, {.kind = CollectiveKind::kAllReduce, .bytes = s,
                                          .group = eight},
                                      Timed(Microseconds(1)))
                       .memory,
                   1.0);
  // No time, a group of one, or no model: nothing taken.
  CommSlowdown none = CollectiveSlowdown(
      m, {.kind = CollectiveKind::kAllGather, .bytes = s, .group = eight}, Timed(Seconds(0)));
  EXPECT_DOUBLE_EQ(none.compute + none.memory, 0.0);
  none = CollectiveSlowdown(m, {.kind = CollectiveKind::kAllGather, .bytes = s, .group = {}},
                            Timed(Milliseconds(1)));
  EXPECT_DOUBLE_EQ(none.compute + none.memory, 0.0);
  none = CollectiveSlowdown({}, {.kind = CollectiveKind::kAllGather, .bytes = s, .group = eight},
                            Timed(Milliseconds(1)));
  EXPECT_DOUBLE_EQ(none.compute + none.memory, 0.0);
}

TEST(CommInterferenceTest, ModelComesFromTheHardwareProfile) {
  HardwareProfile hw = projector::testing::ToyHardware();
  hw.gpu.compute_units = 132;
  hw.gpu.hbm_bandwidth = TerabytesPerSecond(3);
  hw.gpu.hbm_efficiency = 0.9;
  EXPECT_DOUBLE_EQ(MakeCommInterferenceModel(hw).hbm_bandwidth.value(), 0.0)
      << "no comm_interference section: no HBM contention either";
  hw.comm_interference = {.scale_up_ctas = 32, .scale_out_ctas = 16, .ep_dispatch_ctas = 20};
  CommInterferenceModel m = MakeCommInterferenceModel(hw);
  EXPECT_EQ(m.compute_units, 132);
  EXPECT_EQ(m.scale_up_ctas, 32);
  EXPECT_EQ(m.scale_out_ctas, 16);
  EXPECT_EQ(m.ep_dispatch_ctas, 20);
  EXPECT_THAT(m.hbm_bandwidth.value(), IsNearRel(2.7e12, 1e-12));  // 3 TB/s · 0.9
}

TEST(CommInterferenceTest, OverlappedExposureIsTheClosedForm) {
  // 10 ms window: 6 ms GEMMs, 2 ms memory-bound kernels, 2 ms something else (exposed comm).
  OverlapWindow w{.total = Milliseconds(10), .compute_bound = Milliseconds(6),
                  .memory_bound = Milliseconds(2)};
  CommSlowdown s{.compute = 0.25, .memory = 0.5};
  // Share of the window's rate lost: (6 · 0.25 + 2 · 0.5) / 10 = 0.25.
  EXPECT_THAT(InterferenceCost(Milliseconds(4), s, w).value(), IsNearRel(1e-3, 1e-12));
  // Hidden (4 < 10): the window grows by the slowdown, max(4 − 10, 1) = 1 ms.
  EXPECT_THAT(OverlappedExposure(Milliseconds(4), Milliseconds(1), w).value(),
              IsNearRel(1e-3, 1e-12));
  // Just longer than the window but the slowed compute ends later: max(12 − 10, 3) = 3 ms.
  EXPECT_THAT(OverlappedExposure(Milliseconds(12), InterferenceCost(Milliseconds(12), s, w), w)
                  .value(),
              IsNearRel(3e-3, 1e-12));
  // Communication-bound: max(20 − 10, 5) = 10 ms, the interference-free exposure.
  EXPECT_THAT(OverlappedExposure(Milliseconds(20), InterferenceCost(Milliseconds(20), s, w), w)
                  .value(),
              IsNearRel(10e-3, 1e-12));
  // No window: the collective is simply exposed; no communication: nothing.
  EXPECT_DOUBLE_EQ(InterferenceCost(Milliseconds(4), s, OverlapWindow{}).value(), 0.0);
  EXPECT_DOUBLE_EQ(OverlappedExposure(Milliseconds(4), Seconds(0), OverlapWindow{}).value(),
                   4e-3);
  EXPECT_DOUBLE_EQ(OverlappedExposure(Seconds(0), InterferenceCost(Seconds(0), s, w), w).value(),
                   0.0);
}

TEST(CommInterferenceTest, HiddenTpGradAllReduceStillSlowsTheWgradGemm) {
  Fixture fx;
  fx.par.tp = 2;
  fx.interference = TestInterference();
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  Seconds ar(fx.ActBytes() * kSecondsPerWireByte);
  // Forward AllReduces have nothing beside them: exposed as before, 2 · AR.
  EXPECT_THAT(l->forward_comm.tp.value(), IsNearRel(2 * ar.value(), 1e-12));
  // Backward: each AR hides under a wgrad GEMM (1 ms, 3 ms ≫ AR) that loses 20 % of its SMs
  // for the AR's duration: 2 blocks · 0.2 · AR. The GEMM window is compute-bound, so the HBM
  // share plays no part.
  EXPECT_THAT(l->backward_comm.tp.value(), IsNearRel(2 * 0.2 * ar.value(), 1e-12));
  // Full recompute repeats the forward collectives, exposed as before.
  fx.tr.recompute = Recompute::kFull;
  auto r = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(r->recompute_comm.tp.value(), IsNearRel(2 * ar.value(), 1e-12));
}

TEST(CommInterferenceTest, HiddenCpRingSlowsTheAttentionKernel) {
  Fixture fx;
  fx.par.cp = 2;
  fx.interference = TestInterference();
  auto l = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // One ring step of K/V (see CpRingIsExposedOnlyBeyondTheAttentionKernel), hidden under the
  // 2 ms / 4 ms attention kernels: 0.2 · ring forward, 0.2 · 2 · ring backward.
  Seconds ring(256.0 * 4 * 128 * 2 * kSecondsPerWireByte);
  EXPECT_THAT(l->forward_comm.cp.value(), IsNearRel(0.2 * ring.value(), 1e-12));
  EXPECT_THAT(l->backward_comm.cp.value(), IsNearRel(0.2 * 2 * ring.value(), 1e-12));
}

TEST(CommInterferenceTest, DeepEpDispatchHoldsItsOwnSmBudget) {
  Fixture fx;
  UseToyMoeWithDeepEp(fx, /*a2a_overlap=*/true);
  fx.interference = TestInterference();
  auto l = ComposeLayer(ToyLayer(true), fx.Ctx(), fx.collective);
  ASSERT_THAT(l, IsOk());
  // Dispatch + combine of 512 · 2 · 256 · 2 B each, hidden under 3 ms of expert GEMMs that
  // lose 5 of 100 SMs meanwhile.
  double a2a = 2 * 512.0 * 2 * 256 * 2 * kSecondsPerWireByte;
  EXPECT_THAT(l->forward_comm.ep.value(), IsNearRel(0.05 * a2a, 1e-12));
  // A network slow enough to expose the A2A: max(A2A − 3 ms, 0.05 · A2A) = A2A − 3 ms.
  FakeCollectiveBackend slow(Seconds(1e-8));
  auto s = ComposeLayer(ToyLayer(true), fx.Ctx(), slow);
  ASSERT_THAT(s, IsOk());
  EXPECT_THAT(s->forward_comm.ep.value(), IsNearRel(a2a * 100 - 3e-3, 1e-12));
}

TEST(CommInterferenceTest, NoCommunicationMeansNoInterference) {
  Fixture fx;
  auto plain = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  fx.interference = TestInterference();
  auto with = ComposeLayer(ToyLayer(false), fx.Ctx(), fx.collective);
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(with, IsOk());
  EXPECT_DOUBLE_EQ(with->Forward().value(), plain->Forward().value());
  EXPECT_DOUBLE_EQ(with->Backward().value(), plain->Backward().value());
  EXPECT_DOUBLE_EQ(with->Recompute().value(), plain->Recompute().value());
}

// Invariant: for any layout, interference never makes a layer faster, and more CTAs never
// make it faster than fewer.
TEST(CommInterferenceTest, MoreInterferenceIsNeverFaster) {
  struct Layout {
    int64_t tp, cp, ep;
    bool sp, deepep, moe, overlap;
  };
  const Layout layouts[] = {{2, 1, 1, false, false, false, false},
                            {4, 1, 1, true, false, false, true},
                            {1, 2, 1, false, false, false, false},
                            {2, 2, 4, true, true, true, false},
                            {1, 1, 4, false, true, true, false}};
  for (Seconds per_byte : {Seconds(1e-10), Seconds(1e-8)}) {
    FakeCollectiveBackend collective(per_byte);
    for (const Layout& lay : layouts) {
      Fixture fx;
      if (lay.moe) fx.model = projector::testing::ToyMoeModel();
      fx.par.tp = lay.tp;
      fx.par.cp = lay.cp;
      fx.par.ep = lay.ep;
      fx.par.dp = lay.ep;
      fx.par.sequence_parallel = lay.sp;
      fx.par.deepep = lay.deepep;
      fx.tr.recompute = Recompute::kFull;
      double previous_total = -1;
      for (int64_t ctas : {0, 5, 20, 60}) {
        fx.interference = {.compute_units = 100, .scale_up_ctas = ctas, .scale_out_ctas = ctas,
                           .ep_dispatch_ctas = ctas, .hbm_bandwidth = BytesPerSecond(1e12)};
        auto l = ComposeLayer(ToyLayer(lay.moe), fx.Ctx(lay.overlap), collective);
        ASSERT_THAT(l, IsOk());
        double total = (l->Forward() + l->Backward() + l->Recompute()).value();
        EXPECT_GE(total, previous_total * (1 - 1e-12)) << "tp " << lay.tp << " ctas " << ctas;
        previous_total = total;
      }
    }
  }
}

}  // namespace
}  // namespace projector
