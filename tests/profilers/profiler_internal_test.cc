// Tests of the shared profiler internals: LayerDims resolution and ModuleOpBuilder's FP8
// (Transformer Engine) quantisation ops.
#include "profilers/profiler_internal.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountPhase;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using profiler_internal::LayerDims;
using profiler_internal::LinearInput;
using profiler_internal::ModuleOpBuilder;
using Case = ::projector::testing::ProfilerCase;

// bf16 activations, fp8 GEMMs, the weight cast once per step (cached) or per micro-batch.
LayerDims Fp8Dims(bool cached = true) {
  LayerDims dims;
  dims.gemm_dtype = DType::kFp8;
  dims.act_dtype = DType::kBf16;
  dims.act_bytes = 2.0;
  dims.quantized = true;
  dims.weight_cast_cached = cached;
  return dims;
}

// Transformer Engine keeps the column-wise fp8 copy (1 byte) and its scales: none per element
// for a per-tensor scale, one fp32 per 128 elements (blockwise), one E8M0 byte per 32 (MXFP8);
// torchao's rowwise Float8Linear keeps the bf16 input (2 bytes), as do bf16 training and an
// inference forward.
TEST(SavedLinearInputBytesTest, PerRecipe) {
  using profiler_internal::SavedLinearInputBytes;
  auto with = [](Fp8Recipe recipe) {
    LayerDims dims = Fp8Dims();
    dims.fp8_recipe = recipe;
    return dims;
  };
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(with(Fp8Recipe::kDelayed)), 1.0);
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(with(Fp8Recipe::kTensorwise)), 1.0);
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(with(Fp8Recipe::kBlockwise)), 1.0 + 4.0 / 128);
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(with(Fp8Recipe::kMxfp8)), 1.0 + 1.0 / 32);
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(with(Fp8Recipe::kRowwise)), 2.0);
  LayerDims inference = Fp8Dims();
  inference.inference = true;
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(inference), 2.0);
  EXPECT_DOUBLE_EQ(SavedLinearInputBytes(LayerDims{}), 2.0);
}

std::vector<std::string_view> Names(const OpList& ops, OpPhase phase) {
  std::vector<std::string_view> names;
  for (const Op& op : ops) {
    if (op.phase == phase) names.push_back(op.name);
  }
  return names;
}

// x[512, 1024] · W[1024, 2048] in fp8 from a bf16 input (e = 2, q = 1 byte). A cast reads bf16
// and writes the fp8 copy and its transpose: e + 2q = 4 bytes per element.
//   weight_fp8_cast 1024·2048 = 2,097,152 elements · 4 B, once per step     = 8,388,608 B
//   input_fp8_cast  512·1024  =   524,288 elements · 4 B                   = 2,097,152 B
//   grad_fp8_cast   512·2048  = 1,048,576 elements of dY · 4 B             = 4,194,304 B
TEST(ModuleOpBuilderTest, QuantisedLinearCastsWeightInputAndGradient) {
  OpList ops;
  ModuleOpBuilder b("mlp", ops, 8, Fp8Dims());
  b.Linear("fc", 512, 1024, 2048, DType::kFp8);
  b.Finish(Recompute::kNone);
  EXPECT_THAT(Names(ops, OpPhase::kOncePerStep), ::testing::ElementsAre("weight_fp8_cast"));
  EXPECT_THAT(Names(ops, OpPhase::kForward), ::testing::ElementsAre("input_fp8_cast", "fc"));
  EXPECT_THAT(Names(ops, OpPhase::kBackwardDgrad), ::testing::ElementsAre("grad_fp8_cast", "fc"));
  EXPECT_THAT(Names(ops, OpPhase::kBackwardWgrad), ::testing::ElementsAre("fc"));
  const Op* weight = FindOp(ops, "weight_fp8_cast", OpPhase::kOncePerStep);
  const Op* input = FindOp(ops, "input_fp8_cast", OpPhase::kForward);
  const Op* grad = FindOp(ops, "grad_fp8_cast", OpPhase::kBackwardDgrad);
  ASSERT_NE(weight, nullptr);
  ASSERT_NE(input, nullptr);
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(weight->kind, OpKind::kMemory);
  EXPECT_THAT(weight->bytes.value(), IsNearRel(8388608.0, 1e-12));
  EXPECT_THAT(input->bytes.value(), IsNearRel(2097152.0, 1e-12));
  EXPECT_THAT(grad->bytes.value(), IsNearRel(4194304.0, 1e-12));
  EXPECT_THAT(input->memory.bytes.value(), IsNearRel(2097152.0, 1e-12));
  // ~3 vector FLOPs per element (|x|, max, scale).
  EXPECT_THAT(input->flops.value(), IsNearRel(3.0 * 524288, 1e-12));
  // The GEMM itself is unchanged: fp8 inputs, bf16 output.
  EXPECT_EQ(FindOp(ops, "fc", OpPhase::kForward)->gemm,
            (GemmShape{.m = 512, .n = 2048, .k = 1024, .dtype = DType::kFp8}));
}

// A norm fused into the layer (TE LayerNormLinear) writes the fp8 input itself; backward makes
// the transposed copy for wgrad: read and write 1 byte per element, 2·512·1024 = 1,048,576 B.
TEST(ModuleOpBuilderTest, FusedNormInputIsTransposedBeforeWgrad) {
  OpList ops;
  ModuleOpBuilder b("attention", ops, 8, Fp8Dims());
  b.Linear("qkv", 512, 1024, 2048, DType::kFp8, 1, 1, LinearInput::kFusedNorm);
  b.Finish(Recompute::kNone);
  EXPECT_THAT(Names(ops, OpPhase::kForward), ::testing::ElementsAre("qkv"));
  EXPECT_THAT(Names(ops, OpPhase::kBackwardWgrad),
              ::testing::ElementsAre("input_fp8_transpose", "qkv"));
  EXPECT_THAT(FindOp(ops, "input_fp8_transpose", OpPhase::kBackwardWgrad)->bytes.value(),
              IsNearRel(1048576.0, 1e-12));
  // Backward order: dY cast, dgrad, input transpose, wgrad.
  std::vector<std::string_view> backward;
  for (const Op& op : ops) {
    if (op.phase != OpPhase::kForward && op.phase != OpPhase::kOncePerStep) {
      backward.push_back(op.name);
    }
  }
  EXPECT_THAT(backward,
              ::testing::ElementsAre("grad_fp8_cast", "qkv", "input_fp8_transpose", "qkv"));
}

TEST(ModuleOpBuilderTest, SecondLinearOnTheSameInputCastsNoInput) {
  OpList ops;
  ModuleOpBuilder b("attention", ops, 8, Fp8Dims());
  b.Linear("kv_down", 512, 1024, 512, DType::kFp8);
  b.Linear("k_rope", 512, 1024, 64, DType::kFp8, 1, 1, LinearInput::kSameAsPrevious);
  b.Finish(Recompute::kNone);
  EXPECT_THAT(Names(ops, OpPhase::kForward),
              ::testing::ElementsAre("input_fp8_cast", "kv_down", "k_rope"));
  EXPECT_THAT(Names(ops, OpPhase::kOncePerStep),
              ::testing::ElementsAre("weight_fp8_cast", "weight_fp8_cast"));
  EXPECT_EQ(CountPhase(ops, OpPhase::kBackwardWgrad), 2);
}

// Full recompute re-runs the input cast but not a weight cast cached for the step
// (is_first_microbatch is false by then); under FSDP the weight is cast every micro-batch and
// the recomputed forward casts it again.
TEST(ModuleOpBuilderTest, RecomputeRedoesTheWeightCastOnlyWhenNotCached) {
  for (bool cached : {true, false}) {
    OpList ops;
    ModuleOpBuilder b("mlp", ops, 8, Fp8Dims(cached));
    b.Linear("fc", 512, 1024, 2048, DType::kFp8);
    b.Finish(Recompute::kFull);
    if (cached) {
      EXPECT_THAT(Names(ops, OpPhase::kRecompute),
                  ::testing::ElementsAre("input_fp8_cast", "fc"));
    } else {
      EXPECT_THAT(Names(ops, OpPhase::kRecompute),
                  ::testing::ElementsAre("weight_fp8_cast", "input_fp8_cast", "fc"));
      // Every micro-batch casts the whole weight: 4 bytes · 1024·2048.
      EXPECT_THAT(FindOp(ops, "weight_fp8_cast", OpPhase::kForward)->bytes.value(),
                  IsNearRel(4.0 * 1024 * 2048, 1e-12));
    }
  }
}

// Legacy grouped GEMM (one TE Linear per expert, repeat 4) casts per expert: each cast op runs
// 4 times; the turbo grouped GEMM (batch 4) casts all experts in one kernel. Same bytes.
TEST(ModuleOpBuilderTest, GroupedGemmCastsEveryExpert) {
  OpList legacy, turbo;
  ModuleOpBuilder bl("moe", legacy, 8, Fp8Dims());
  bl.Linear("expert_fc1", 128, 1024, 2048, DType::kFp8, /*batch=*/1, /*repeat=*/4);
  bl.Finish(Recompute::kNone);
  ModuleOpBuilder bt("moe", turbo, 8, Fp8Dims());
  bt.Linear("expert_fc1", 128, 1024, 2048, DType::kFp8, /*batch=*/4, /*repeat=*/1);
  bt.Finish(Recompute::kNone);
  for (auto [name, phase] : {std::pair{"weight_fp8_cast", OpPhase::kOncePerStep},
                             std::pair{"input_fp8_cast", OpPhase::kForward}}) {
    const Op* l = FindOp(legacy, name, phase);
    const Op* t = FindOp(turbo, name, phase);
    ASSERT_NE(l, nullptr);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(l->repeat, 4);
    EXPECT_EQ(t->repeat, 1);
    EXPECT_THAT(l->bytes.value(), IsNearRel(t->bytes.value(), 1e-12)) << name;
  }
  // 4 experts · 128·1024 inputs · 4 B.
  EXPECT_THAT(FindOp(turbo, "input_fp8_cast", OpPhase::kForward)->bytes.value(),
              IsNearRel(4.0 * 4 * 128 * 1024, 1e-12));
  EXPECT_THAT(FindOp(legacy, "grad_fp8_cast", OpPhase::kBackwardDgrad)->bytes.value(),
              IsNearRel(4.0 * 4 * 128 * 2048, 1e-12));
}

// Bytes per quantised element, e = 2 (bf16), q = 1 (fp8), hand-derived from the recipes:
//   delayed     e + 2q = 4, 1 kernel;
//   tensorwise  e (amax pass) + e + 2q = 6, 3 kernels (amax, scale, cast);
//   blockwise   4 + 2·4/128 = 4.0625, 1 kernel;
//   mxfp8       4 + 2·1/32 = 4.0625, 1 kernel;
//   rowwise     6, 2 kernels.
TEST(QuantizationOfTest, BytesAndKernelsPerRecipe) {
  struct Expect {
    Fp8Recipe recipe;
    double bytes;
    int64_t kernels;
    bool fused;
    bool block_scaled;  // scales applied per K block in the GEMM main loop
  };
  for (const Expect& x : {Expect{Fp8Recipe::kDelayed, 4.0, 1, true, false},
                          Expect{Fp8Recipe::kTensorwise, 6.0, 3, false, false},
                          Expect{Fp8Recipe::kBlockwise, 4.0625, 1, false, true},
                          Expect{Fp8Recipe::kMxfp8, 4.0625, 1, false, true},
                          Expect{Fp8Recipe::kRowwise, 6.0, 2, false, false}}) {
    const profiler_internal::Fp8Quantization k = profiler_internal::QuantizationOf(x.recipe, 2, 1);
    EXPECT_DOUBLE_EQ(k.bytes_per_element, x.bytes) << Fp8RecipeName(x.recipe);
    EXPECT_EQ(k.kernels, x.kernels) << Fp8RecipeName(x.recipe);
    EXPECT_EQ(k.fused_over_experts, x.fused) << Fp8RecipeName(x.recipe);
    EXPECT_EQ(k.block_scaled_gemm, x.block_scaled) << Fp8RecipeName(x.recipe);
  }
}

// A GroupedLinear over 4 experts (batch 4, host fanout 4): delayed scaling quantises all of
// them in one kernel the host prepares per expert (launches 1, host fanout 4: 4 dispatches);
// tensorwise runs its 3 kernels per expert (launches 12, host fanout 1: 12 dispatches), with
// 6/4 of delayed's bytes.
TEST(ModuleOpBuilderTest, GroupedCastsFollowTheRecipe) {
  OpList delayed_ops, tensorwise_ops;
  LayerDims tensorwise = Fp8Dims();
  tensorwise.fp8_recipe = Fp8Recipe::kTensorwise;
  for (auto [ops, dims] : {std::pair<OpList*, LayerDims>{&delayed_ops, Fp8Dims()},
                           {&tensorwise_ops, tensorwise}}) {
    ModuleOpBuilder b("moe", *ops, 8, dims);
    b.SetLinearHostFanout(4);
    b.Linear("expert_fc1", 128, 1024, 2048, DType::kFp8, /*batch=*/4, /*repeat=*/1);
    b.Finish(Recompute::kNone);
  }
  for (auto [name, phase] : {std::pair{"input_fp8_cast", OpPhase::kForward},
                             {"grad_fp8_cast", OpPhase::kBackwardDgrad}}) {
    const Op* d = FindOp(delayed_ops, name, phase);
    const Op* t = FindOp(tensorwise_ops, name, phase);
    ASSERT_NE(d, nullptr);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(d->memory.launches, 1) << name;
    EXPECT_EQ(HostDispatches(*d), 4) << name;
    EXPECT_EQ(t->memory.launches, 12) << name;
    EXPECT_EQ(HostDispatches(*t), 12) << name;
    EXPECT_THAT(t->bytes.value(), IsNearRel(1.5 * d->bytes.value(), 1e-12)) << name;
  }
  EXPECT_EQ(HostDispatches(*FindOp(delayed_ops, "expert_fc1", OpPhase::kBackwardWgrad)), 4);
}

// The recipe's scaling reaches the GEMMs it feeds: MXFP8 and blockwise mark the forward, dgrad
// and wgrad GEMMs block-scaled; delayed and current scaling, and a bf16 linear, do not.
TEST(ModuleOpBuilderTest, BlockScaledRecipesMarkTheirGemms) {
  for (auto [recipe, block_scaled] : {std::pair{Fp8Recipe::kMxfp8, true},
                                      {Fp8Recipe::kBlockwise, true},
                                      {Fp8Recipe::kDelayed, false},
                                      {Fp8Recipe::kTensorwise, false}}) {
    LayerDims dims = Fp8Dims();
    dims.fp8_recipe = recipe;
    OpList ops;
    ModuleOpBuilder b("mlp", ops, 8, dims);
    b.Linear("fc", 512, 1024, 2048, DType::kFp8, 1, 1);
    b.Finish(Recompute::kNone);
    int gemms = 0;
    for (const Op& op : ops) {
      if (op.kind != OpKind::kGemm) continue;
      ++gemms;
      EXPECT_EQ(op.gemm.block_scaled, block_scaled) << Fp8RecipeName(recipe) << " " << op.name;
    }
    EXPECT_EQ(gemms, 3) << Fp8RecipeName(recipe);
  }
  LayerDims bf16;
  OpList ops;
  ModuleOpBuilder b("mlp", ops, 8, bf16);
  b.Linear("fc", 512, 1024, 2048, DType::kBf16, 1, 1);
  b.Finish(Recompute::kNone);
  for (const Op& op : ops) EXPECT_FALSE(op.gemm.block_scaled) << op.name;
}

// MXFP8: two scale swizzles (Transformer Engine rearranges each operand's E8M0 scales, 1 byte
// per 32 elements, read and written, for cuBLAS; one kernel per operand) before the forward,
// dgrad and wgrad GEMMs of fc (m 512, in 1024, out 2048):
//   forward  X 512·1024 + W 1024·2048 = 2621440 elements: 2·2621440/32 = 163840 B;
//   dgrad    dY 512·2048 + W 1024·2048 = 3145728: 196608 B;
//   wgrad    X 512·1024 + dY 512·2048 = 1572864: 98304 B;
// each launched from TE's C++ inside the GEMM call: on the host a forward element-wise launch
// each (HostCallWeight 0.39), whatever the phase: 0.78 dispatch equivalents. A grouped GEMM of
// 4 experts swizzles all of them in one kernel per operand (4x the bytes, still 2 launches);
// full recompute re-runs the forward's; none without LayerDims::gemm_scale_swizzle, nor on a
// bf16 linear.
TEST(ModuleOpBuilderTest, Mxfp8SwizzlesBothOperandsScalesBeforeEveryGemm) {
  LayerDims dims = Fp8Dims();
  dims.fp8_recipe = Fp8Recipe::kMxfp8;
  dims.gemm_scale_swizzle = true;
  for (int64_t batch : {1, 4}) {
    OpList ops;
    ModuleOpBuilder b("mlp", ops, 16, dims);
    b.Linear("fc", 512, 1024, 2048, DType::kFp8, batch, 1);
    b.Finish(Recompute::kFull);
    for (auto [phase, bytes] : {std::pair{OpPhase::kForward, 163840.0},
                                {OpPhase::kRecompute, 163840.0},
                                {OpPhase::kBackwardDgrad, 196608.0},
                                {OpPhase::kBackwardWgrad, 98304.0}}) {
      const Op* swizzle = FindOp(ops, "scale_swizzle", phase);
      ASSERT_NE(swizzle, nullptr) << static_cast<int>(phase);
      EXPECT_DOUBLE_EQ(swizzle->bytes.value(), bytes * static_cast<double>(batch))
          << static_cast<int>(phase);
      EXPECT_EQ(swizzle->memory.launches, 2);
      EXPECT_DOUBLE_EQ(HostDispatchEquivalents(*swizzle), 2 * 0.39);
    }
  }
  for (auto [swizzle, dtype] : {std::pair{false, DType::kFp8}, {true, DType::kBf16}}) {
    LayerDims other = Fp8Dims();
    other.fp8_recipe = Fp8Recipe::kMxfp8;
    other.gemm_scale_swizzle = swizzle;
    OpList ops;
    ModuleOpBuilder b("mlp", ops, 16, other);
    b.Linear("fc", 512, 1024, 2048, dtype, 1, 1);
    b.Finish(Recompute::kNone);
    for (const Op& op : ops) EXPECT_NE(op.name, "scale_swizzle") << swizzle;
  }
}

// torchtitan's per-op SAC on a Llama-like block (q 512, k and v 128 wide; SwiGLU of 1024), the
// mms counted in call order: wq 1, wk 2, wv 3, wo 4 in the attention module and w1 1, w3 2,
// w2 3 in the MLP, so the recompute re-runs wk (N 128 of the fused 768), wo whole and w3 (N 1024
// of 2048), every elementwise op (RoPE, SwiGLU), not the flash kernel (SDPA is saved), not wq,
// wv, w1, w2. A grouped expert GEMM (batch 4, not an aten.mm) is re-run whole. Megatron's
// selective recompute of the same ops re-runs the flash kernel only.
TEST(ModuleOpBuilderTest, TorchTitanOpSacRerunsEverySecondMmAndTheElementwiseOps) {
  LayerDims titan;
  titan.pytorch_modules = true;
  titan.op_sac = true;
  const MemoryOp rope{.bytes = Bytes(1e6), .flops = Flops(0), .launches = 1};
  const AttentionShape shape{.batch = 1, .num_q_heads = 4, .num_kv_heads = 1, .seq_q = 64,
                             .seq_kv = 64, .qk_head_dim = 128, .v_head_dim = 128, .causal = true};
  auto attention = [&](const LayerDims& dims) {
    OpList ops;
    ModuleOpBuilder b("attention", ops, 16, dims);
    b.Linear("qkv_proj", 64, 512, 768, DType::kBf16);
    b.SetMmOutputs({512, 128, 128});
    b.Memory("rope", rope, rope);
    b.Attention("attention_core", shape, Bytes(1e6), Bytes(2e6));
    b.Linear("out_proj", 64, 512, 512, DType::kBf16);
    b.Finish(Recompute::kSelective);
    return ops;
  };
  const OpList a = attention(titan);
  ASSERT_NE(FindOp(a, "qkv_proj", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(a, "qkv_proj", OpPhase::kRecompute)->gemm.n, 128);
  EXPECT_DOUBLE_EQ(FindOp(a, "qkv_proj", OpPhase::kRecompute)->flops.value(), 2.0 * 64 * 128 * 512);
  ASSERT_NE(FindOp(a, "out_proj", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(a, "out_proj", OpPhase::kRecompute)->gemm.n, 512);
  EXPECT_NE(FindOp(a, "rope", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(a, "attention_core", OpPhase::kRecompute), nullptr);

  OpList mlp;
  {
    ModuleOpBuilder b("mlp", mlp, 16, titan);
    profiler_internal::AddMlpOps(b, {.fc1 = "fc1", .act = "swiglu", .fc2 = "fc2"}, 64, 512, 1024,
                                 /*gated=*/true, DType::kBf16, 2.0, 64);
    b.Linear("experts", 16, 512, 256, DType::kBf16, /*batch=*/4);
    b.Finish(Recompute::kSelective);
  }
  ASSERT_NE(FindOp(mlp, "fc1", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(mlp, "fc1", OpPhase::kRecompute)->gemm.n, 1024);
  EXPECT_NE(FindOp(mlp, "swiglu", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(mlp, "fc2", OpPhase::kRecompute), nullptr);  // w2: mm 3, saved
  ASSERT_NE(FindOp(mlp, "experts", OpPhase::kRecompute), nullptr);
  EXPECT_EQ(FindOp(mlp, "experts", OpPhase::kRecompute)->gemm.n, 256);

  LayerDims megatron;
  const OpList m = attention(megatron);
  int recomputed = 0;
  for (const Op& op : m) recomputed += op.phase == OpPhase::kRecompute ? 1 : 0;
  EXPECT_EQ(recomputed, 1);
  EXPECT_NE(FindOp(m, "attention_core", OpPhase::kRecompute), nullptr);
}

// Transformer Engine's module call (TE issue #2053: te.Linear 2.69-2.73x torch.nn.Linear on the
// host): under te_modules a Linear's forward GEMM costs 1 + 1.7 = 2.7 dispatches, a recompute of
// it (the module called again) as much, its dgrad and wgrad 1 each; a plain PyTorch linear
// (PlainTorchLinear: Megatron's router gate, its output layer) 1; without te_modules 1.
TEST(ModuleOpBuilderTest, TransformerEngineModuleCallsCostTheHostMore) {
  LayerDims te;
  te.te_modules = true;
  OpList ops;
  ModuleOpBuilder b("mlp", ops, 16, te);
  b.Linear("fc", 512, 1024, 2048, DType::kBf16);
  b.Linear("gate", 512, 1024, 8, DType::kBf16);
  b.PlainTorchLinear();
  b.Finish(Recompute::kFull);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(ops, "fc", OpPhase::kForward)), 2.7);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(ops, "fc", OpPhase::kRecompute)), 2.7);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(ops, "fc", OpPhase::kBackwardDgrad)), 1);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(ops, "fc", OpPhase::kBackwardWgrad)), 1);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(ops, "gate", OpPhase::kForward)), 1);
  LayerDims torch;
  OpList plain;
  ModuleOpBuilder p("mlp", plain, 8, torch);
  p.Linear("fc", 512, 1024, 2048, DType::kBf16);
  p.Finish(Recompute::kNone);
  EXPECT_DOUBLE_EQ(HostDispatches(*FindOp(plain, "fc", OpPhase::kForward)), 1);
}

TEST(ModuleOpBuilderTest, Bf16LinearHasNoCasts) {
  LayerDims dims;
  OpList ops;
  ModuleOpBuilder b("mlp", ops, 8, dims);
  b.Linear("fc", 512, 1024, 2048, DType::kBf16, 1, 1, LinearInput::kFusedNorm);
  b.Finish(Recompute::kFull);
  for (const Op& op : ops) EXPECT_EQ(op.kind, OpKind::kGemm) << op.name;
}

// TE casts a weight once per step (cached over the step's micro-batches); FSDP casts it every
// micro-batch; bf16 casts nothing.
TEST(ResolveDimsTest, Fp8WeightCastCachedForTheStepExceptUnderFsdp) {
  Case c(testing::Llama31_8B());
  c.training.precision = DType::kFp8;
  c.training.micro_batch = 2;
  c.training.global_batch = 64;
  c.parallel.dp = 4;
  absl::StatusOr<LayerDims> dims = profiler_internal::ResolveDims(c.Ctx());
  ASSERT_THAT(dims, IsOk());
  EXPECT_TRUE(dims->quantized);
  EXPECT_TRUE(dims->weight_cast_cached);
  EXPECT_EQ(dims->act_dtype, DType::kBf16);
  EXPECT_THAT(profiler_internal::NormOutputBytes(*dims, true), IsNearRel(1.0, 1e-12));
  EXPECT_THAT(profiler_internal::NormOutputBytes(*dims, false), IsNearRel(2.0, 1e-12));

  c.parallel.fsdp = true;
  dims = profiler_internal::ResolveDims(c.Ctx());
  ASSERT_THAT(dims, IsOk());
  EXPECT_FALSE(dims->weight_cast_cached);

  c.training.precision = DType::kBf16;
  dims = profiler_internal::ResolveDims(c.Ctx());
  ASSERT_THAT(dims, IsOk());
  EXPECT_FALSE(dims->quantized);
  EXPECT_THAT(profiler_internal::NormOutputBytes(*dims, true), IsNearRel(2.0, 1e-12));
}

// TensorFlow's AMP (training.tf_amp): the GEMMs stay fp16 (act_dtype), the elementwise work
// between them is counted at fp32 (act_bytes 4), and a GEMM keeps the fp16 cast of its input
// for the weight gradient (2 bytes).
TEST(ResolveDimsTest, TfAmpCountsTheElementwiseWorkInFp32) {
  Case c(testing::Llama31_8B());
  c.training.precision = DType::kFp16;
  c.training.tf_amp = true;
  absl::StatusOr<LayerDims> dims = profiler_internal::ResolveDims(c.Ctx());
  ASSERT_THAT(dims, IsOk());
  EXPECT_TRUE(dims->tf_amp);
  EXPECT_FALSE(dims->quantized);
  EXPECT_EQ(dims->gemm_dtype, DType::kFp16);
  EXPECT_EQ(dims->act_dtype, DType::kFp16);
  EXPECT_DOUBLE_EQ(dims->act_bytes, 4.0);
  EXPECT_DOUBLE_EQ(profiler_internal::SavedLinearInputBytes(*dims), 2.0);
}

// x[512, 1024] · W[1024, 2048] in fp16 under TF AMP: the fp32 variable is read and cast to fp16
// in every micro-batch, 1024·2048 = 2,097,152 weights · (4 + 2) B = 12,582,912 B, and the fp16
// weight gradient is cast back after the wgrad, the same bytes. A GEMM inside the attention
// core multiplies activations and has no cast.
TEST(ModuleOpBuilderTest, TfAmpCastsEveryWeightBothWays) {
  LayerDims dims;
  dims.gemm_dtype = DType::kFp16;
  dims.act_dtype = DType::kFp16;
  dims.act_bytes = 4.0;
  dims.tf_amp = true;
  OpList ops;
  ModuleOpBuilder b("mlp", ops, 8, dims);
  b.Linear("fc", 512, 1024, 2048, DType::kFp16);
  b.BeginAttentionCore();
  b.Linear("attention_scores", 128, 64, 128, DType::kFp16, 16);
  b.EndAttentionCore();
  b.Finish(Recompute::kNone);
  EXPECT_THAT(Names(ops, OpPhase::kForward),
              ::testing::ElementsAre("weight_amp_cast", "fc", "attention_scores"));
  EXPECT_THAT(Names(ops, OpPhase::kBackwardWgrad),
              ::testing::ElementsAre("attention_scores", "fc", "wgrad_amp_cast"));
  EXPECT_EQ(CountPhase(ops, OpPhase::kOncePerStep), 0);
  const Op* weight = FindOp(ops, "weight_amp_cast", OpPhase::kForward);
  const Op* grad = FindOp(ops, "wgrad_amp_cast", OpPhase::kBackwardWgrad);
  ASSERT_NE(weight, nullptr);
  ASSERT_NE(grad, nullptr);
  EXPECT_EQ(weight->kind, OpKind::kMemory);
  EXPECT_THAT(weight->bytes.value(), IsNearRel(12582912.0, 1e-12));
  EXPECT_THAT(grad->bytes.value(), IsNearRel(12582912.0, 1e-12));
  // Full recompute casts the weight again with the forward.
  OpList recompute_ops;
  ModuleOpBuilder r("mlp", recompute_ops, 8, dims);
  r.Linear("fc", 512, 1024, 2048, DType::kFp16);
  r.Finish(Recompute::kFull);
  EXPECT_NE(FindOp(recompute_ops, "weight_amp_cast", OpPhase::kRecompute), nullptr);
}

// The norms of one layer under TF AMP move twice the bytes of fp16 kernels: a LayerNorm reads x
// and writes y, 2·4 bytes per element instead of 2·2.
TEST(ProfileNormsTest, TfAmpNormsMoveFp32Bytes) {
  Case c(testing::Llama31_8B());
  c.training.precision = DType::kFp16;
  c.training.micro_batch = 1;
  c.training.seq_len = 4096;
  absl::StatusOr<ModuleProfile> half = ProfileNorms(c.Ctx());
  c.training.tf_amp = true;
  absl::StatusOr<ModuleProfile> amp = ProfileNorms(c.Ctx());
  ASSERT_THAT(half, IsOk());
  ASSERT_THAT(amp, IsOk());
  const Op* h = FindOp(half->ops, "attention_residual_add", OpPhase::kForward);
  const Op* a = FindOp(amp->ops, "attention_residual_add", OpPhase::kForward);
  ASSERT_NE(h, nullptr);
  ASSERT_NE(a, nullptr);
  // 3 streams of 4096·4096 elements: 3·2 B and 3·4 B per element.
  EXPECT_THAT(h->bytes.value(), IsNearRel(3.0 * 2.0 * 4096.0 * 4096.0, 1e-12));
  EXPECT_THAT(a->bytes.value(), IsNearRel(3.0 * 4.0 * 4096.0 * 4096.0, 1e-12));
}

}  // namespace
}  // namespace projector
