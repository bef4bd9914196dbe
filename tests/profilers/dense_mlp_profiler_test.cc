#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::CountPhase;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::projector::testing::SumFlops;
using ::testing::HasSubstr;
using Case = ::projector::testing::ProfilerCase;

// SwiGLU: fused gate+up fc1 (N = 2·ffn/t), swiglu, fc2 (K = ffn/t). FLOPs 2·T·3·h·ffn/t.
TEST(ProfileDenseMlpTest, SwiGluIsFusedGateUpPlusDown) {
  Case c(testing::Llama31_8B());
  c.parallel.tp = 8;
  c.parallel.sequence_parallel = true;
  c.training.seq_len = 4096;
  absl::StatusOr<ModuleProfile> p = ProfileDenseMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const Op* fc1 = FindOp(p->ops, "fc1_gate_up", OpPhase::kForward);
  const Op* fc2 = FindOp(p->ops, "fc2_down", OpPhase::kForward);
  const Op* act = FindOp(p->ops, "swiglu", OpPhase::kForward);
  ASSERT_NE(fc1, nullptr);
  ASSERT_NE(fc2, nullptr);
  ASSERT_NE(act, nullptr);
  EXPECT_EQ(fc1->gemm, (GemmShape{.m = 4096, .n = 2 * 1792, .k = 4096}));
  EXPECT_EQ(fc2->gemm, (GemmShape{.m = 4096, .n = 4096, .k = 1792}));
  EXPECT_EQ(act->kind, OpKind::kMemory);
  // SwiGLU reads gate and up and writes the product: 3·T·ffn/t·2 bytes.
  EXPECT_THAT(act->bytes.value(), IsNearRel(3.0 * 4096 * 1792 * 2, 1e-12));
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kForward),
              IsNearRel(2.0 * 4096 * 3 * 4096 * 1792, 1e-12));
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardDgrad), 2);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad), 2);
  EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kBackwardDgrad), 1);
  EXPECT_THAT(p->dense_parameters, IsNearRel(3.0 * 4096 * 1792, 1e-12));
  EXPECT_EQ(p->expert_parameters, 0.0);
}

double SumBytes(const OpList& ops, OpKind kind, OpPhase phase) {
  double bytes = 0;
  for (const Op& op : ops) {
    if (op.kind == kind && op.phase == phase) bytes += op.bytes.value();
  }
  return bytes;
}

// FP8 (Transformer Engine) casts of a small SwiGLU MLP: h = 1024, ffn = 4096 (fc1 N = 8192),
// T = 512; bf16 e = 2, fp8 q = 1 byte. fc1's input comes from the fused pre-MLP norm
// (TELayerNormColumnParallelLinear), fc2's is cast from the bf16 SwiGLU output.
//   once per step: weight casts 4·(1024·8192 + 4096·1024) = 50,331,648 B
//   forward: fc2 input cast 4·512·4096 = 8,388,608 B; SwiGLU 3·2·512·4096 = 12,582,912 B
//   dgrad:   dY casts 4·512·(8192 + 1024) = 18,874,368 B; SwiGLU bwd 5·2·512·4096 = 20,971,520 B
//   wgrad:   fc1 input transpose 2·512·1024 = 1,048,576 B
TEST(ProfileDenseMlpTest, Fp8CastBytesMatchClosedForm) {
  Case c(testing::Llama31_8B());
  c.model.hidden_size = 1024;
  c.model.ffn_hidden_size = 4096;
  c.training.seq_len = 512;
  c.training.global_batch = 8;
  c.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> p = ProfileDenseMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(SumBytes(p->ops, OpKind::kMemory, OpPhase::kForward),
              IsNearRel(8388608.0 + 12582912.0, 1e-12));
  EXPECT_THAT(SumBytes(p->ops, OpKind::kMemory, OpPhase::kOncePerStep),
              IsNearRel(50331648.0, 1e-12));
  EXPECT_THAT(SumBytes(p->ops, OpKind::kMemory, OpPhase::kBackwardDgrad),
              IsNearRel(18874368.0 + 20971520.0, 1e-12));
  EXPECT_THAT(SumBytes(p->ops, OpKind::kMemory, OpPhase::kBackwardWgrad),
              IsNearRel(1048576.0, 1e-12));
  // fc1 has no input cast (the fused norm writes fp8); fc2 has one; SwiGLU.
  EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kForward), 2);
  EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kOncePerStep), 2);
  EXPECT_EQ(FindOp(p->ops, "fc2_down", OpPhase::kForward)->gemm.dtype, DType::kFp8);
}

// Plain MLP: up, gelu, down; FLOPs 2·T·2·h·ffn/t.
TEST(ProfileDenseMlpTest, GeluHasTwoGemms) {
  Case c(testing::GptMha());
  c.parallel.tp = 2;
  c.training.seq_len = 2048;
  absl::StatusOr<ModuleProfile> p = ProfileDenseMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kForward), 2);
  EXPECT_NE(FindOp(p->ops, "gelu", OpPhase::kForward), nullptr);
  EXPECT_EQ(FindOp(p->ops, "fc1_up", OpPhase::kForward)->gemm.n, 4096);
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kForward),
              IsNearRel(2.0 * 2048 * 2 * 2048 * 4096, 1e-12));
  // Weights 2·h·ffn/t, fc1 bias ffn/t, replicated fc2 bias h.
  EXPECT_THAT(p->dense_parameters, IsNearRel(2.0 * 2048 * 4096 + 4096 + 2048, 1e-12));
}

TEST(ProfileDenseMlpTest, FullRecomputeCopiesEveryForwardOp) {
  Case c(testing::Llama31_8B());
  absl::StatusOr<ModuleProfile> p = ProfileDenseMlp(c.Ctx(Recompute::kFull));
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(CountPhase(p->ops, OpPhase::kRecompute), 3);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kRecompute), 2);
  absl::StatusOr<ModuleProfile> sel = ProfileDenseMlp(c.Ctx(Recompute::kSelective));
  ASSERT_THAT(sel, IsOk());
  EXPECT_EQ(CountPhase(sel->ops, OpPhase::kRecompute), 0);
}

TEST(ProfileDenseMlpTest, FfnNotDivisibleByTpIsFailedPrecondition) {
  Case c(testing::Llama31_8B());
  c.model.ffn_hidden_size = 14337;
  c.parallel.tp = 2;
  EXPECT_THAT(ProfileDenseMlp(c.Ctx()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("ffn_hidden_size 14337")));
  c.model.ffn_hidden_size = 0;
  EXPECT_THAT(ProfileDenseMlp(c.Ctx()), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("ffn_hidden_size must be > 0")));
}

}  // namespace
}  // namespace projector
