#include "profilers/inference_profiler.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

const Op* Named(const OpList& ops, std::string_view name) {
  return FindOp(ops, name, OpPhase::kForward);
}

// Llama-3.1-8B: 8 KV heads of 128 → 2·8·128 = 2048 K and V elements per token and layer; TP8
// leaves one head per GPU (256); TP16 replicates it (still 256, not 128).
TEST(KvCacheTest, ElementsPerTokenFollowKvHeadsPerGpu) {
  const ModelSpec m = testing::Llama31_8B();
  EXPECT_EQ(KvElementsPerTokenPerLayer({.model = m, .tp = 1}), 2048);
  EXPECT_EQ(KvElementsPerTokenPerLayer({.model = m, .tp = 8}), 256);
  EXPECT_EQ(KvElementsPerTokenPerLayer({.model = m, .tp = 16}), 256);
  // fp8 KV: one byte per element.
  EXPECT_DOUBLE_EQ(KvBytesPerTokenPerLayer({.model = m, .tp = 1, .kv_dtype = DType::kFp8}).value(),
                   2048.0);
  EXPECT_DOUBLE_EQ(KvBytesPerTokenPerLayer({.model = m, .tp = 1}).value(), 4096.0);
}

// DeepSeek-V3 MLA caches the 512-wide latent and the 64-wide RoPE key, on every TP rank.
TEST(KvCacheTest, MlaCachesTheLatent) {
  const ModelSpec m = testing::DeepSeekV3();
  EXPECT_EQ(KvElementsPerTokenPerLayer({.model = m, .tp = 8}), 512 + 64);
}

// The token-linear forward of one dense layer at 512 tokens: the four GEMMs with M = 512 and
// the TP-split N/K, no attention kernel, no backward, and the KV-cache write of the 512 tokens
// (2048 elements each, read bf16 and written bf16: 512·2048·4 bytes).
TEST(InferenceLayerOpsTest, DenseLayerGemmsAndKvWrite) {
  const ModelSpec m = testing::Llama31_8B();
  absl::StatusOr<OpList> ops = InferenceLayerOps({.model = m, .tp = 2}, 512, false);
  ASSERT_THAT(ops, IsOk());
  for (const Op& op : *ops) {
    EXPECT_EQ(op.phase, OpPhase::kForward) << op.name;
    EXPECT_NE(op.kind, OpKind::kAttention) << op.name;
  }
  const Op* qkv = Named(*ops, "qkv_proj");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->gemm.m, 512);
  EXPECT_EQ(qkv->gemm.n, (32 + 2 * 8) * 128 / 2);  // 3072
  EXPECT_EQ(qkv->gemm.k, 4096);
  const Op* down = Named(*ops, "fc2_down");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->gemm.k, 14336 / 2);
  const Op* write = Named(*ops, "kv_cache_write");
  ASSERT_NE(write, nullptr);
  EXPECT_DOUBLE_EQ(write->bytes.value(), 512.0 * (2 * 4 * 128) * 4.0);
}

// FP8 weights are stored quantised: no weight cast per pass, but the activations are cast
// before each FP8 GEMM. The MoE router trains with a load-balancing loss; serving has none.
TEST(InferenceLayerOpsTest, Fp8HasNoWeightCastsAndMoeNoAuxLoss) {
  const ModelSpec dense = testing::Llama31_8B();
  absl::StatusOr<OpList> ops =
      InferenceLayerOps({.model = dense, .tp = 1, .weight_dtype = DType::kFp8}, 64, false);
  ASSERT_THAT(ops, IsOk());
  EXPECT_EQ(Named(*ops, "weight_fp8_cast"), nullptr);
  EXPECT_NE(Named(*ops, "input_fp8_cast"), nullptr);
  EXPECT_EQ(Named(*ops, "qkv_proj")->gemm.dtype, DType::kFp8);

  const ModelSpec moe = testing::Mixtral8x7B();
  absl::StatusOr<OpList> moe_ops = InferenceLayerOps({.model = moe, .tp = 2}, 64, true);
  ASSERT_THAT(moe_ops, IsOk());
  EXPECT_NE(Named(*moe_ops, "router"), nullptr);
  EXPECT_EQ(Named(*moe_ops, "router_aux_loss"), nullptr);
}

// Qwen3-30B-A3B routes each token to 8 of 128 experts. One decode token touches 8 experts
// (128·(1 − (1 − 8/128)^1) = 8), one row each; 64 tokens leave an expert idle with probability
// (15/16)^64 = 0.0161, so ceil(128·0.9839) = 126 experts run, ceil(512/126) = 5 rows each. Split
// by TP4 every expert's FFN is 768/4 = 192 wide; spread by expert parallelism each rank holds
// 32 whole experts (768), of which a token touches 32·(1 − 15/16) = 2.
TEST(InferenceLayerOpsTest, MoeRunsOnlyTheExpertsItsTokensChoose) {
  const ModelSpec m = *ResolveModel("qwen3-30b-a3b");
  absl::StatusOr<OpList> one = InferenceLayerOps({.model = m, .tp = 4}, 1, true);
  ASSERT_THAT(one, IsOk());
  const Op* fc1 = Named(*one, "expert_fc1");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->gemm.batch, 8);
  EXPECT_EQ(fc1->gemm.m, 1);
  EXPECT_EQ(fc1->gemm.n, 2 * 192);
  absl::StatusOr<OpList> many = InferenceLayerOps({.model = m, .tp = 4}, 64, true);
  ASSERT_THAT(many, IsOk());
  EXPECT_EQ(Named(*many, "expert_fc1")->gemm.batch, 126);
  EXPECT_EQ(Named(*many, "expert_fc1")->gemm.m, 5);
  absl::StatusOr<OpList> ep =
      InferenceLayerOps({.model = m, .tp = 4, .expert_parallel = true}, 1, true);
  ASSERT_THAT(ep, IsOk());
  EXPECT_EQ(Named(*ep, "expert_fc1")->gemm.batch, 2);
  EXPECT_EQ(Named(*ep, "expert_fc1")->gemm.n, 2 * 768);
  // Any token count works under TP (a training micro-batch must split over TP).
  EXPECT_THAT(InferenceLayerOps({.model = m, .tp = 4}, 13, true), IsOk());
}

TEST(InferenceLayerOpsTest, RejectsBadInput) {
  const ModelSpec m = testing::Llama31_8B();
  EXPECT_THAT(InferenceLayerOps({.model = m, .tp = 1}, 0, false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokens per pass")));
  EXPECT_THAT(InferenceLayerOps({.model = m, .tp = 1}, 8, true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no MoE")));
  EXPECT_FALSE(InferenceLayerOps({.model = m, .tp = 3}, 8, false).ok());
}

// A prefill chunk of 256 tokens after 1,000 cached ones attends over 1,256 keys, causal.
TEST(PrefillAttentionTest, ChunkAttendsOverContextAndItself) {
  const ModelSpec m = testing::Llama31_8B();
  const AttentionShape s = PrefillAttentionShape({.model = m, .tp = 4}, 256, 1000);
  EXPECT_EQ(s.num_q_heads, 8);
  EXPECT_EQ(s.num_kv_heads, 2);
  EXPECT_EQ(s.seq_q, 256);
  EXPECT_EQ(s.seq_kv, 1256);
  EXPECT_TRUE(s.causal);
}

// Decode over 10,000 cached tokens of 4 requests, TP1 bf16: the cache read 10,000·2048·2
// bytes plus each query and output 4·32·(128 + 128)·2; FLOPs 2·32·10,000·256.
TEST(DecodeAttentionTest, ReadsEveryCachedElementOnce) {
  const ModelSpec m = testing::Llama31_8B();
  const MemoryOp op = DecodeAttentionOp({.model = m, .tp = 1}, 4, 10000);
  EXPECT_DOUBLE_EQ(op.bytes.value(), 10000.0 * 2048 * 2 + 4.0 * 32 * 256 * 2);
  EXPECT_DOUBLE_EQ(op.flops.value(), 2.0 * 32 * 10000 * 256);
  EXPECT_EQ(op.launches, 2);
}

// All-reduce of 100 tokens' hidden states (4096 bf16) over TP4.
TEST(InferenceTpAllReduceTest, HiddenStatesOfTheNewTokens) {
  const ModelSpec m = testing::Llama31_8B();
  const CollectiveOp c = InferenceTpAllReduce({.model = m, .tp = 4}, 100);
  EXPECT_EQ(c.kind, CollectiveKind::kAllReduce);
  EXPECT_DOUBLE_EQ(c.bytes.value(), 100.0 * 4096 * 2);
  EXPECT_EQ(c.group.size, 4);
}

// The output head projects only the emitting requests' last hidden states: M = 16, N = the
// padded vocabulary over TP (129,024/8 = 16,128), then gathers the logits over TP.
TEST(InferenceOutputOpsTest, ProjectsOnlyEmittingRows) {
  const ModelSpec m = testing::Llama31_8B();
  absl::StatusOr<OpList> ops = InferenceOutputOps({.model = m, .tp = 8}, 16);
  ASSERT_THAT(ops, IsOk());
  const Op* proj = Named(*ops, "output_proj");
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->gemm.m, 16);
  EXPECT_EQ(proj->gemm.n, 16128);
  EXPECT_EQ(ops->back().kind, OpKind::kCollective);
  EXPECT_DOUBLE_EQ(ops->back().collective.bytes.value(), 16.0 * 129024 * 2);
  EXPECT_THAT(InferenceOutputOps({.model = m, .tp = 1}, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("emitting")));
}

// Weights of the whole Llama-3.1-8B on one GPU in bf16 are its parameter count times 2 bytes
// (8.03·10^9: the 32 layers, the embedding and the untied output head; the final norm's 4096
// are the only ones not counted, a relative 5·10^-7).
TEST(InferenceWeightBytesTest, WholeModelIsTwoBytesPerParameter) {
  const ModelSpec m = testing::Llama31_8B();
  absl::StatusOr<Bytes> w = InferenceWeightBytes({.model = m, .tp = 1}, 0, 32, true, true);
  ASSERT_THAT(w, IsOk());
  EXPECT_THAT(w->value(), IsNearRel(2.0 * m.TotalParameters(), 1e-5));
  // TP8 splits everything eightfold but the 32·2·4096 norm weights, which every rank holds (the
  // padded vocabulary, 129,024 rows instead of 128,256, adds 768·4096 parameters per table; the
  // final norm's 4096 are not counted).
  absl::StatusOr<Bytes> w8 = InferenceWeightBytes({.model = m, .tp = 8}, 0, 32, true, true);
  ASSERT_THAT(w8, IsOk());
  const double norms = 32.0 * 2 * 4096;
  EXPECT_THAT(
      w8->value(),
      IsNearRel(2.0 * ((m.TotalParameters() + 2.0 * 768 * 4096 - 4096 - norms) / 8 + norms), 1e-7));
  // FP8 layers with bf16 embedding and head.
  absl::StatusOr<Bytes> f8 =
      InferenceWeightBytes({.model = m, .tp = 1, .weight_dtype = DType::kFp8}, 0, 32, true, true);
  ASSERT_THAT(f8, IsOk());
  const double table = 128256.0 * 4096;
  EXPECT_THAT(f8->value(), IsNearRel((m.TotalParameters() - 2 * table) + 2.0 * 2 * table, 1e-5));
}

}  // namespace
}  // namespace projector
