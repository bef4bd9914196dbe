#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/profilers/profiler_test_util.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::CountPhase;
using ::projector::testing::D;
using ::projector::testing::FakeBackends;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::projector::testing::SumLayerFlops;
using ::testing::HasSubstr;

using Case = ::projector::testing::ProfilerCase;

Case Llama(int64_t tp, bool sp) {
  Case s(testing::Llama31_8B());
  s.parallel.tp = tp;
  s.parallel.sequence_parallel = sp;
  s.training.seq_len = 8192;
  s.training.micro_batch = 2;
  return s;
}

double ModuleSum(const LayerProfile& layer, double ModuleProfile::*field) {
  double sum = 0;
  for (const ModuleProfile& m : layer.modules) sum += m.*field;
  return sum;
}
double ActivationSum(const LayerProfile& layer, bool selective) {
  double sum = 0;
  for (const ModuleProfile& m : layer.modules) {
    sum += (selective ? m.activation_bytes_selective : m.activation_bytes).value();
  }
  return sum;
}

TEST(TokensPerGpuTest, CpDividesTheSequence) {
  Case s = Llama(1, false);
  s.parallel.cp = 4;
  EXPECT_EQ(TokensPerGpu(s.model, s.parallel, s.training), 2 * 8192 / 4);
}

// Forward GEMM FLOPs of a SwiGLU GQA layer (head_dim·heads = h):
//   2·T·(h·(h + 2·kv·d) [QKV] + h·h [out] + 3·h·ffn [gate, up, down]) / t.
// kv = 8 is divisible by every t tested. Backward = dgrad + wgrad, each with the forward's
// FLOPs: 2× forward.
TEST(ProfileLayerTest, DenseForwardGemmFlopsMatchClosedForm) {
  for (int64_t tp : {1, 2, 8}) {
    Case s = Llama(tp, tp > 1);
    absl::StatusOr<LayerProfile> layer = ProfileLayer(s.Ctx(), /*is_moe=*/false);
    ASSERT_THAT(layer, IsOk());
    const double T = 2.0 * 8192, h = 4096, kv = 8, d = 128, ffn = 14336;
    const double expected = 2 * T * (h * (h + 2 * kv * d) + h * h + 3 * h * ffn) / D(tp);
    EXPECT_THAT(SumLayerFlops(*layer, OpKind::kGemm, OpPhase::kForward), IsNearRel(expected, 1e-12))
        << "tp " << tp;
    EXPECT_THAT(SumLayerFlops(*layer, OpKind::kGemm, OpPhase::kBackwardDgrad),
                IsNearRel(expected, 1e-12));
    EXPECT_THAT(SumLayerFlops(*layer, OpKind::kGemm, OpPhase::kBackwardWgrad),
                IsNearRel(expected, 1e-12));
  }
}

TEST(ProfileLayerTest, DenseLayerOpCounts) {
  Case s = Llama(8, true);
  absl::StatusOr<LayerProfile> layer = ProfileLayer(s.Ctx(), false);
  ASSERT_THAT(layer, IsOk());
  ASSERT_EQ(layer->modules.size(), 3u);
  EXPECT_EQ(layer->modules[0].module, "attention");
  EXPECT_EQ(layer->modules[1].module, "norms");
  EXPECT_EQ(layer->modules[2].module, "mlp");
  int64_t fwd_gemms = 0, dgrad_gemms = 0, wgrad_gemms = 0, total = 0;
  for (const ModuleProfile& m : layer->modules) {
    fwd_gemms += CountOps(m.ops, OpKind::kGemm, OpPhase::kForward);
    dgrad_gemms += CountOps(m.ops, OpKind::kGemm, OpPhase::kBackwardDgrad);
    wgrad_gemms += CountOps(m.ops, OpKind::kGemm, OpPhase::kBackwardWgrad);
    total += static_cast<int64_t>(m.ops.size());
  }
  // qkv, out, fc1 (fused gate+up), fc2.
  EXPECT_EQ(fwd_gemms, 4);
  EXPECT_EQ(dgrad_gemms, 4);
  EXPECT_EQ(wgrad_gemms, 4);
  // attention 4 fwd (qkv, rope, core, out) + 6 bwd, norms 4 + 4, mlp 3 + 5.
  EXPECT_EQ(total, 26);
}

// Llama-3.1-8B, per GPU per layer:
//   attention: h·(a + 2g)·d/t + (a·d/t)·h (kv heads replicate once t > g); mlp 3·h·ffn/t;
//   norms 2·h (replicated). Embedding and output V_pad/t·h with V_pad = 128256 rounded up to
//   a multiple of 128·t; final norm h. At TP1 the whole model is the published 8.03 B.
TEST(ProfileLayerTest, Llama8BParametersPerGpu) {
  for (int64_t tp : {1, 8}) {
    Case s = Llama(tp, tp > 1);
    absl::StatusOr<LayerProfile> layer = ProfileLayer(s.Ctx(), false);
    ASSERT_THAT(layer, IsOk());
    const double h = 4096, d = 128, ffn = 14336;
    const double a_l = 32.0 / D(tp), g_l = tp <= 8 ? 8.0 / D(tp) : 1.0;
    const double per_layer = h * (a_l + 2 * g_l) * d + a_l * d * h + 3 * h * ffn / D(tp) + 2 * h;
    EXPECT_THAT(ModuleSum(*layer, &ModuleProfile::dense_parameters), IsNearRel(per_layer, 1e-12));
    EXPECT_EQ(ModuleSum(*layer, &ModuleProfile::expert_parameters), 0.0);

    absl::StatusOr<ModuleProfile> emb = ProfileEmbedding(s.Ctx());
    absl::StatusOr<ModuleProfile> out = ProfileOutputLayer(s.Ctx());
    ASSERT_THAT(emb, IsOk());
    ASSERT_THAT(out, IsOk());
    const double v_pad = tp == 1 ? 128256 : 129024;  // 126·1024 at TP8
    EXPECT_THAT(emb->dense_parameters, IsNearRel(v_pad / D(tp) * h, 1e-12));
    EXPECT_THAT(out->dense_parameters, IsNearRel(v_pad / D(tp) * h + h, 1e-12));
    if (tp == 1) {
      const double total = 32 * per_layer + emb->dense_parameters + out->dense_parameters;
      EXPECT_THAT(total, IsNearRel(8030261248.0, 1e-12));
    }
  }
}

// Korthikanti et al. 2022, eq. 1-2: a GPT layer (MHA, GELU 4h, LayerNorm, dropout, no flash
// attention) stores s·b·h·(34 + 5·a·s/h) bytes; with TP t and sequence parallelism all of it
// is divided by t (eq. 4); TP without SP: s·b·h·(10 + 24/t + 5·a·s/(h·t)) (eq. 3). Selective
// recompute drops the 5·a·s/h term.
TEST(ProfileLayerTest, ActivationBytesMatchKorthikanti) {
  const double s = 2048, b = 2, h = 2048, a = 16;
  for (int64_t tp : {1, 4}) {
    for (bool sp : {false, true}) {
      if (tp == 1 && sp) continue;
      Case st(testing::GptMha());
      st.parallel.tp = tp;
      st.parallel.sequence_parallel = sp;
      st.training.seq_len = 2048;
      st.training.micro_batch = 2;
      ProfileContext ctx = st.Ctx();
      ctx.flash_attention = false;
      ctx.dropout = true;
      absl::StatusOr<LayerProfile> layer = ProfileLayer(ctx, false);
      ASSERT_THAT(layer, IsOk());
      const double t = D(tp);
      const double core = 5 * a * s * s * b / t;
      const double linear = sp ? 34 * s * b * h / t : s * b * h * (10 + 24 / t);
      EXPECT_THAT(ActivationSum(*layer, false), IsNearRel(linear + core, 1e-12))
          << "tp " << tp << " sp " << sp;
      EXPECT_THAT(ActivationSum(*layer, true), IsNearRel(linear, 1e-12));
    }
  }
}

// With flash attention the score matrices are never stored: the core keeps only the fp32
// log-sum-exp, 4·b·(a/t)·s bytes.
TEST(ProfileLayerTest, FlashAttentionKeepsOnlySoftmaxStatistics) {
  Case st(testing::GptMha());
  st.parallel.tp = 4;
  st.parallel.sequence_parallel = true;
  st.training.seq_len = 2048;
  st.training.micro_batch = 2;
  ProfileContext ctx = st.Ctx();
  ctx.dropout = true;
  absl::StatusOr<LayerProfile> layer = ProfileLayer(ctx, false);
  ASSERT_THAT(layer, IsOk());
  const double s = 2048, b = 2, h = 2048, a = 16, t = 4;
  EXPECT_THAT(ActivationSum(*layer, false), IsNearRel(34 * s * b * h / t + 4 * b * a / t * s, 1e-12));
}

TEST(ProfileLayerTest, RecomputeOpsPerMode) {
  Case s = Llama(2, true);
  absl::StatusOr<LayerProfile> none = ProfileLayer(s.Ctx(Recompute::kNone), false);
  absl::StatusOr<LayerProfile> sel = ProfileLayer(s.Ctx(Recompute::kSelective), false);
  absl::StatusOr<LayerProfile> full = ProfileLayer(s.Ctx(Recompute::kFull), false);
  ASSERT_THAT(none, IsOk());
  ASSERT_THAT(sel, IsOk());
  ASSERT_THAT(full, IsOk());
  for (const ModuleProfile& m : none->modules) EXPECT_EQ(CountPhase(m.ops, OpPhase::kRecompute), 0);
  // Selective: one copy of the attention-core forward, nothing else.
  EXPECT_EQ(CountPhase(sel->modules[0].ops, OpPhase::kRecompute), 1);
  EXPECT_EQ(CountOps(sel->modules[0].ops, OpKind::kAttention, OpPhase::kRecompute), 1);
  EXPECT_EQ(CountPhase(sel->modules[1].ops, OpPhase::kRecompute), 0);
  EXPECT_EQ(CountPhase(sel->modules[2].ops, OpPhase::kRecompute), 0);
  // Full: a copy of every forward op with the same FLOPs.
  for (const ModuleProfile& m : full->modules) {
    EXPECT_EQ(CountPhase(m.ops, OpPhase::kRecompute), CountPhase(m.ops, OpPhase::kForward))
        << m.module;
  }
  EXPECT_THAT(SumLayerFlops(*full, OpKind::kGemm, OpPhase::kRecompute),
              IsNearRel(SumLayerFlops(*full, OpKind::kGemm, OpPhase::kForward), 1e-12));
  EXPECT_THAT(SumLayerFlops(*full, OpKind::kAttention, OpPhase::kRecompute),
              IsNearRel(SumLayerFlops(*full, OpKind::kAttention, OpPhase::kForward), 1e-12));
}

// With the fake backends every op costs rate × work, so the layer's time is a closed form of
// its FLOPs and bytes.
TEST(TimeLayerTest, FakeBackendTimesAreRateTimesWork) {
  Case s = Llama(4, true);
  absl::StatusOr<LayerProfile> layer = ProfileLayer(s.Ctx(Recompute::kFull), false);
  ASSERT_THAT(layer, IsOk());
  FakeBackends fakes;
  ASSERT_THAT(TimeLayer(fakes.Refs(), *layer), IsOk());
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad, OpPhase::kBackwardWgrad,
                        OpPhase::kRecompute}) {
    double expected = 0, actual = 0;
    for (const ModuleProfile& m : layer->modules) {
      for (const Op& op : m.ops) {
        if (op.phase != phase) continue;
        expected += op.kind == OpKind::kMemory ? op.bytes.value() * 1e-12 : op.flops.value() * 1e-15;
      }
      actual += SumTime(m.ops, phase).value();
    }
    EXPECT_GT(expected, 0);
    EXPECT_THAT(actual, IsNearRel(expected, 1e-12)) << OpPhaseName(phase);
  }
}

TEST(ProfileLayerTest, MoeLayerOnDenseModelIsAnError) {
  Case s = Llama(1, false);
  EXPECT_THAT(ProfileLayer(s.Ctx(), /*is_moe=*/true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no MoE")));
}

TEST(ProfileLayerTest, BadTrainingConfigIsAnError) {
  Case s = Llama(1, false);
  s.training.micro_batch = 0;
  EXPECT_THAT(ProfileLayer(s.Ctx(), false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("micro_batch")));
  s = Llama(1, false);
  s.parallel.cp = 3;
  EXPECT_THAT(ProfileLayer(s.Ctx(), false),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("seq_len 8192")));
  s = Llama(3, true);
  s.training.micro_batch = 1;
  s.model.num_attention_heads = 30;  // would fail later; SP check comes first
  EXPECT_THAT(ProfileLayer(s.Ctx(), false),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("tp (sequence parallel)")));
}

}  // namespace
}  // namespace projector
