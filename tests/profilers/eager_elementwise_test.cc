// Eager PyTorch elementwise kernels on the PyTorch-native stacks (llm-foundry, torchtitan)
// without torch.compile: RMSNorm, RoPE and SwiGLU one kernel per op, the copies around SDPA and
// the summed input gradients of separate projections. The byte counts are the closed forms of
// profiler_internal.h, which tools/eager_bytes.py checks against PyTorch's traced autograd graph.
#include <iterator>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using Case = ::projector::testing::ProfilerCase;

// A module profiled on the case as given (eager on a PyTorch-native stack) and with
// torch.compile (fused kernels).
struct EagerAndFused {
  absl::StatusOr<ModuleProfile> eager, fused;
};
template <typename Profile>
EagerAndFused ProfileBoth(const Case& c, Profile profile) {
  Case compiled = c;
  compiled.training.torch_compile = true;
  return {profile(c.Ctx()), profile(compiled.Ctx())};
}

// RMSNorm per element, bf16 (e = 2) and fp32 intermediates (4):
//   forward  to fp32 2+4, pow 4+4, mean 4, mul 4+4, to bf16 4+2, mul by weight 2+2 = 36
//            (4e + 28) over 8 kernels (with add-eps and rsqrt on the row statistics);
//   backward 8e + 76 = 92 over 16 kernels.
// SwiGLU per output element: silu 2+2, mul 4+2 = 10; backward mul 4+2 twice, silu_backward
// 4+2 = 18. RoPE per rotated element: to fp32 2+4, complex mul 4+4, to bf16 4+2 = 20 each way,
// +8 (an fp32 contiguous copy) for a gradient that arrives through a transpose.
TEST(EagerKernelsTest, ClosedFormsPerElement) {
  const profiler_internal::EagerKernels norm = profiler_internal::EagerRmsNorm(2.0);
  EXPECT_DOUBLE_EQ(norm.forward_bytes, 36.0);
  EXPECT_DOUBLE_EQ(norm.backward_bytes, 92.0);
  EXPECT_EQ(norm.forward_launches, 8);
  EXPECT_EQ(norm.backward_launches, 16);
  // fp32 activations: 4·4 + 28 and 8·4 + 76.
  EXPECT_DOUBLE_EQ(profiler_internal::EagerRmsNorm(4.0).forward_bytes, 44.0);
  EXPECT_DOUBLE_EQ(profiler_internal::EagerRmsNorm(4.0).backward_bytes, 108.0);
  const profiler_internal::EagerKernels swiglu = profiler_internal::EagerSwiGlu(2.0);
  EXPECT_DOUBLE_EQ(swiglu.forward_bytes, 10.0);
  EXPECT_DOUBLE_EQ(swiglu.backward_bytes, 18.0);
  EXPECT_EQ(swiglu.forward_launches, 2);
  EXPECT_EQ(swiglu.backward_launches, 3);
  const profiler_internal::EagerKernels strided = profiler_internal::EagerRope(2.0, true);
  const profiler_internal::EagerKernels contiguous = profiler_internal::EagerRope(2.0, false);
  EXPECT_DOUBLE_EQ(strided.forward_bytes, 20.0);
  EXPECT_DOUBLE_EQ(strided.backward_bytes, 28.0);
  EXPECT_DOUBLE_EQ(contiguous.backward_bytes, 20.0);
  EXPECT_EQ(strided.backward_launches, 4);
  EXPECT_EQ(contiguous.backward_launches, 3);
}

// The two pre-norms of a Llama layer on the torchtitan stack: 36 and 92 bytes per element and
// 8 / 16 launches each; they keep the fp32 input copy and the bf16 output, 6 bytes per element
// each, where the fused norms keep their 2-byte input. torch.compile and the megatron stack
// give the fused kernels back; the residual adds are one kernel either way.
TEST(EagerElementwiseTest, RmsNormRunsItsDecomposition) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  const double n = 1024.0 * 4096;
  absl::StatusOr<ModuleProfile> eager = ProfileNorms(c.Ctx());
  ASSERT_THAT(eager, IsOk());
  const Op* fwd = FindOp(eager->ops, "input_norm", OpPhase::kForward);
  const Op* bwd = FindOp(eager->ops, "pre_mlp_norm", OpPhase::kBackwardDgrad);
  ASSERT_NE(fwd, nullptr);
  ASSERT_NE(bwd, nullptr);
  EXPECT_THAT(fwd->bytes.value(), IsNearRel(36 * n, 1e-12));
  EXPECT_EQ(fwd->memory.launches, 8);
  EXPECT_THAT(bwd->bytes.value(), IsNearRel(92 * n, 1e-12));
  EXPECT_EQ(bwd->memory.launches, 16);
  EXPECT_THAT(FindOp(eager->ops, "mlp_residual_add", OpPhase::kForward)->bytes.value(),
              IsNearRel(6 * n, 1e-12));
  EXPECT_THAT(eager->activation_bytes.value(), IsNearRel(2 * 6 * n, 1e-12));

  for (bool megatron : {false, true}) {
    Case fused = c;
    if (megatron) {
      fused.training.stack = TrainingStack::kMegatron;
    } else {
      fused.training.torch_compile = true;
    }
    absl::StatusOr<ModuleProfile> p = ProfileNorms(fused.Ctx());
    ASSERT_THAT(p, IsOk());
    SCOPED_TRACE(megatron ? "megatron" : "torch.compile");
    EXPECT_THAT(FindOp(p->ops, "input_norm", OpPhase::kForward)->bytes.value(),
                IsNearRel(4 * n, 1e-12));
    EXPECT_EQ(FindOp(p->ops, "input_norm", OpPhase::kForward)->memory.launches, 1);
    EXPECT_THAT(p->activation_bytes.value(), IsNearRel(2 * 2 * n, 1e-12));
  }
}

// Llama-3.1-8B attention (32 query heads, 8 kv heads of 128; T = 1024, TP 1) on torchtitan:
// per token q = 4096 and k = v = 1024 elements.
//   rope        forward 20·(q + k); backward 28·q (strided) + 20·k (repeat_kv's backward sums
//               K's gradient into a contiguous tensor); 6 and 7 launches;
//   repeat_kv   K and V each read 2k and write 2q: 2·2·(q + k) both ways, 2 launches;
//   sdpa_layout the output's contiguous copy 2·2·q forward; no backward copy under GQA;
//   input_grad_sum  wq, wk and wv are separate: two adds of 3·2 bytes over T×4096 after the
//               qkv dgrad;
//   activations SDPA keeps K and V expanded: + 2·2·(q − k) per token.
TEST(EagerElementwiseTest, GqaAttentionGlue) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  auto [eager, fused] = ProfileBoth(c, [](const ProfileContext& x) { return ProfileAttention(x); });
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(fused, IsOk());
  const double t = 1024, q = 4096, k = 1024;
  const Op* rope_f = FindOp(eager->ops, "rope", OpPhase::kForward);
  const Op* rope_b = FindOp(eager->ops, "rope", OpPhase::kBackwardDgrad);
  ASSERT_NE(rope_f, nullptr);
  ASSERT_NE(rope_b, nullptr);
  EXPECT_THAT(rope_f->bytes.value(), IsNearRel(t * 20 * (q + k), 1e-12));
  EXPECT_THAT(rope_b->bytes.value(), IsNearRel(t * (28 * q + 20 * k), 1e-12));
  EXPECT_EQ(rope_f->memory.launches, 6);
  EXPECT_EQ(rope_b->memory.launches, 7);
  EXPECT_THAT(FindOp(eager->ops, "repeat_kv", OpPhase::kForward)->bytes.value(),
              IsNearRel(t * 4 * (q + k), 1e-12));
  EXPECT_THAT(FindOp(eager->ops, "repeat_kv", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(t * 4 * (q + k), 1e-12));
  EXPECT_THAT(FindOp(eager->ops, "sdpa_layout", OpPhase::kForward)->bytes.value(),
              IsNearRel(t * 4 * q, 1e-12));
  EXPECT_EQ(FindOp(eager->ops, "sdpa_layout", OpPhase::kBackwardDgrad), nullptr);
  const Op* sum = FindOp(eager->ops, "input_grad_sum", OpPhase::kBackwardDgrad);
  ASSERT_NE(sum, nullptr);
  EXPECT_THAT(sum->bytes.value(), IsNearRel(2 * 3 * 2 * t * 4096, 1e-12));
  EXPECT_EQ(sum->memory.launches, 2);
  EXPECT_THAT(eager->activation_bytes.value() - fused->activation_bytes.value(),
              IsNearRel(t * 2 * 2 * (q - k), 1e-12));
  // torch.compile: one fused rope kernel (read + write 2 bytes), no copies, no gradient sums.
  EXPECT_THAT(FindOp(fused->ops, "rope", OpPhase::kForward)->bytes.value(),
              IsNearRel(t * 4 * (q + k), 1e-12));
  for (const char* name : {"repeat_kv", "sdpa_layout", "input_grad_sum"}) {
    for (const Op& op : fused->ops) EXPECT_NE(op.name, name);
  }
}

// With QK-norm (Qwen3-style, on Llama-3.1-8B's shapes) the eager RMSNorm over Q and K runs its
// decomposition (36 B per element forward over T·(a + g)·d = 1024·5120) and also keeps its fp32
// input copy: 4 B per element more than the fused norm, on top of the expanded K and V.
TEST(EagerElementwiseTest, QkNormRunsEagerlyAndKeepsItsFp32Copy) {
  ModelSpec m = testing::Llama31_8B();
  m.qk_norm = true;
  Case c(m);
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  auto [eager, fused] = ProfileBoth(c, [](const ProfileContext& x) { return ProfileAttention(x); });
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(fused, IsOk());
  const double t = 1024, q = 4096, k = 1024;
  EXPECT_THAT(FindOp(eager->ops, "qk_norm", OpPhase::kForward)->bytes.value(),
              IsNearRel(36 * t * (q + k), 1e-12));
  EXPECT_THAT(eager->activation_bytes.value() - fused->activation_bytes.value(),
              IsNearRel(t * 2 * 2 * (q - k) + 4 * t * (q + k), 1e-12));
}

// Without GQA (32 kv heads) there is no repeat_kv: K's gradient arrives through the transpose
// too (28 bytes per element in rope's backward) and V's is copied by sdpa_layout (2·2 bytes).
TEST(EagerElementwiseTest, MhaCopiesTheStridedGradients) {
  ModelSpec m = testing::Llama31_8B();
  m.num_kv_heads = 32;
  Case c(m);
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  absl::StatusOr<ModuleProfile> p = ProfileAttention(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const double t = 1024, q = 4096;
  EXPECT_THAT(FindOp(p->ops, "rope", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(t * 28 * (q + q), 1e-12));
  EXPECT_EQ(FindOp(p->ops, "rope", OpPhase::kBackwardDgrad)->memory.launches, 8);
  EXPECT_EQ(FindOp(p->ops, "repeat_kv", OpPhase::kForward), nullptr);
  EXPECT_THAT(FindOp(p->ops, "sdpa_layout", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(t * 4 * q, 1e-12));
}

// SwiGLU MLP (T = 1024, ffn 14336): 10 and 18 bytes per output element over 2 and 3 kernels,
// the gate and up projections' input gradients summed (3·2 bytes over T×4096), and silu(g)
// kept: 4 instead of 3 ffn-wide tensors.
TEST(EagerElementwiseTest, SwiGluMlp) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kLlmFoundry;
  auto [eager, fused] = ProfileBoth(c, [](const ProfileContext& x) { return ProfileDenseMlp(x); });
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(fused, IsOk());
  const double n = 1024.0 * 14336;
  EXPECT_THAT(FindOp(eager->ops, "swiglu", OpPhase::kForward)->bytes.value(),
              IsNearRel(10 * n, 1e-12));
  EXPECT_THAT(FindOp(eager->ops, "swiglu", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(18 * n, 1e-12));
  EXPECT_EQ(FindOp(eager->ops, "swiglu", OpPhase::kBackwardDgrad)->memory.launches, 3);
  EXPECT_THAT(FindOp(eager->ops, "input_grad_sum", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(6 * 1024.0 * 4096, 1e-12));
  EXPECT_THAT(FindOp(fused->ops, "swiglu", OpPhase::kForward)->bytes.value(),
              IsNearRel(6 * n, 1e-12));
  EXPECT_EQ(FindOp(fused->ops, "input_grad_sum", OpPhase::kBackwardDgrad), nullptr);
  EXPECT_THAT(eager->activation_bytes.value() - fused->activation_bytes.value(),
              IsNearRel(2 * n, 1e-12));
}

// Grouped experts (Mixtral, turbo grouped GEMM): the eager SwiGLU runs once over all the routed
// rows, 2 and 3 kernels whatever the expert count, at 10/6 and 18/10 of the fused bytes.
TEST(EagerElementwiseTest, GroupedExpertsRunOneEagerSwiGlu) {
  Case c(testing::Mixtral8x7B());
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  auto [eager, fused] = ProfileBoth(c, [](const ProfileContext& x) { return ProfileMoeMlp(x); });
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(fused, IsOk());
  const Op* f = FindOp(eager->ops, "expert_act", OpPhase::kForward);
  const Op* b = FindOp(eager->ops, "expert_act", OpPhase::kBackwardDgrad);
  ASSERT_NE(f, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(f->memory.launches, 2);
  EXPECT_EQ(b->memory.launches, 3);
  EXPECT_THAT(f->bytes.value(),
              IsNearRel(FindOp(fused->ops, "expert_act", OpPhase::kForward)->bytes.value() * 10 / 6,
                        1e-12));
  EXPECT_THAT(
      b->bytes.value(),
      IsNearRel(FindOp(fused->ops, "expert_act", OpPhase::kBackwardDgrad)->bytes.value() * 18 / 10,
                1e-12));
}

// MPT's code (LayerNorm via F.layer_norm, GELU, ALiBi, one fused Wqkv) is one kernel per block
// eagerly too: the llm-foundry stack's op lists are the same with and without torch.compile.
TEST(EagerElementwiseTest, MptStyleLayersHaveNothingToDecompose) {
  ModelSpec m = testing::GptMha();
  m.position_embedding = PositionEmbedding::kAlibi;
  Case c(m);
  c.training.seq_len = 2048;
  c.training.stack = TrainingStack::kLlmFoundry;
  for (auto profile : {+[](const ProfileContext& x) { return ProfileAttention(x); },
                       +[](const ProfileContext& x) { return ProfileNorms(x); },
                       +[](const ProfileContext& x) { return ProfileDenseMlp(x); }}) {
    auto [a, b] = ProfileBoth(c, profile);
    ASSERT_THAT(a, IsOk());
    ASSERT_THAT(b, IsOk());
    ASSERT_EQ(a->ops.size(), b->ops.size());
    for (size_t i = 0; i < a->ops.size(); ++i) {
      EXPECT_EQ(a->ops[i].name, b->ops[i].name);
      EXPECT_DOUBLE_EQ(a->ops[i].bytes.value(), b->ops[i].bytes.value());
    }
    EXPECT_DOUBLE_EQ(a->activation_bytes.value(), b->activation_bytes.value());
  }
}

// MPT's code chunks the fused Wqkv output into Q, K and V; the kernel's backward returns dQ,
// dK and dV apart, and autograd's split backward concatenates them just before qkv_proj's
// dgrad: one cat reading and writing e = 2 bytes per element of the T x 3h output,
// 2·2·2048·(16 + 2·16)·128 = 50,331,648 bytes (tools/eager_bytes.py traces the same 4 B per
// element). torch.compile keeps it; the megatron stack (TE's split returns a view) and
// torchtitan's separate wq/wk/wv (RoPE models) have none.
TEST(EagerElementwiseTest, FusedQkvGradientsAreConcatenatedOnPyTorchStacks) {
  ModelSpec m = testing::GptMha();
  m.position_embedding = PositionEmbedding::kAlibi;
  Case c(m);
  c.training.seq_len = 2048;
  c.training.stack = TrainingStack::kLlmFoundry;
  auto [eager, compiled] =
      ProfileBoth(c, [](const ProfileContext& x) { return ProfileAttention(x); });
  ASSERT_THAT(eager, IsOk());
  ASSERT_THAT(compiled, IsOk());
  for (const ModuleProfile* p : {&*eager, &*compiled}) {
    const Op* cat = FindOp(p->ops, "output_grad_cat", OpPhase::kBackwardDgrad);
    ASSERT_NE(cat, nullptr);
    EXPECT_DOUBLE_EQ(cat->bytes.value(), 50331648.0);
    EXPECT_EQ(cat->memory.launches, 1);
    EXPECT_EQ(FindOp(p->ops, "output_grad_cat", OpPhase::kForward), nullptr);
    // Right before the dgrad of the projection it belongs to.
    const auto next = std::next(p->ops.begin(), cat - p->ops.data() + 1);
    ASSERT_NE(next, p->ops.end());
    EXPECT_EQ(next->name, "qkv_proj");
    EXPECT_EQ(next->phase, OpPhase::kBackwardDgrad);
  }
  c.training.stack = TrainingStack::kMegatron;
  absl::StatusOr<ModuleProfile> megatron = ProfileAttention(c.Ctx());
  ASSERT_THAT(megatron, IsOk());
  EXPECT_EQ(FindOp(megatron->ops, "output_grad_cat", OpPhase::kBackwardDgrad), nullptr);
  Case llama(testing::Llama31_8B());
  llama.training.seq_len = 1024;
  llama.training.stack = TrainingStack::kTorchTitan;
  absl::StatusOr<ModuleProfile> titan = ProfileAttention(llama.Ctx());
  ASSERT_THAT(titan, IsOk());
  EXPECT_EQ(FindOp(titan->ops, "output_grad_cat", OpPhase::kBackwardDgrad), nullptr);
}

// Full recompute re-runs the eager forward kernels too.
TEST(EagerElementwiseTest, FullRecomputeRerunsTheEagerKernels) {
  Case c(testing::Llama31_8B());
  c.training.seq_len = 1024;
  c.training.stack = TrainingStack::kTorchTitan;
  absl::StatusOr<ModuleProfile> p = ProfileNorms(c.Ctx(Recompute::kFull));
  ASSERT_THAT(p, IsOk());
  const Op* again = FindOp(p->ops, "input_norm", OpPhase::kRecompute);
  ASSERT_NE(again, nullptr);
  EXPECT_THAT(again->bytes.value(), IsNearRel(36 * 1024.0 * 4096, 1e-12));
  EXPECT_EQ(again->memory.launches, 8);
}

}  // namespace
}  // namespace projector
