#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::CountPhase;
using ::projector::testing::D;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::projector::testing::SumFlops;
using ::testing::HasSubstr;
using Case = ::projector::testing::ProfilerCase;

Case Llama(int64_t tp) {
  Case c(testing::Llama31_8B());
  c.parallel.tp = tp;
  c.parallel.sequence_parallel = tp > 1;
  c.training.seq_len = 4096;
  c.training.micro_batch = 1;
  return c;
}

// QKV N = (heads + 2·kv_heads)·head_dim / t; dgrad (T, in, out), wgrad (in, out, T).
TEST(ProfileAttentionTest, QkvShapesAndExplicitBackwardGemms) {
  Case c = Llama(4);
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const Op* fwd = FindOp(p->ops, "qkv_proj", OpPhase::kForward);
  const Op* dgrad = FindOp(p->ops, "qkv_proj", OpPhase::kBackwardDgrad);
  const Op* wgrad = FindOp(p->ops, "qkv_proj", OpPhase::kBackwardWgrad);
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(dgrad, nullptr);
  ASSERT_NE(wgrad, nullptr);
  const int64_t n = (32 + 2 * 8) * 128 / 4;
  EXPECT_EQ(fwd->gemm, (GemmShape{.m = 4096, .n = n, .k = 4096}));
  EXPECT_EQ(dgrad->gemm, (GemmShape{.m = 4096, .n = 4096, .k = n, .transpose_b = true}));
  EXPECT_EQ(wgrad->gemm, (GemmShape{.m = 4096, .n = n, .k = 4096, .transpose_a = true}));
  EXPECT_THAT(fwd->flops.value(), IsNearRel(2.0 * 4096 * n * 4096, 1e-12));
  EXPECT_GT(fwd->bytes.value(), 0);
  EXPECT_GT(wgrad->bytes.value(), 0);
  // 4 forward ops (qkv, rope, core, out), 2 GEMM × 2 + rope + core backward.
  EXPECT_EQ(CountPhase(p->ops, OpPhase::kForward), 4);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardDgrad), 2);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad), 2);
  EXPECT_EQ(CountOps(p->ops, OpKind::kAttention, OpPhase::kBackwardDgrad), 1);
}

// ALiBi adds its bias inside the attention kernel and learned embeddings are added to the token
// embedding: only RoPE is a kernel of its own, so the others drop the rope op (forward and
// backward) and change nothing else.
TEST(ProfileAttentionTest, OnlyRotaryEmbeddingsAddARopeKernel) {
  for (PositionEmbedding pe : {PositionEmbedding::kAlibi, PositionEmbedding::kLearned}) {
    Case rope = Llama(4);
    Case other = Llama(4);
    other.model.position_embedding = pe;
    absl::StatusOr<ModuleProfile> a = ProfileAttention(rope.Ctx());
    absl::StatusOr<ModuleProfile> b = ProfileAttention(other.Ctx());
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    EXPECT_NE(FindOp(a->ops, "rope", OpPhase::kForward), nullptr);
    EXPECT_EQ(FindOp(b->ops, "rope", OpPhase::kForward), nullptr);
    EXPECT_EQ(FindOp(b->ops, "rope", OpPhase::kBackwardDgrad), nullptr);
    EXPECT_EQ(b->ops.size() + 2, a->ops.size());
    EXPECT_DOUBLE_EQ(b->dense_parameters, a->dense_parameters);
  }
}

// TP 16 > 8 kv heads: each rank keeps one (replicated) kv head: N = (32/16 + 2)·128.
TEST(ProfileAttentionTest, KvHeadsReplicateWhenTpExceedsThem) {
  Case c = Llama(16);
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const Op* qkv = FindOp(p->ops, "qkv_proj", OpPhase::kForward);
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->gemm.n, (2 + 2) * 128);
  const Op* core = FindOp(p->ops, "attention_core", OpPhase::kForward);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->attention.num_q_heads, 2);
  EXPECT_EQ(core->attention.num_kv_heads, 1);
}

TEST(ProfileAttentionTest, MqaHasOneKvHead) {
  Case c = Llama(8);
  c.model.num_kv_heads = 1;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(FindOp(p->ops, "qkv_proj", OpPhase::kForward)->gemm.n, (4 + 2) * 128);
  EXPECT_EQ(FindOp(p->ops, "attention_core", OpPhase::kForward)->attention.num_kv_heads, 1);
}

// With CP the local seq_len/CP queries attend over the whole gathered sequence (causal), and
// the projections see T = b·s/CP rows.
TEST(ProfileAttentionTest, ContextParallelDividesQueries) {
  Case c = Llama(2);
  c.parallel.cp = 4;
  c.training.micro_batch = 2;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const Op* core = FindOp(p->ops, "attention_core", OpPhase::kForward);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->attention.batch, 2);
  EXPECT_EQ(core->attention.seq_q, 1024);
  EXPECT_EQ(core->attention.seq_kv, 4096);
  EXPECT_TRUE(core->attention.causal);
  EXPECT_EQ(core->attention.num_q_heads, 16);
  EXPECT_EQ(core->attention.num_kv_heads, 4);
  EXPECT_EQ(FindOp(p->ops, "qkv_proj", OpPhase::kForward)->gemm.m, 2 * 1024);
  EXPECT_EQ(p->tokens, 2 * 1024);
  // Causal forward FLOPs 2·b·(a/t)·s_q·s_kv·(d + d)/2: the rank's share of the causal work.
  EXPECT_THAT(core->flops.value(), IsNearRel(2.0 * 2 * 16 * 1024 * 4096 * 256 / 2, 1e-12));
  const Op* bwd = FindOp(p->ops, "attention_core", OpPhase::kBackwardDgrad);
  ASSERT_NE(bwd, nullptr);
  EXPECT_EQ(bwd->attention_pass, AttentionPass::kBackward);
  EXPECT_THAT(bwd->flops.value(), IsNearRel(2.5 * core->flops.value(), 1e-12));
}

// An encoder's bidirectional attention computes the whole score matrix: twice the causal
// kernel's FLOPs, 4·b·a·s²·d forward (QKᵀ and P·V, 2·s²·d each per head), for the same shape.
TEST(ProfileAttentionTest, BidirectionalAttentionComputesEveryTile) {
  Case causal = Llama(1);
  Case encoder = Llama(1);
  encoder.model.causal_attention = false;
  absl::StatusOr<ModuleProfile> c = ProfileAttention(causal.Ctx());
  absl::StatusOr<ModuleProfile> e = ProfileAttention(encoder.Ctx());
  ASSERT_THAT(c, IsOk());
  ASSERT_THAT(e, IsOk());
  const Op* c_core = FindOp(c->ops, "attention_core", OpPhase::kForward);
  const Op* e_core = FindOp(e->ops, "attention_core", OpPhase::kForward);
  ASSERT_NE(c_core, nullptr);
  ASSERT_NE(e_core, nullptr);
  EXPECT_TRUE(c_core->attention.causal);
  EXPECT_FALSE(e_core->attention.causal);
  EXPECT_THAT(e_core->flops.value(), IsNearRel(2.0 * c_core->flops.value(), 1e-12));
  const AttentionShape& s = e_core->attention;
  EXPECT_THAT(e_core->flops.value(),
              IsNearRel(4.0 * D(s.batch) * D(s.num_q_heads) * D(s.seq_q) * D(s.seq_kv) *
                            D(s.qk_head_dim),
                        1e-12));
}

// FP8 training runs the projections in fp8; the attention kernel stays bf16.
TEST(ProfileAttentionTest, Fp8GemmsBf16Attention) {
  Case c = Llama(1);
  c.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(FindOp(p->ops, "qkv_proj", OpPhase::kForward)->gemm.dtype, DType::kFp8);
  EXPECT_EQ(FindOp(p->ops, "out_proj", OpPhase::kBackwardWgrad)->gemm.dtype, DType::kFp8);
  EXPECT_EQ(FindOp(p->ops, "attention_core", OpPhase::kForward)->attention.dtype, DType::kBf16);
  // QKV takes the fused input norm's fp8 output (no input cast); out_proj casts the bf16
  // attention output. Forward: qkv, rope, core, out_proj's input cast, out_proj; the two weight
  // casts run once per step (the step's first micro-batch).
  std::vector<std::string_view> forward, once;
  for (const Op& op : p->ops) {
    if (op.phase == OpPhase::kForward) forward.push_back(op.name);
    if (op.phase == OpPhase::kOncePerStep) once.push_back(op.name);
  }
  EXPECT_THAT(forward, ::testing::ElementsAre("qkv_proj", "rope", "attention_core",
                                              "input_fp8_cast", "out_proj"));
  EXPECT_THAT(once, ::testing::ElementsAre("weight_fp8_cast", "weight_fp8_cast"));
  EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kBackwardWgrad), 1);
}

// MLA under FP8: q_down and kv_down cast the (separate TENorm's) bf16 input; k_rope shares
// kv_down's (one linear_kv_down_proj in Megatron); q_up and kv_up take their fused norms' fp8
// output; the q/kv norms write 1 byte per element.
TEST(ProfileAttentionTest, Fp8MlaCastsEachUnfusedInputOnce) {
  Case c(testing::DeepSeekV3());
  c.training.seq_len = 1024;
  c.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  int64_t input_casts = 0, weight_casts = 0, transposes = 0;
  for (const Op& op : p->ops) {
    input_casts += op.name == "input_fp8_cast" ? 1 : 0;
    weight_casts += op.name == "weight_fp8_cast" ? 1 : 0;
    transposes += op.name == "input_fp8_transpose" ? 1 : 0;
  }
  EXPECT_EQ(weight_casts, 6);
  EXPECT_EQ(input_casts, 3);  // q_down, kv_down, o_proj
  EXPECT_EQ(transposes, 2);   // q_up, kv_up
  // q_norm over T·q_lora_rank: read 2 bytes, write 1.
  EXPECT_THAT(FindOp(p->ops, "q_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(3.0 * 1024 * 1536, 1e-12));
}

TEST(ProfileAttentionTest, QkNormAndBiasWhereTheModelHasThem) {
  Case c = Llama(2);
  absl::StatusOr<ModuleProfile> plain = ProfileAttention(c.Ctx());
  c.model.qk_norm = true;
  c.model.attention_bias = true;
  absl::StatusOr<ModuleProfile> with = ProfileAttention(c.Ctx());
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(with, IsOk());
  EXPECT_EQ(FindOp(plain->ops, "qk_norm", OpPhase::kForward), nullptr);
  const Op* norm = FindOp(with->ops, "qk_norm", OpPhase::kForward);
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->kind, OpKind::kMemory);
  EXPECT_NE(FindOp(with->ops, "qk_norm", OpPhase::kBackwardDgrad), nullptr);
  // Bias (a + 2g)·d/t and two RMSNorm scales of head_dim.
  EXPECT_THAT(with->dense_parameters - plain->dense_parameters,
              IsNearRel((16 + 2 * 4) * 128 + 2 * 128, 1e-12));
}

TEST(ProfileAttentionTest, IndivisibleHeadsAreFailedPrecondition) {
  Case c = Llama(3);
  c.parallel.sequence_parallel = false;
  EXPECT_THAT(ProfileAttention(c.Ctx()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("num_attention_heads 32 is not divisible by tp 3")));
  // 24 heads, 6 kv heads, TP 4: kv heads neither split nor replicate evenly.
  Case g = Llama(4);
  g.model.num_attention_heads = 24;
  g.model.num_kv_heads = 6;
  EXPECT_THAT(ProfileAttention(g.Ctx()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("num_kv_heads 6")));
  Case bad = Llama(1);
  bad.model.num_kv_heads = 5;
  EXPECT_THAT(ProfileAttention(bad.Ctx()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("multiple of num_kv_heads")));
}

Case DeepSeek(int64_t tp) {
  Case c(testing::DeepSeekV3());
  c.parallel.tp = tp;
  c.parallel.sequence_parallel = tp > 1;
  c.training.seq_len = 4096;
  c.training.micro_batch = 1;
  return c;
}

// MLA forward GEMMs: q_down, q_up, kv_down, k_rope_proj, kv_up, o_proj; dgrad + wgrad each.
// FLOPs: 2·[Ts·h·ql + T·ql·(a/t)·(n+r) + Ts·h·kl + Ts·h·r + T·kl·(a/t)·(n+v) + T·(a/t)·v·h],
// Ts = T/t (the replicated down projections run on the SP shard).
TEST(ProfileAttentionTest, MlaHasSixForwardAndTwelveBackwardGemms) {
  Case c = DeepSeek(4);
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kForward), 6);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardDgrad) +
                CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad),
            12);
  const double T = 4096, Ts = 1024, h = 7168, ql = 1536, kl = 512, n = 128, r = 64, v = 128;
  const double a_l = 32;
  const double fwd = 2 * (Ts * h * ql + T * ql * a_l * (n + r) + Ts * h * kl + Ts * h * r +
                          T * kl * a_l * (n + v) + T * a_l * v * h);
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kForward), IsNearRel(fwd, 1e-12));
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kBackwardDgrad), IsNearRel(fwd, 1e-12));
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad), IsNearRel(fwd, 1e-12));
  const Op* core = FindOp(p->ops, "attention_core", OpPhase::kForward);
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->attention.qk_head_dim, 192);
  EXPECT_EQ(core->attention.v_head_dim, 128);
  EXPECT_EQ(core->attention.num_q_heads, 32);
  EXPECT_EQ(core->attention.num_kv_heads, 32);
  EXPECT_NE(FindOp(p->ops, "q_norm", OpPhase::kForward), nullptr);
  EXPECT_NE(FindOp(p->ops, "kv_norm", OpPhase::kForward), nullptr);
  // Parameters: replicated down projections and norms, TP-split up/out projections.
  const double params = h * ql + ql + ql * a_l * (n + r) + h * (kl + r) + kl +
                        kl * a_l * (n + v) + a_l * v * h;
  EXPECT_THAT(p->dense_parameters, IsNearRel(params, 1e-12));
}

// DeepSeek-V2-Lite style: no Q LoRA, Q projected directly: 5 forward and 10 backward GEMMs.
TEST(ProfileAttentionTest, MlaWithoutQLoraHasFiveForwardGemms) {
  Case c = DeepSeek(1);
  c.model.mla->q_lora_rank = 0;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kForward), 5);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardDgrad), 5);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad), 5);
  const Op* q = FindOp(p->ops, "q_proj", OpPhase::kForward);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->gemm, (GemmShape{.m = 4096, .n = 128 * 192, .k = 7168}));
  EXPECT_EQ(FindOp(p->ops, "q_norm", OpPhase::kForward), nullptr);
}

TEST(ProfileAttentionTest, SelectiveRecomputeCopiesOnlyTheCore) {
  Case c = DeepSeek(2);
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx(Recompute::kSelective));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(CountPhase(p->ops, OpPhase::kRecompute), 1);
  const Op* re = FindOp(p->ops, "attention_core", OpPhase::kRecompute);
  ASSERT_NE(re, nullptr);
  EXPECT_EQ(re->attention_pass, AttentionPass::kForward);
  // Selective recompute stores less than no recompute: the core's softmax statistics.
  EXPECT_LT(p->activation_bytes_selective.value(), p->activation_bytes.value());
}

// Unfused core (Megatron-LM before FlashAttention), Llama-3.1-8B at TP 4, s = 4096, b = 1:
// 8 local query heads, 2 local kv heads, d = 128, problems = b·a_l = 8.
//   kv_expand  fwd bytes 2·(b·s·(d + d))·(g_l + a_l) = 2·4096·256·10 = 20971520
//   scores     batched GEMM 4096 × 4096 × 128, ×8: 2·4096·4096·128·8 = 34359738368 FLOPs (no
//              causal halving: the mask is applied after the full product)
//   softmax    fwd 2·2·(8·4096·4096) = 536870912 bytes, bwd 3·2·... = 805306368
//   context    batched GEMM 4096 × 128 × 4096, ×8: the same 34359738368 FLOPs
// Backward: each GEMM gives two GEMMs of its FLOPs. Selective recompute copies the four core
// ops and nothing else.
TEST(ProfileAttentionTest, UnfusedCoreIsBatchedGemmsAndSoftmaxOverScores) {
  Case c = Llama(4);
  c.training.attention_kernel = AttentionKernel::kUnfused;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx(Recompute::kSelective));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(FindOp(p->ops, "attention_core", OpPhase::kForward), nullptr);
  const Op* expand = FindOp(p->ops, "kv_expand", OpPhase::kForward);
  const Op* scores = FindOp(p->ops, "attention_scores", OpPhase::kForward);
  const Op* softmax = FindOp(p->ops, "softmax", OpPhase::kForward);
  const Op* softmax_bwd = FindOp(p->ops, "softmax", OpPhase::kBackwardDgrad);
  const Op* context = FindOp(p->ops, "attention_context", OpPhase::kForward);
  ASSERT_NE(expand, nullptr);
  ASSERT_NE(scores, nullptr);
  ASSERT_NE(softmax, nullptr);
  ASSERT_NE(softmax_bwd, nullptr);
  ASSERT_NE(context, nullptr);
  EXPECT_DOUBLE_EQ(expand->bytes.value(), 20971520.0);
  EXPECT_EQ(scores->gemm, (GemmShape{.m = 4096, .n = 4096, .k = 128, .batch = 8}));
  EXPECT_EQ(context->gemm, (GemmShape{.m = 4096, .n = 128, .k = 4096, .batch = 8}));
  EXPECT_DOUBLE_EQ(scores->flops.value(), 34359738368.0);
  EXPECT_DOUBLE_EQ(context->flops.value(), 34359738368.0);
  EXPECT_DOUBLE_EQ(softmax->bytes.value(), 536870912.0);
  EXPECT_DOUBLE_EQ(softmax_bwd->bytes.value(), 805306368.0);
  EXPECT_NE(FindOp(p->ops, "attention_scores", OpPhase::kBackwardDgrad), nullptr);
  EXPECT_NE(FindOp(p->ops, "attention_context", OpPhase::kBackwardWgrad), nullptr);
  EXPECT_EQ(CountOps(p->ops, OpKind::kAttention, OpPhase::kForward), 0);
  // Selective recompute: kv_expand, scores, softmax and context again, not the projections.
  EXPECT_EQ(CountPhase(p->ops, OpPhase::kRecompute), 4);
  EXPECT_EQ(FindOp(p->ops, "qkv_proj", OpPhase::kRecompute), nullptr);
  EXPECT_NE(FindOp(p->ops, "softmax", OpPhase::kRecompute), nullptr);
  // The stored softmax output (2 bytes per score, no dropout) is what selective drops:
  // 2·8·4096·4096 = 268435456 bytes.
  EXPECT_DOUBLE_EQ(p->activation_bytes.value() - p->activation_bytes_selective.value(),
                   268435456.0);
}

}  // namespace
}  // namespace projector
