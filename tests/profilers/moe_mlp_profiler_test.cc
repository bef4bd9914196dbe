#include "backends/simulate/tile_gemm_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/compute_hardware.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountOps;
using ::projector::testing::D;
using ::projector::testing::FakeBackends;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::projector::testing::SumFlops;
using ::testing::HasSubstr;
using Case = ::projector::testing::ProfilerCase;

// Mixtral-8x7B, TP2 + SP, EP4, s = 4096, b = 1: T = 4096, T_l = T/t = 2048 routed per GPU,
// pairs = T_l·k = 4096, local experts 8/4 = 2, rows per expert 2048.
Case Mixtral(bool turbo) {
  Case c(testing::Mixtral8x7B());
  c.parallel.tp = 2;
  c.parallel.sequence_parallel = true;
  c.parallel.ep = 4;
  c.parallel.turbo_grouped_gemm = turbo;
  c.training.seq_len = 4096;
  c.training.micro_batch = 1;
  return c;
}

double ExpertFlops(const ModuleProfile& p, OpPhase phase) {
  double f = 0;
  for (const Op& op : p.ops) {
    if (op.phase == phase && op.kind == OpKind::kGemm && op.name.starts_with("expert_")) {
      f += op.flops.value();
    }
  }
  return f;
}

// Kept for backward on Mixtral TP2+SP EP4 (T_l = 2048 routed tokens per GPU, k = 2, pairs
// = 4096), 8 experts, h = 4096, expert ffn f = 14336 (SwiGLU), no shared experts, no dropout:
//   MoE input (router input)   2·T_l·h
//   router probabilities       4·T_l·8
//   permuted fc1 input         s·pairs·h      (s = 2 in bf16, 1 under delayed fp8)
//   fc1 output (both halves)   2·2·pairs·f
//   fc2 input                  s·pairs·f
//   permuted probabilities     4·pairs        (the weighted activation's; the unpermutation
//                                              keeps nothing)
double MixtralMoeBytes(double s) {
  const double tl = 2048, pairs = 4096, h = 4096, f = 14336;
  return 2 * tl * h + 4 * tl * 8 + s * pairs * h + 4 * pairs * f + s * pairs * f + 4 * pairs;
}

TEST(ProfileMoeMlpTest, KeepsQuantisedExpertInputsAndThePermutedProbabilities) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> bf16 = ProfileMoeMlp(c.Ctx());
  c.training.precision = DType::kFp8;
  c.training.fp8_recipe = Fp8Recipe::kDelayed;
  absl::StatusOr<ModuleProfile> fp8 = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(bf16, IsOk());
  ASSERT_THAT(fp8, IsOk());
  EXPECT_THAT(bf16->activation_bytes.value(), IsNearRel(MixtralMoeBytes(2), 1e-12));
  EXPECT_THAT(fp8->activation_bytes.value(), IsNearRel(MixtralMoeBytes(1), 1e-12));
}

TEST(ProfileMoeMlpTest, TurboIsOneBatchedGemmOverLocalExperts) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->tokens, 4096);
  const Op* fc1 = FindOp(p->ops, "expert_fc1", OpPhase::kForward);
  ASSERT_NE(fc1, nullptr);
  // On an NVIDIA GPU (the case's sm_90), TE's GroupedLinear launches each expert's GEMM.
  EXPECT_EQ(fc1->gemm,
            (GemmShape{.m = 2048, .n = 2 * 14336, .k = 4096, .batch = 2, .kernels = 2}));
  EXPECT_EQ(fc1->repeat, 1);
  const Op* fc2w = FindOp(p->ops, "expert_fc2", OpPhase::kBackwardWgrad);
  ASSERT_NE(fc2w, nullptr);
  EXPECT_EQ(fc2w->gemm, (GemmShape{.m = 14336, .n = 4096, .k = 2048, .batch = 2,
                                   .transpose_a = true, .kernels = 2}));
}

// One kernel per expert only where Transformer Engine's GroupedLinear launches them so: the
// megatron stack on NVIDIA (every expert GEMM, forward and backward); one grouped kernel on an
// AMD GPU (Primus-Turbo's grouped GEMM) and on torchtitan (torch._grouped_mm); the legacy path
// repeats a one-expert GEMM instead.
TEST(ProfileMoeMlpTest, GroupedLinearLaunchesAKernelPerExpertOnNvidia) {
  const auto expert_kernels = [](const Case& c) {
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    EXPECT_THAT(p, IsOk());
    std::vector<int64_t> kernels;
    for (const Op& op : p->ops) {
      if (op.kind == OpKind::kGemm && op.name.starts_with("expert_")) {
        kernels.push_back(op.gemm.kernels);
      }
    }
    return kernels;
  };
  Case nvidia = Mixtral(true);
  EXPECT_EQ(expert_kernels(nvidia), std::vector<int64_t>(6, 2));
  Case amd = nvidia;
  amd.arch = "gfx942";
  EXPECT_EQ(expert_kernels(amd), std::vector<int64_t>(6, 1));
  Case titan = nvidia;
  titan.training.stack = TrainingStack::kTorchTitan;
  EXPECT_EQ(expert_kernels(titan), std::vector<int64_t>(6, 1));
  EXPECT_EQ(expert_kernels(Mixtral(false)), std::vector<int64_t>(6, 1));
}

// The dispatcher's and router's own kernels on Mixtral TP2+SP EP4 (T_l = 2048 routed tokens,
// E = 8, pairs 4096, h = 4096, bf16):
//   router_aux_loss      3 kernels each way over the fp32 scores: 8·T_l·E = 131072 B;
//   dispatch_preprocess  forward only, the [T_l, E] boolean map read: 16384 B, 4 kernels
//                        (counts, splits, two copies to the host); 1 kernel padded;
//   sort_chunks, unsort_chunks  2 local experts: pairs·h·e read and written,
//                        2·4096·4096·2 = 67108864 B each, forward and backward.
// The turbo experts are a Transformer Engine GroupedLinear: the host issues each local expert's
// GEMM (host_fanout 2), and its forward call costs the TE module's 1.7 more (kTeModuleExtra-
// Dispatches): 3.7; its backward GEMMs 2 each. The router is one plain PyTorch GEMM: 1.
TEST(ProfileMoeMlpTest, DispatcherKernelsAndPerExpertHostCalls) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad}) {
    const Op* aux = FindOp(p->ops, "router_aux_loss", phase);
    ASSERT_NE(aux, nullptr);
    EXPECT_DOUBLE_EQ(aux->bytes.value(), 131072.0);
    EXPECT_EQ(aux->memory.launches, 3);
    for (const char* name : {"sort_chunks", "unsort_chunks"}) {
      const Op* sort = FindOp(p->ops, name, phase);
      ASSERT_NE(sort, nullptr) << name;
      EXPECT_DOUBLE_EQ(sort->bytes.value(), 67108864.0) << name;
    }
  }
  const Op* pre = FindOp(p->ops, "dispatch_preprocess", OpPhase::kForward);
  ASSERT_NE(pre, nullptr);
  EXPECT_DOUBLE_EQ(pre->bytes.value(), 16384.0);
  EXPECT_EQ(HostDispatches(*pre), 4);
  EXPECT_EQ(FindOp(p->ops, "dispatch_preprocess", OpPhase::kBackwardDgrad), nullptr);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(p->ops, "expert_fc1", OpPhase::kForward)), 3.7);
  EXPECT_EQ(HostDispatches(*FindOp(p->ops, "expert_fc2", OpPhase::kBackwardWgrad)), 2);
  EXPECT_EQ(HostDispatches(*FindOp(p->ops, "router", OpPhase::kForward)), 1);
  EXPECT_EQ(HostDispatches(*FindOp(p->ops, "expert_act", OpPhase::kForward)), 1);

  Case padded = Mixtral(true);
  padded.training.moe_capacity_factor = 1.0;
  padded.training.moe_pad_to_capacity = true;
  absl::StatusOr<ModuleProfile> q = ProfileMoeMlp(padded.Ctx());
  ASSERT_THAT(q, IsOk());
  EXPECT_EQ(HostDispatches(*FindOp(q->ops, "dispatch_preprocess", OpPhase::kForward)), 1);
}

// Transformer Engine's Fp8Padding under fp8 on Mixtral TP2+SP EP4 (pairs 4096 over 2 local
// experts, h = 4096, bf16 rows e = 2; delayed scaling, alignment 16). Dropless counts vary, so the
// copies run:
//   fp8_padding    the rows and their fp32 probabilities read and written:
//                  2·4096·(4096·2 + 4) = 67141632 B, 2 kernels, each way;
//   fp8_unpadding  the output rows: 2·4096·4096·2 = 67108864 B, 1 kernel, each way.
// One GEMM per expert (SequentialMLP) pads by a zeros and a cat per expert and per tensor
// (4·2 = 8 kernels) and its backward zero-fills and copies the sliced output's gradient per
// expert: 3·4096·4096·2 = 100663296 B, 2·2 = 4 kernels; no unpadding op.
TEST(ProfileMoeMlpTest, Fp8PaddingCopiesTheRoutedRowsEachWay) {
  const auto profile = [](Case c) {
    c.training.precision = DType::kFp8;
    c.training.fp8_recipe = Fp8Recipe::kDelayed;
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    EXPECT_THAT(p, IsOk());
    return *p;
  };
  const ModuleProfile grouped = profile(Mixtral(true));
  EXPECT_EQ(grouped.tokens, 4096);
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad}) {
    const Op* pad = FindOp(grouped.ops, "fp8_padding", phase);
    const Op* unpad = FindOp(grouped.ops, "fp8_unpadding", phase);
    ASSERT_NE(pad, nullptr);
    ASSERT_NE(unpad, nullptr);
    EXPECT_DOUBLE_EQ(pad->bytes.value(), 67141632.0);
    EXPECT_EQ(pad->memory.launches, 2);
    EXPECT_DOUBLE_EQ(unpad->bytes.value(), 67108864.0);
    EXPECT_EQ(unpad->memory.launches, 1);
  }
  const ModuleProfile legacy = profile(Mixtral(false));
  const Op* pad = FindOp(legacy.ops, "fp8_padding", OpPhase::kForward);
  const Op* slice_grad = FindOp(legacy.ops, "fp8_padding", OpPhase::kBackwardDgrad);
  ASSERT_NE(pad, nullptr);
  ASSERT_NE(slice_grad, nullptr);
  EXPECT_DOUBLE_EQ(pad->bytes.value(), 67141632.0);
  EXPECT_EQ(pad->memory.launches, 8);
  EXPECT_DOUBLE_EQ(slice_grad->bytes.value(), 100663296.0);
  EXPECT_EQ(slice_grad->memory.launches, 4);
  EXPECT_EQ(FindOp(legacy.ops, "fp8_unpadding", OpPhase::kForward), nullptr);

  // A capacity without padding leaves counts that vary: the copies run.
  Case capped = Mixtral(true);
  capped.training.moe_capacity_factor = 1.0;
  EXPECT_NE(FindOp(profile(capped).ops, "fp8_padding", OpPhase::kForward), nullptr);
  // Padded to capacity 1 every expert takes 2048 rows, a multiple of 16: no copies. At capacity
  // 1.01 it takes ceil(ceil(4096·1.01)/2) = 2069 rows, 5 past a multiple: copies.
  Case padded = capped;
  padded.training.moe_pad_to_capacity = true;
  EXPECT_EQ(FindOp(profile(padded).ops, "fp8_padding", OpPhase::kForward), nullptr);
  padded.training.moe_capacity_factor = 1.01;
  EXPECT_NE(FindOp(profile(padded).ops, "fp8_padding", OpPhase::kForward), nullptr);
  // bf16, or another stack (torchtitan aligns the rows inside its own permutation): none.
  Case bf16 = Mixtral(true);
  absl::StatusOr<ModuleProfile> b = ProfileMoeMlp(bf16.Ctx());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(FindOp(b->ops, "fp8_padding", OpPhase::kForward), nullptr);
  Case titan = Mixtral(true);
  titan.training.stack = TrainingStack::kTorchTitan;
  EXPECT_EQ(FindOp(profile(titan).ops, "fp8_padding", OpPhase::kForward), nullptr);
}

// Router padding (training.moe_router_padding) makes the counts multiples of the alignment a:
// no copies, but (a − 1)/2 more rows per padded count on average.
//   alltoall dispatcher: every rank pads its map of E = 8 experts before the dispatch, and this
//     GPU's experts receive all of them: pairs = T_l·k + E·(a − 1)/2 = 4096 + 8·7.5 = 4156
//     under delayed scaling (a = 16), 4096 + 8·15.5 = 4220 under MXFP8 (a = 32, on sm_100);
//   DeepEP: the received counts of the 2 local experts rounded up: 4096 + 2·7.5 = 4111.
TEST(ProfileMoeMlpTest, RouterPaddingAddsRowsInsteadOfCopies) {
  const auto profile = [](Case c, Fp8Recipe recipe) {
    c.training.precision = DType::kFp8;
    c.training.fp8_recipe = recipe;
    c.training.moe_router_padding = true;
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    EXPECT_THAT(p, IsOk());
    return *p;
  };
  const ModuleProfile routed = profile(Mixtral(true), Fp8Recipe::kDelayed);
  EXPECT_EQ(routed.tokens, 4156);
  EXPECT_EQ(FindOp(routed.ops, "fp8_padding", OpPhase::kForward), nullptr);
  EXPECT_EQ(FindOp(routed.ops, "fp8_unpadding", OpPhase::kForward), nullptr);
  Case blackwell = Mixtral(true);
  blackwell.arch = "sm_100";
  EXPECT_EQ(profile(blackwell, Fp8Recipe::kMxfp8).tokens, 4220);
  Case deepep = Mixtral(true);
  deepep.parallel.deepep = true;
  EXPECT_EQ(profile(deepep, Fp8Recipe::kDelayed).tokens, 4111);
  // Auto: router padding where the run dispatches with DeepEP, the copies elsewhere.
  deepep.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> auto_deepep = ProfileMoeMlp(deepep.Ctx());
  ASSERT_THAT(auto_deepep, IsOk());
  EXPECT_EQ(auto_deepep->tokens, 4111);
  EXPECT_EQ(FindOp(auto_deepep->ops, "fp8_padding", OpPhase::kForward), nullptr);
}

// One local expert: nothing to sort.
TEST(ProfileMoeMlpTest, OneLocalExpertHasNoSort) {
  Case c = Mixtral(true);
  c.parallel.ep = 8;
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(FindOp(p->ops, "sort_chunks", OpPhase::kForward), nullptr);
  EXPECT_EQ(FindOp(p->ops, "unsort_chunks", OpPhase::kForward), nullptr);
}

TEST(ProfileMoeMlpTest, LegacyRepeatsOneGemmPerLocalExpertWithTheSameFlops) {
  absl::StatusOr<ModuleProfile> turbo = ProfileMoeMlp(Mixtral(true).Ctx());
  Case legacy_case = Mixtral(false);
  absl::StatusOr<ModuleProfile> legacy = ProfileMoeMlp(legacy_case.Ctx());
  ASSERT_THAT(turbo, IsOk());
  ASSERT_THAT(legacy, IsOk());
  const Op* fc1 = FindOp(legacy->ops, "expert_fc1", OpPhase::kForward);
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->gemm, (GemmShape{.m = 2048, .n = 2 * 14336, .k = 4096, .batch = 1}));
  EXPECT_EQ(fc1->repeat, 2);
  EXPECT_EQ(FindOp(legacy->ops, "expert_fc2", OpPhase::kBackwardDgrad)->repeat, 2);
  // Expert FLOPs: 2·pairs·3·h·ffn_e in both modes, per phase.
  const double expected = 2.0 * 4096 * 3 * 4096 * 14336;
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad, OpPhase::kBackwardWgrad}) {
    EXPECT_THAT(ExpertFlops(*turbo, phase), IsNearRel(expected, 1e-12));
    EXPECT_THAT(ExpertFlops(*legacy, phase), IsNearRel(expected, 1e-12));
  }
  // With a fixed time per FLOP the two modes cost the same; a tile model would tell them apart.
  FakeBackends fakes;
  ASSERT_THAT(TimeOps(fakes.Refs(), turbo->ops), IsOk());
  ASSERT_THAT(TimeOps(fakes.Refs(), legacy->ops), IsOk());
  EXPECT_THAT(SumTime(legacy->ops, OpPhase::kForward).value(),
              IsNearRel(SumTime(turbo->ops, OpPhase::kForward).value(), 1e-12));
}

// The router gate's precision on Mixtral TP2+SP EP4 (T_l = 2048 routed tokens, E = 8,
// h = 4096, bf16 activations; (T_l + E)·h = 2056·4096 = 8421376 gate elements):
//   bf16 router (the model's default): the gate GEMM in bf16 each way, no casts;
//   fp32 router on the megatron stack (Megatron-Core's RouterGatingLinearFunction on Transformer
//     Engine): the forward in bf16 (fp32 logits out); the backward casts the input and weight
//     to fp32 and both gradients back, (2 + 4)·2 = 12 bytes a gate element: 101056512 B in 4
//     kernels; dgrad and wgrad as TF32 GEMMs;
//   torchtitan (autocast to fp32 whatever the model): the fp32 copies made in the forward and
//     the gradients cast back in the backward, 6 bytes an element each way: 50528256 B in 2
//     kernels each; all three GEMMs fp32 (SIMT SGEMM);
//   an fp32 router in PyTorch module code without Transformer Engine (the llm-foundry stack):
//     the same, and the fp32 copies kept for the backward, 4·8421376 = 33685504 B beyond the
//     same stack's bf16-router activations;
//   an inference engine's gate: bf16 whatever the model.
TEST(ProfileMoeMlpTest, RouterGateRunsInTheModelsDtypeAsTheStackRunsIt) {
  const auto router_dtypes = [](const ModuleProfile& p) {
    std::vector<DType> dtypes;
    for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad, OpPhase::kBackwardWgrad}) {
      const Op* op = FindOp(p.ops, "router", phase);
      EXPECT_NE(op, nullptr);
      dtypes.push_back(op != nullptr ? op->gemm.dtype : DType::kFp4);
    }
    return dtypes;
  };
  Case bf16 = Mixtral(true);
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(bf16.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(router_dtypes(*p), (std::vector<DType>{DType::kBf16, DType::kBf16, DType::kBf16}));
  EXPECT_EQ(FindOp(p->ops, "backward_operand_cast", OpPhase::kBackwardDgrad), nullptr);
  EXPECT_EQ(FindOp(p->ops, "router_fp32_cast", OpPhase::kForward), nullptr);

  Case fp32 = Mixtral(true);
  fp32.model.moe->router_dtype = DType::kFp32;
  p = ProfileMoeMlp(fp32.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(router_dtypes(*p), (std::vector<DType>{DType::kBf16, DType::kTf32, DType::kTf32}));
  const Op* casts = FindOp(p->ops, "backward_operand_cast", OpPhase::kBackwardDgrad);
  ASSERT_NE(casts, nullptr);
  EXPECT_DOUBLE_EQ(casts->bytes.value(), 101056512.0);
  EXPECT_EQ(casts->memory.launches, 4);
  EXPECT_EQ(FindOp(p->ops, "router_fp32_cast", OpPhase::kForward), nullptr);
  EXPECT_THAT(p->activation_bytes.value(), IsNearRel(MixtralMoeBytes(2), 1e-12));

  Case titan = Mixtral(true);
  titan.training.stack = TrainingStack::kTorchTitan;
  p = ProfileMoeMlp(titan.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(router_dtypes(*p), (std::vector<DType>{DType::kFp32, DType::kFp32, DType::kFp32}));
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad}) {
    const Op* cast = FindOp(p->ops, "router_fp32_cast", phase);
    ASSERT_NE(cast, nullptr);
    EXPECT_DOUBLE_EQ(cast->bytes.value(), 50528256.0);
    EXPECT_EQ(cast->memory.launches, 2);
  }

  Case foundry = Mixtral(true);
  foundry.training.stack = TrainingStack::kLlmFoundry;
  absl::StatusOr<ModuleProfile> foundry_bf16 = ProfileMoeMlp(foundry.Ctx());
  foundry.model.moe->router_dtype = DType::kFp32;
  p = ProfileMoeMlp(foundry.Ctx());
  ASSERT_THAT(foundry_bf16, IsOk());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(router_dtypes(*foundry_bf16),
            (std::vector<DType>{DType::kBf16, DType::kBf16, DType::kBf16}));
  EXPECT_EQ(router_dtypes(*p), (std::vector<DType>{DType::kFp32, DType::kFp32, DType::kFp32}));
  EXPECT_DOUBLE_EQ(p->activation_bytes.value() - foundry_bf16->activation_bytes.value(),
                   33685504.0);

  ProfileContext serving = fp32.Ctx();
  serving.run.inference = true;
  p = ProfileMoeMlp(serving);
  ASSERT_THAT(p, IsOk());
  const Op* gate = FindOp(p->ops, "router", OpPhase::kForward);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->gemm.dtype, DType::kBf16);
}

// An fp32 gate is never faster than the bf16 one (the tile model on an H100-like GPU: TF32 at
// half the bf16 rate, SIMT at 1/16 of it, plus the casts' traffic).
TEST(ProfileMoeMlpTest, Fp32RouterGateIsNeverFasterThanBf16) {
  const auto router_time = [](const Case& c) {
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    EXPECT_THAT(p, IsOk());
    TileGemmBackend gemm(testing::compute::H100Like());
    double t = 0;
    for (const Op& op : p->ops) {
      if (op.kind == OpKind::kGemm && op.name == "router") {
        absl::StatusOr<GemmEstimate> e = gemm.Estimate(op.gemm);
        EXPECT_THAT(e, IsOk());
        t += e->time.value();
      } else if (op.name == "router_fp32_cast" || op.name == "backward_operand_cast") {
        t += op.bytes.value() / 3.35e12;  // any positive rate: casts only add time
      }
    }
    return t;
  };
  Case bf16 = Mixtral(true);
  Case fp32 = bf16;
  fp32.model.moe->router_dtype = DType::kFp32;
  Case titan = bf16;
  titan.training.stack = TrainingStack::kTorchTitan;
  EXPECT_GT(router_time(fp32), router_time(bf16));
  EXPECT_GT(router_time(titan), router_time(fp32));
}

// The routing knobs in closed form (MoeExpertLoad): dropless → the imbalance; a capacity caps it;
// padding to a capacity is the capacity whatever the imbalance.
TEST(MoeExpertLoadTest, ImbalanceCappedByCapacityOrPaddedToIt) {
  TrainingConfig t;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 1.0);
  t.moe_imbalance = 1.3;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 1.3);
  t.moe_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 1.25);
  t.moe_capacity_factor = 2.0;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 1.3);
  t.moe_pad_to_capacity = true;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 2.0);
  t.moe_imbalance = 1.0;
  t.moe_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(MoeExpertLoad(t), 1.25);
}

// The busiest EP rank's experts take L·pairs rows: Mixtral above has pairs 4096 over 2 local
// experts; with L = 1.5, 6144 pairs, 3072 rows per expert; expert FLOPs ×1.5 in every phase,
// the router and the permutation of the rank's own tokens unchanged, and the expert-side
// activations ×1.5 (the norm-output and router terms do not change, so the total grows less).
TEST(ProfileMoeMlpTest, ImbalanceScalesTheBusiestRanksExpertWork) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> base = ProfileMoeMlp(c.Ctx());
  c.training.moe_imbalance = 1.5;
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(base, IsOk());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->tokens, 6144);
  EXPECT_EQ(FindOp(p->ops, "expert_fc1", OpPhase::kForward)->gemm,
            (GemmShape{.m = 3072, .n = 2 * 14336, .k = 4096, .batch = 2, .kernels = 2}));
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad, OpPhase::kBackwardWgrad}) {
    EXPECT_THAT(ExpertFlops(*p, phase), IsNearRel(1.5 * ExpertFlops(*base, phase), 1e-12));
  }
  EXPECT_EQ(FindOp(p->ops, "router", OpPhase::kForward)->gemm,
            FindOp(base->ops, "router", OpPhase::kForward)->gemm);
  EXPECT_DOUBLE_EQ(FindOp(p->ops, "permute", OpPhase::kForward)->bytes.value(),
                   FindOp(base->ops, "permute", OpPhase::kForward)->bytes.value());
  EXPECT_GT(p->activation_bytes.value(), base->activation_bytes.value());
  EXPECT_LT(p->activation_bytes.value(), 1.5 * base->activation_bytes.value());
  // Padding to capacity 1.25: 5120 pairs, 2560 rows per expert, whatever the imbalance.
  c.training.moe_capacity_factor = 1.25;
  c.training.moe_pad_to_capacity = true;
  c.training.moe_imbalance = 1.0;
  absl::StatusOr<ModuleProfile> padded = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(padded, IsOk());
  EXPECT_EQ(padded->tokens, 5120);
  EXPECT_EQ(FindOp(padded->ops, "expert_fc1", OpPhase::kForward)->gemm.m, 2560);
  // A capacity so small it rounds to nothing still leaves each of the 2 local experts a row.
  c.training.moe_capacity_factor = 1e-9;
  absl::StatusOr<ModuleProfile> tiny = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(tiny, IsOk());
  EXPECT_EQ(tiny->tokens, 2);
  EXPECT_EQ(FindOp(tiny->ops, "expert_fc1", OpPhase::kForward)->gemm.m, 1);
}

// Tokens under SP are divided by TP before dispatch: pairs = (T/t)·k, router m = T/t.
TEST(ProfileMoeMlpTest, RoutedTokensAreDividedByTp) {
  for (int64_t tp : {1, 2, 4}) {
    Case c = Mixtral(true);
    c.parallel.tp = tp;
    c.parallel.sequence_parallel = tp > 1;
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    ASSERT_THAT(p, IsOk());
    const int64_t t_l = 4096 / tp;
    EXPECT_EQ(p->tokens, t_l * 2) << "tp " << tp;
    const Op* router = FindOp(p->ops, "router", OpPhase::kForward);
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->gemm, (GemmShape{.m = t_l, .n = 8, .k = 4096}));
    // Permutation moves T_l·k·h bf16 elements: read + write.
    EXPECT_THAT(FindOp(p->ops, "permute", OpPhase::kForward)->bytes.value(),
                IsNearRel(2.0 * D(t_l) * 2 * 4096 * 2, 1e-12));
    EXPECT_NE(FindOp(p->ops, "unpermute", OpPhase::kBackwardDgrad), nullptr);
    EXPECT_NE(FindOp(p->ops, "router_topk", OpPhase::kForward), nullptr);
  }
}

// Expert TP: each GPU sees ETP× the pairs against an ffn/ETP slice: same FLOPs.
TEST(ProfileMoeMlpTest, ExpertTensorParallelKeepsFlops) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> base = ProfileMoeMlp(c.Ctx());
  c.parallel.etp = 2;
  absl::StatusOr<ModuleProfile> split = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(base, IsOk());
  ASSERT_THAT(split, IsOk());
  EXPECT_EQ(split->tokens, 2 * base->tokens);
  EXPECT_EQ(FindOp(split->ops, "expert_fc2", OpPhase::kForward)->gemm.k, 14336 / 2);
  EXPECT_THAT(ExpertFlops(*split, OpPhase::kForward),
              IsNearRel(ExpertFlops(*base, OpPhase::kForward), 1e-12));
  EXPECT_THAT(split->expert_parameters, IsNearRel(base->expert_parameters / 2, 1e-12));
}

// DeepSeek-V3, TP1, EP8: 32 local experts of 3·h·2048, a router h·256, one shared expert
// 3·h·2048 on all T tokens.
TEST(ProfileMoeMlpTest, DeepSeekSharedExpertsAndParameters) {
  Case c(testing::DeepSeekV3());
  c.parallel.ep = 8;
  c.training.seq_len = 4096;
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const double h = 7168;
  EXPECT_THAT(p->expert_parameters, IsNearRel(32 * 3 * h * 2048, 1e-12));
  EXPECT_THAT(p->dense_parameters, IsNearRel(h * 256 + 3 * h * 2048, 1e-12));
  const Op* shared = FindOp(p->ops, "shared_fc1", OpPhase::kForward);
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->gemm, (GemmShape{.m = 4096, .n = 2 * 2048, .k = 7168}));
  // Forward GEMMs: router, expert fc1/fc2, shared fc1/fc2.
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kForward), 5);
  EXPECT_EQ(CountOps(p->ops, OpKind::kGemm, OpPhase::kBackwardWgrad), 5);
  // pairs = 4096·8, 32 local experts: 1024 rows each.
  EXPECT_EQ(FindOp(p->ops, "expert_fc1", OpPhase::kForward)->gemm.m, 1024);
  // Routed + shared + router forward FLOPs: 2·(T·k·3·h·f_e + T·3·h·f_s + T·h·E).
  const double T = 4096;
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kForward),
              IsNearRel(2 * (T * 8 * 3 * h * 2048 + T * 3 * h * 2048 + T * h * 256), 1e-12));
}

TEST(ProfileMoeMlpTest, FullRecomputeCopiesTheForward) {
  Case c = Mixtral(true);
  absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx(Recompute::kFull));
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(SumFlops(p->ops, OpKind::kGemm, OpPhase::kRecompute),
              IsNearRel(SumFlops(p->ops, OpKind::kGemm, OpPhase::kForward), 1e-12));
}

// The permutation's scatter-adds by stack and fusion (Mixtral TP2+SP EP4: T_l = 2048 tokens
// routed per GPU, k = 2, h = 4096): T_l·k·h = 16,777,216 element adds each, moving the same
// 2·T_l·k·h·2 B as the fused kernels' gathers.
TEST(ProfileMoeMlpTest, UnfusedPermutationSumsBackByAtomicAdds) {
  const double adds = 2048.0 * 2 * 4096;
  struct Want {
    TrainingStack stack;
    std::optional<bool> fusion;
    AtomicAddKernel permute_backward, unpermute_forward;
  };
  for (const Want& w :
       {Want{TrainingStack::kMegatron, std::nullopt, AtomicAddKernel::kNone,
             AtomicAddKernel::kNone},
        Want{TrainingStack::kMegatron, false, AtomicAddKernel::kIndexAdd,
             AtomicAddKernel::kScatterAdd},
        Want{TrainingStack::kTorchTitan, std::nullopt, AtomicAddKernel::kScatterAdd,
             AtomicAddKernel::kScatterAdd}}) {
    Case c = Mixtral(true);
    c.training.stack = w.stack;
    c.training.moe_permute_fusion = w.fusion;
    absl::StatusOr<ModuleProfile> p = ProfileMoeMlp(c.Ctx());
    ASSERT_THAT(p, IsOk());
    const Op* pf = FindOp(p->ops, "permute", OpPhase::kForward);
    const Op* pb = FindOp(p->ops, "permute", OpPhase::kBackwardDgrad);
    const Op* uf = FindOp(p->ops, "unpermute", OpPhase::kForward);
    const Op* ub = FindOp(p->ops, "unpermute", OpPhase::kBackwardDgrad);
    ASSERT_TRUE(pf && pb && uf && ub);
    const std::string label(TrainingStackName(w.stack));
    EXPECT_EQ(pf->memory.atomic_kernel, AtomicAddKernel::kNone) << label;
    EXPECT_EQ(ub->memory.atomic_kernel, AtomicAddKernel::kNone) << label;
    EXPECT_EQ(pb->memory.atomic_kernel, w.permute_backward) << label;
    EXPECT_EQ(uf->memory.atomic_kernel, w.unpermute_forward) << label;
    for (const Op* op : {pb, uf}) {
      const bool atomic = op->memory.atomic_kernel != AtomicAddKernel::kNone;
      EXPECT_EQ(op->memory.atomic_adds, atomic ? adds : 0) << label;
      EXPECT_EQ(op->memory.bytes.value(), 2 * adds * 2) << label;
    }
  }
}

TEST(ProfileMoeMlpTest, ErrorPaths) {
  Case dense(testing::Llama31_8B());
  EXPECT_THAT(ProfileMoeMlp(dense.Ctx()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no MoE")));
  Case c = Mixtral(true);
  c.parallel.ep = 3;
  EXPECT_THAT(ProfileMoeMlp(c.Ctx()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("num_experts 8")));
  c = Mixtral(true);
  c.parallel.etp = 5;
  EXPECT_THAT(ProfileMoeMlp(c.Ctx()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("expert_ffn_hidden")));
  c = Mixtral(true);
  c.model.moe->top_k = 9;
  EXPECT_THAT(ProfileMoeMlp(c.Ctx()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("top_k")));
}

}  // namespace
}  // namespace projector
