#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "scenario/training_defaults.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/models_and_op_queries.h"
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
      st.training.attention_kernel = AttentionKernel::kUnfused;
      st.training.hidden_dropout = 0.1;
      st.training.attention_dropout = 0.1;
      ProfileContext ctx = st.Ctx();
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
  st.training.hidden_dropout = 0.1;
  st.training.attention_dropout = 0.1;
  ProfileContext ctx = st.Ctx();
  absl::StatusOr<LayerProfile> layer = ProfileLayer(ctx, false);
  ASSERT_THAT(layer, IsOk());
  const double s = 2048, b = 2, h = 2048, a = 16, t = 4;
  EXPECT_THAT(ActivationSum(*layer, false), IsNearRel(34 * s * b * h / t + 4 * b * a / t * s, 1e-12));
}

// Auto dropout follows the stack and the model: Megatron's 0.1 for a GELU/LayerNorm GPT model
// on the megatron stack, 0 for a Llama-style model and on the PyTorch-native stacks; a stated
// probability wins, and either field may be set alone.
TEST(ResolvedDropoutTest, AutoFollowsStackAndModel) {
  const ModelSpec gpt = testing::GptMha(), llama = testing::Llama31_8B();
  ParallelConfig megatron, fsdp;
  fsdp.fsdp = true;
  fsdp.dp = 8;
  TrainingConfig t;
  EXPECT_TRUE(IsGptStyle(gpt));
  EXPECT_FALSE(IsGptStyle(llama));
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, megatron, t).hidden, 0.1);
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, megatron, t).attention, 0.1);
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, fsdp, t).hidden, 0.0);  // llm-foundry's MPT
  EXPECT_DOUBLE_EQ(ResolvedDropout(llama, megatron, t).hidden, 0.0);
  t.stack = TrainingStack::kMegatron;
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, fsdp, t).attention, 0.1);  // Megatron-FSDP
  t.attention_dropout = 0;
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, megatron, t).hidden, 0.1);
  EXPECT_DOUBLE_EQ(ResolvedDropout(gpt, megatron, t).attention, 0.0);
  t.hidden_dropout = 0.2;
  EXPECT_DOUBLE_EQ(ResolvedDropout(llama, megatron, t).hidden, 0.2);
}

// The unfused core's dropout kernel (read P, write P' and the mask; backward read dP' and the
// mask, write dP: (2e + 1) per score each way) runs with attention dropout only, and the
// 1-byte masks of the residual branches are stored only with hidden dropout (sbh each, in the
// attention and the MLP module).
TEST(ProfileLayerTest, AttentionAndHiddenDropoutAreSeparate) {
  const double s = 2048, b = 1, h = 2048, a = 16;
  for (double hidden : {0.0, 0.1}) {
    for (double attention : {0.0, 0.1}) {
      Case st(testing::GptMha());
      st.training.seq_len = 2048;
      st.training.attention_kernel = AttentionKernel::kUnfused;
      st.training.hidden_dropout = hidden;
      st.training.attention_dropout = attention;
      absl::StatusOr<LayerProfile> layer = ProfileLayer(st.Ctx(), false);
      ASSERT_THAT(layer, IsOk());
      const Op* dropout =
          testing::FindOp(layer->modules[0].ops, "attention_dropout", OpPhase::kForward);
      if (attention > 0) {
        ASSERT_NE(dropout, nullptr);
        EXPECT_THAT(dropout->bytes.value(), IsNearRel(5 * a * s * s * b, 1e-12));
      } else {
        EXPECT_EQ(dropout, nullptr);
      }
      // Korthikanti's 34sbh + 5as²b with both; each dropout removes its own terms: the two
      // sbh masks (hidden), the as²b mask and the 2as²b dropout output (attention).
      const double expected =
          s * b * h * (34 - (hidden > 0 ? 0 : 2)) + a * s * s * b * (attention > 0 ? 5 : 2);
      EXPECT_THAT(ActivationSum(*layer, false), IsNearRel(expected, 1e-12))
          << "hidden " << hidden << " attention " << attention;
    }
  }
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

// A GEMM backend whose fp8 rate is twice its bf16 rate (the ideal tensor-core speedup: H100
// 1979 vs 989 dense TFLOPS), so the fp8 GEMMs of a layer take exactly half the bf16 time.
class TwiceAsFastFp8GemmBackend final : public GemmBackend {
 public:
  absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const override {
    const double per_flop = shape.dtype == DType::kFp8 ? 0.5e-15 : 1e-15;
    const Seconds t(GemmFlops(shape).value() * per_flop);
    return GemmEstimate{.time = t, .clock_scaled_time = t, .bound = Bound::kCompute};
  }
  std::string_view name() const override { return "fp8_twice"; }
};

struct LayerTimes {
  double gemm = 0;
  double other = 0;
};
LayerTimes TimeOf(const ProfileContext& ctx, bool is_moe) {
  absl::StatusOr<LayerProfile> layer = ProfileLayer(ctx, is_moe);
  EXPECT_THAT(layer, IsOk());
  if (!layer.ok()) return {};
  FakeBackends fakes;
  TwiceAsFastFp8GemmBackend gemm;
  const BackendRefs refs{.gemm = gemm, .attention = fakes.attention, .memory = fakes.memory,
                         .collective = fakes.collective};
  EXPECT_THAT(TimeLayer(refs, *layer), IsOk());
  LayerTimes t;
  for (const ModuleProfile& m : layer->modules) {
    for (const Op& op : m.ops) (op.kind == OpKind::kGemm ? t.gemm : t.other) += op.time.value();
  }
  return t;
}

// FP8 speeds up only the fp8 GEMMs and adds Transformer Engine's casts, so an fp8 layer is
// never faster than the bf16 layer with its fp8-able GEMM time halved (Amdahl with the ideal
// GEMM speedup). Llama-3.1-8B, TP 1, T = 2·8192, memory at 1 TB/s, e = 2 and q = 1 byte. The
// gap is the cast traffic (4 B per element cast and transposed from bf16, 2 B per fp8
// transpose) less the fp8 norm outputs, with the weight casts' once-per-step ops counted once:
//   weights  4·h·(6144 + 4096 + 28672 + 14336)                 = 4·4096·53248 B
//   inputs   4·T·(4096 [out_proj] + 14336 [fc2])               = 4·T·18432
//   dY       4·T·(6144 + 4096 + 28672 + 4096)                    = 4·T·43008
//   fused-norm inputs transposed 2·T·4096·2, norms write 1 B less: −T·4096·2
//   total = 872,415,232 + T·253,952 = 5,033,164,800 B → 5.0331648 ms.
TEST(ProfileLayerTest, Fp8IsNeverFasterThanIdealGemmSpeedupAndAddsTheCasts) {
  Case s = Llama(1, false);
  s.training.global_batch = 8;
  LayerTimes bf16 = TimeOf(s.Ctx(), false);
  s.training.precision = DType::kFp8;
  LayerTimes fp8 = TimeOf(s.Ctx(), false);
  EXPECT_THAT(fp8.gemm, IsNearRel(bf16.gemm / 2, 1e-12));
  EXPECT_THAT(fp8.other - bf16.other, IsNearRel(5.0331648e-3, 1e-9));

  // The invariant over layouts, recompute modes, MoE and MLA layers.
  struct Variant {
    Case c;
    bool moe;
    Recompute recompute;
  };
  std::vector<Variant> variants;
  variants.push_back({Llama(4, true), false, Recompute::kFull});
  variants.push_back({Llama(8, true), false, Recompute::kSelective});
  Case mixtral(testing::Mixtral8x7B());
  mixtral.training.seq_len = 4096;
  mixtral.parallel.ep = 8;
  variants.push_back({mixtral, true, Recompute::kNone});
  mixtral.parallel.turbo_grouped_gemm = false;
  variants.push_back({mixtral, true, Recompute::kFull});
  Case dsv3(testing::DeepSeekV3());
  dsv3.training.seq_len = 4096;
  dsv3.parallel.ep = 64;
  variants.push_back({dsv3, true, Recompute::kNone});
  dsv3.parallel.fsdp = true;
  variants.push_back({dsv3, false, Recompute::kFull});
  for (Variant& v : variants) {
    v.c.training.precision = DType::kBf16;
    const LayerTimes b = TimeOf(v.c.Ctx(v.recompute), v.moe);
    v.c.training.precision = DType::kFp8;
    const LayerTimes f = TimeOf(v.c.Ctx(v.recompute), v.moe);
    // The router stays bf16, so fp8 GEMM time is at least half the bf16 GEMM time.
    EXPECT_GE(f.gemm, b.gemm / 2 * (1 - 1e-12)) << v.c.model.name;
    EXPECT_GT(f.gemm + f.other, b.gemm / 2 + b.other) << v.c.model.name;
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

// Megatron-Core's recompute modules on DeepSeek-V3 (bf16, TP1, EP64, one sequence of 4096, no
// dropout): what each leaves out of the stored activations and which forward ops it re-runs.
//   mla_up_proj: Q and K (nope+rope = 192 per head) and V (128) of 128 heads,
//     2 B · 4096 · 128 · (2·192 + 128) = 536,870,912 B; re-runs q_up_proj, kv_up_proj and RoPE.
//   layernorm: the bf16 norm outputs MLA's q_down/kv_down and the MoE router keep,
//     2 B · 4096 · 7168 = 58,720,256 B each; re-runs the input and pre-MLP norms.
//   moe_act: the routed experts' fc2 input, 4096·8 = 32,768 pairs on 4 local experts (balanced)
//     × 2048 × 2 B = 134,217,728 B; re-runs expert_act.
//   shared_experts: the shared MLP's SwiGLU input (2·2048) and fc2 input (2048) for 4096 tokens,
//     4096 · 2048 · 3 · 2 B = 50,331,648 B.
//   moe: the MoE layer keeps only its input, 2 B · 4096 · 7168 = 58,720,256 B, and re-runs every
//     forward op. mlp (a dense layer): the MLP keeps nothing (its input is the norms' to count).
TEST(ProfileLayerTest, RecomputeModulesDropWhatTheyRerun) {
  Case c(testing::DeepSeekV3());
  c.training.seq_len = 4096;
  c.training.precision = DType::kBf16;
  c.parallel.ep = 64;
  auto module_of = [](const LayerProfile& layer, std::string_view name) -> const ModuleProfile& {
    for (const ModuleProfile& m : layer.modules) {
      if (m.module == name) return m;
    }
    ADD_FAILURE() << "no module " << name;
    return layer.modules.front();
  };
  auto rerun = [](const ModuleProfile& m) {
    std::vector<std::string> names;
    for (const Op& op : m.ops) {
      if (op.phase == OpPhase::kRecompute) names.emplace_back(op.name);
    }
    return names;
  };
  auto dropped = [](const ModuleProfile& m) {
    return m.activation_bytes.value() - m.activation_bytes_selective.value();
  };
  auto profile = [&](RecomputeModules modules, bool moe) {
    c.training.recompute_modules = modules;
    absl::StatusOr<LayerProfile> layer = ProfileLayer(c.Ctx(Recompute::kSelective), moe);
    EXPECT_THAT(layer, IsOk());
    return *layer;
  };
  using ::testing::ElementsAre;
  using ::testing::IsEmpty;
  const double qkv = 2.0 * 4096 * 128 * (2 * 192 + 128);
  const double norm_out = 2.0 * 4096 * 7168;

  LayerProfile l = profile(RecomputeBit(RecomputeModule::kMlaUpProj), true);
  EXPECT_EQ(qkv, 536870912.0);
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "attention")), qkv);
  EXPECT_THAT(rerun(module_of(l, "attention")), ElementsAre("q_up_proj", "kv_up_proj", "rope"));
  EXPECT_THAT(rerun(module_of(l, "moe")), IsEmpty());
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "moe")), 0.0);

  l = profile(RecomputeBit(RecomputeModule::kLayernorm), true);
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "attention")), norm_out);
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "moe")), norm_out);
  EXPECT_THAT(rerun(module_of(l, "norms")), ElementsAre("input_norm", "pre_mlp_norm"));

  l = profile(RecomputeBit(RecomputeModule::kMoeAct), true);
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "moe")), 32768.0 * 2048 * 2);
  EXPECT_THAT(rerun(module_of(l, "moe")), ElementsAre("expert_act"));

  l = profile(RecomputeBit(RecomputeModule::kSharedExperts), true);
  EXPECT_DOUBLE_EQ(dropped(module_of(l, "moe")), 4096.0 * 2048 * 3 * 2);
  EXPECT_THAT(rerun(module_of(l, "moe")),
              ElementsAre("shared_fc1", "shared_act", "shared_fc2"));

  l = profile(RecomputeBit(RecomputeModule::kMoe), true);
  const ModuleProfile& moe = module_of(l, "moe");
  EXPECT_DOUBLE_EQ(moe.activation_bytes_selective.value(), norm_out);
  EXPECT_EQ(CountPhase(moe.ops, OpPhase::kRecompute), CountPhase(moe.ops, OpPhase::kForward));

  l = profile(RecomputeBit(RecomputeModule::kMlp), false);
  const ModuleProfile& mlp = module_of(l, "mlp");
  EXPECT_DOUBLE_EQ(mlp.activation_bytes_selective.value(), 0.0);
  EXPECT_THAT(rerun(mlp), ElementsAre("fc1_gate_up", "swiglu", "fc2_down"));
  EXPECT_THAT(rerun(module_of(l, "attention")), IsEmpty());

  // The default, core_attn: the flash kernel alone, and only its own tensors dropped.
  l = profile(kDefaultRecomputeModules, true);
  EXPECT_THAT(rerun(module_of(l, "attention")), ElementsAre("attention_core"));
  EXPECT_THAT(rerun(module_of(l, "moe")), IsEmpty());
}

}  // namespace
}  // namespace projector
