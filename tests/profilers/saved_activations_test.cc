// What the profilers keep for backward (ModuleProfile::activation_bytes and
// activation_bytes_selective) where the framework keeps something other than Korthikanti et al.
// 2022's bf16 tensors: Transformer Engine's quantised linear inputs under fp8 (the MoE's in
// moe_mlp_profiler_test.cc) and torchtitan's per-op selective checkpointing.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using Case = ::projector::testing::ProfilerCase;

// Llama-3.1-8B MLP under fp8 (T = 4096, h = 4096, f = 14336, SwiGLU, TP 1, Megatron without
// dropout): fc1's input (the norm output) and fc2's input are the fp8 copies, the SwiGLU keeps
// both bf16 fc1 halves: T·(1·h + 2·2·f + 1·f) against T·(2·h + 2·2·f + 2·f) in bf16.
TEST(SavedActivationsTest, DenseMlpKeepsQuantisedLinearInputs) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 4096;
  c.training.micro_batch = 1;
  absl::StatusOr<ModuleProfile> bf16 = ProfileDenseMlp(c.Ctx());
  c.training.precision = DType::kFp8;
  c.training.fp8_recipe = Fp8Recipe::kMxfp8;
  absl::StatusOr<ModuleProfile> mxfp8 = ProfileDenseMlp(c.Ctx());
  ASSERT_THAT(bf16, IsOk());
  ASSERT_THAT(mxfp8, IsOk());
  const double t = 4096, h = 4096, f = 14336, q = 1.0 + 1.0 / 32;
  EXPECT_THAT(bf16->activation_bytes.value(), IsNearRel(t * (2 * h + 4 * f + 2 * f), 1e-12));
  EXPECT_THAT(mxfp8->activation_bytes.value(), IsNearRel(t * (q * h + 4 * f + q * f), 1e-12));
}

// torchtitan's per-op SAC on a Llama-3.1-8B block (T = 1024, h = 4096, 32 heads of 128, 8 kv
// heads, f = 14336, bf16): the checkpoint keeps the block's input; of the mms wq wk wv wo w1 w3
// w2 the odd ones (wq, wv, w1, w2) keep their outputs, and SDPA keeps O and its fp32
// log-sum-exp per head. Per token:
//   norms      2·h                         =  8,192 B
//   attention  2·4096 (wq) + 2·1024 (wv) + 2·4096 (O) + 4·32 (lse)  = 18,560 B
//   mlp        2·f (w1) + 2·h (w2)         = 36,864 B
TEST(SavedActivationsTest, TorchTitanOpSacKeepsTheSavedOpsOutputs) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.micro_batch = 1;
  c.training.stack = TrainingStack::kTorchTitan;
  const ProfileContext ctx = c.Ctx(Recompute::kSelective);
  absl::StatusOr<ModuleProfile> norms = ProfileNorms(ctx);
  absl::StatusOr<ModuleProfile> attention = ProfileAttention(ctx);
  absl::StatusOr<ModuleProfile> mlp = ProfileDenseMlp(ctx);
  ASSERT_THAT(norms, IsOk());
  ASSERT_THAT(attention, IsOk());
  ASSERT_THAT(mlp, IsOk());
  const double t = 1024;
  EXPECT_THAT(norms->activation_bytes_selective.value(), IsNearRel(t * 8192, 1e-12));
  EXPECT_THAT(attention->activation_bytes_selective.value(), IsNearRel(t * 18560, 1e-12));
  EXPECT_THAT(mlp->activation_bytes_selective.value(), IsNearRel(t * 36864, 1e-12));
  // Without recompute every module keeps more than its saved ops' outputs.
  EXPECT_GT(norms->activation_bytes.value(), norms->activation_bytes_selective.value());
  EXPECT_GT(attention->activation_bytes.value(), attention->activation_bytes_selective.value());
  EXPECT_GT(mlp->activation_bytes.value(), mlp->activation_bytes_selective.value());
}

// Under float8 (torchao's Float8Linear, the rowwise recipe) every linear multiplies with
// aten._scaled_mm, which the policy neither saves nor counts: the attention keeps only SDPA's
// O and log-sum-exp (2·4096 + 4·32 bytes a token), the MLP nothing, and every forward GEMM of
// both runs again in backward at its full width.
TEST(SavedActivationsTest, TorchTitanOpSacReRunsEveryFloat8Linear) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.micro_batch = 1;
  c.training.stack = TrainingStack::kTorchTitan;
  c.training.precision = DType::kFp8;
  c.training.fp8_recipe = Fp8Recipe::kRowwise;
  const ProfileContext ctx = c.Ctx(Recompute::kSelective);
  absl::StatusOr<ModuleProfile> attention = ProfileAttention(ctx);
  absl::StatusOr<ModuleProfile> mlp = ProfileDenseMlp(ctx);
  ASSERT_THAT(attention, IsOk());
  ASSERT_THAT(mlp, IsOk());
  EXPECT_THAT(attention->activation_bytes_selective.value(), IsNearRel(1024.0 * 8320, 1e-12));
  EXPECT_DOUBLE_EQ(mlp->activation_bytes_selective.value(), 0.0);
  for (const ModuleProfile* p : {&*attention, &*mlp}) {
    for (const Op& op : p->ops) {
      if (op.phase != OpPhase::kForward || op.kind != OpKind::kGemm) continue;
      bool rerun_whole = false;
      for (const Op& r : p->ops) {
        rerun_whole = rerun_whole || (r.phase == OpPhase::kRecompute && r.name == op.name &&
                                      r.gemm == op.gemm);
      }
      EXPECT_TRUE(rerun_whole) << op.name;
    }
  }
}

}  // namespace
}  // namespace projector
