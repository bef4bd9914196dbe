#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using Case = ::projector::testing::ProfilerCase;

// Two norms and two residual adds, each memory-bound; under SP over T/t tokens.
TEST(ProfileNormsTest, SequenceParallelDividesTokensByTp) {
  for (bool sp : {false, true}) {
    Case c(testing::Llama31_8B());
    c.parallel.tp = 4;
    c.parallel.sequence_parallel = sp;
    c.training.seq_len = 4096;
    c.training.micro_batch = 2;
    absl::StatusOr<ModuleProfile> p = ProfileNorms(c.Ctx());
    ASSERT_THAT(p, IsOk());
    const double n = (sp ? 8192.0 / 4 : 8192.0) * 4096;
    EXPECT_EQ(p->tokens, sp ? 2048 : 8192);
    EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kForward), 4);
    EXPECT_EQ(CountOps(p->ops, OpKind::kMemory, OpPhase::kBackwardDgrad), 4);
    // Norm: read x + write y; residual: read two, write one (bf16).
    EXPECT_THAT(FindOp(p->ops, "input_norm", OpPhase::kForward)->bytes.value(),
                IsNearRel(2 * 2 * n, 1e-12));
    EXPECT_THAT(FindOp(p->ops, "mlp_residual_add", OpPhase::kForward)->bytes.value(),
                IsNearRel(3 * 2 * n, 1e-12));
    // Korthikanti: the two norm inputs, 4sbh (/t under SP).
    EXPECT_THAT(p->activation_bytes.value(), IsNearRel(2 * 2 * n, 1e-12));
    EXPECT_THAT(p->dense_parameters, IsNearRel(2 * 4096, 1e-12));
  }
}

// Under FP8 a norm fused into the next TE linear layer writes fp8 (1 byte): the input norm
// of a standard attention and the pre-MLP norm of a dense layer read 2 and write 1 byte per
// element; MoE's pre-MLP norm (a separate TENorm feeding the router) and MLA's input norm
// (feeding q_down and kv_down) keep bf16 outputs: 4 bytes per element.
TEST(ProfileNormsTest, Fp8NormsFusedIntoLinearsWriteFp8) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.precision = DType::kFp8;
  const double n = 1024.0 * 4096;
  absl::StatusOr<ModuleProfile> dense = ProfileNorms(c.Ctx(), /*moe_layer=*/false);
  absl::StatusOr<ModuleProfile> moe = ProfileNorms(c.Ctx(), /*moe_layer=*/true);
  ASSERT_THAT(dense, IsOk());
  ASSERT_THAT(moe, IsOk());
  EXPECT_THAT(FindOp(dense->ops, "input_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(3 * n, 1e-12));
  EXPECT_THAT(FindOp(dense->ops, "pre_mlp_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(3 * n, 1e-12));
  EXPECT_THAT(FindOp(moe->ops, "pre_mlp_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(4 * n, 1e-12));
  // Backward reads x and dy and writes dx in bf16 either way.
  EXPECT_THAT(FindOp(dense->ops, "input_norm", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(6 * n, 1e-12));
  Case mla(testing::DeepSeekV3());
  mla.training.seq_len = 1024;
  mla.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> mla_norms = ProfileNorms(mla.Ctx(), /*moe_layer=*/true);
  ASSERT_THAT(mla_norms, IsOk());
  EXPECT_THAT(FindOp(mla_norms->ops, "input_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(4 * 1024.0 * 7168, 1e-12));
}

// Hidden dropout on the two residual branches, n = T·h elements at e = 2 bytes. Megatron's
// fused bias-dropout-add writes the 1-byte mask besides the add's three streams: 3e + 1 = 7n
// forward; backward scales the branch gradient by the mask (read dy and the mask, write dx:
// 2e + 1) besides the branch-point sum (3e): 5e + 1 = 11n. An eager stack runs torch's dropout
// as a kernel of its own before the add (read e, write e and the mask): 3e + 2e + 1 = 11n
// forward. Without dropout the add alone: 6n both ways.
TEST(ProfileNormsTest, HiddenDropoutAddsMaskTraffic) {
  const double n = 2048.0 * 2048;
  for (double p : {0.0, 0.1}) {
    for (bool fsdp : {false, true}) {  // megatron (fused) or llm-foundry (eager)
      Case c(testing::GptMha());
      c.training.seq_len = 2048;
      c.training.hidden_dropout = p;
      c.parallel.fsdp = fsdp;
      absl::StatusOr<ModuleProfile> norms = ProfileNorms(c.Ctx());
      ASSERT_THAT(norms, IsOk());
      const double fwd = p == 0 ? 6 : fsdp ? 11 : 7;
      const double bwd = p == 0 ? 6 : 11;
      for (const char* op : {"attention_residual_add", "mlp_residual_add"}) {
        EXPECT_THAT(FindOp(norms->ops, op, OpPhase::kForward)->bytes.value(),
                    IsNearRel(fwd * n, 1e-12))
            << op << " p " << p << " fsdp " << fsdp;
        EXPECT_THAT(FindOp(norms->ops, op, OpPhase::kBackwardDgrad)->bytes.value(),
                    IsNearRel(bwd * n, 1e-12));
      }
    }
  }
}

TEST(ProfileNormsTest, LayerNormHasScaleAndBias) {
  Case c(testing::GptMha());
  absl::StatusOr<ModuleProfile> p = ProfileNorms(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(p->dense_parameters, IsNearRel(4 * 2048, 1e-12));
}

}  // namespace
}  // namespace projector
