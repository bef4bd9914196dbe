#include "profilers/profiler_internal.h"

#include <algorithm>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector::profiler_internal {
namespace {

// HBM traffic of one GEMM problem: read A[m,k] and B[k,n] in the GEMM dtype, write C[m,n].
// A wgrad accumulates into Megatron's fp32 main_grad (gradient_accumulation_fusion): read and
// write 4 bytes per weight element.
Bytes GemmBytes(const GemmShape& s, bool accumulate_fp32) {
  double in_bytes = BytesPerElement(s.dtype);
  double out_bytes = accumulate_fp32 ? 8.0 : GemmOutputBytes(s.dtype);
  double per_problem = (D(s.m) * D(s.k) + D(s.k) * D(s.n)) * in_bytes + D(s.m) * D(s.n) * out_bytes;
  return Bytes(per_problem * D(s.batch));
}

// FP8 training as Transformer Engine runs it (TE 1.x delayed scaling, the recipe Megatron-Core
// and NeMo use on Hopper: --fp8-format hybrid, E4M3 forward / E5M2 gradients; TE 2.x keeps the
// same data movement through its Float8Quantizer). Sources:
//   transformer_engine/pytorch/module/linear.py, _Linear.forward: a bf16 input is quantised by
//     fp8_cast_transpose_fused (one kernel: read bf16, write the fp8 row-major copy for this
//     GEMM and the fp8 transposed copy the wgrad GEMM needs, amax recorded on the way);
//     _Linear.backward (grad_output_preprocess): dY is quantised the same way
//     (fp8_cast_transpose_fused, or fp8_cast_transpose_bgrad_fused with a bias): the fp8 dY
//     feeds dgrad, its transpose wgrad;
//   transformer_engine/pytorch/module/layernorm_linear.py: the norm kernel writes fp8 directly
//     (layernorm_fwd_fp8 / rmsnorm_fwd_fp8) and backward makes the transposed copy with
//     tex.fp8_transpose(ln_out_total) before wgrad;
//   transformer_engine/pytorch/module/base.py (get_fp8_workspace, the fp8 weight cache) and the
//     is_first_microbatch argument of Linear.forward (its docstring: "during FP8 training, it
//     allows caching of the FP8 versions of the weights"): the weight is cast + transposed once
//     per step, on the first micro-batch; Megatron-Core passes is_first_microbatch
//     (megatron/core/extensions/transformer_engine.py TELinear.forward,
//     pipeline_parallel/schedules.py forward_step -> set_is_first_microbatch).
//   transformer_engine/common/transpose/cast_transpose.cu: the kernels are HBM-bound streaming
//     kernels (read each element once, write each output once), so they go through the memory
//     backend.
// The fp8 GEMMs write bf16 directly (cuBLASLt epilogue applies the scales; wgrad accumulates
// into the fp32 main_grad): no separate dequantisation kernel exists to count.
// Not counted: the delayed-scaling amax/scale update, one fused multi-tensor kernel per
// fp8_autocast region (TE fp8.py FP8GlobalStateManager.reduce_and_update_fp8_tensors ->
// tex.fused_amax_and_scale_update_after_reduction) over a few KB of amax history, i.e. a few µs
// per micro-batch and model chunk against milliseconds per layer; and the scale factors of
// MXFP8 (1 byte per 32 elements, < 2% of a cast).
//
// Quantising one element: read it in bf16 (e bytes), write the fp8 copy and its transpose
// (2q bytes). ~3 vector FLOPs per element (|x|, running max, scale).
constexpr double kCastFlopsPerElement = 3.0;

// Scale bytes per element of one quantised copy under the block-scaled recipes: blockwise one
// fp32 scale per 128 elements (TE Float8BlockScaling, 1x128 blocks; the 128x128 weight blocks
// are smaller still), MXFP8 one E8M0 byte per 32 elements (OCP Microscaling Formats v1.0, block
// size 32). A cast writes two copies (row-wise for the forward GEMM, column-wise for wgrad).
constexpr double kBlockwiseScaleBytesPerCopy = 4.0 / 128.0;
constexpr double kMxfp8ScaleBytesPerCopy = 1.0 / 32.0;
constexpr double kBlockwiseScaleBytesPerElement = 2.0 * kBlockwiseScaleBytesPerCopy;
constexpr double kMxfp8ScaleBytesPerElement = 2.0 * kMxfp8ScaleBytesPerCopy;

// The scale swizzles of one MXFP8 GEMM with operands of `a` and `b` elements (over all of a
// grouped GEMM's experts). Transformer Engine's GEMM call rearranges each operand's E8M0 scales
// (1 byte per 32 elements) into the tiled layout cuBLAS reads, into a freshly allocated buffer,
// before every GEMM, forward and backward (pytorch/csrc/extensions/gemm.cpp: generic_gemm calls
// swizzle_scaling_factors for A and B; te_general_grouped_gemm multi_tensor_swizzle_scaling_
// factors, one kernel per operand for all the experts): two kernels reading and writing the
// scales. Launch-bound: TE PR #3519 times a captured swizzle at 1.1-4.3 us on GB200 (64x64 to
// 16384x4128). Until scales are stored pre-swizzled (TE issue #2446, 2025-12), as in the
// containers of the public runs. Host cost: MakeScaleSwizzle.
MemoryOp ScaleSwizzleOp(double a, double b, int64_t batch) {
  return MemoryOp{.bytes = Bytes(2.0 * kMxfp8ScaleBytesPerCopy * (a + b) * D(batch)),
                  .flops = Flops(0),
                  .launches = 2};
}

}  // namespace

Fp8Quantization QuantizationOf(Fp8Recipe recipe, double e, double q) {
  const double cast = e + 2.0 * q;  // read bf16, write the fp8 copy and its transpose
  switch (recipe) {
    case Fp8Recipe::kTensorwise:
      // TE Float8CurrentScalingQuantizer: an amax kernel reads the tensor, a one-thread kernel
      // turns the amax into the scale, then the cast-transpose reads it again.
      return {.bytes_per_element = e + cast,
              .kernels = 3,
              .fused_over_experts = false,
              .block_scaled_gemm = false};
    case Fp8Recipe::kBlockwise:
      return {.bytes_per_element = cast + kBlockwiseScaleBytesPerElement,
              .kernels = 1,
              .fused_over_experts = false,
              .block_scaled_gemm = true};
    case Fp8Recipe::kMxfp8:
      return {.bytes_per_element = cast + kMxfp8ScaleBytesPerElement,
              .kernels = 1,
              .fused_over_experts = false,
              .block_scaled_gemm = true};
    case Fp8Recipe::kRowwise:
      // torchao rowwise: the row amax and the cast of each orientation, Inductor fusing each
      // pair: the tensor read twice, two kernels.
      return {.bytes_per_element = e + cast,
              .kernels = 2,
              .fused_over_experts = false,
              .block_scaled_gemm = false};
    case Fp8Recipe::kAuto:
    case Fp8Recipe::kDelayed:
      break;
  }
  // Delayed scaling: one cast-transpose with the amax recorded on the way (the scale comes from
  // earlier steps); TE's GroupedLinear quantises all experts in one multi-tensor kernel
  // (fused_multi_cast_transpose).
  return {.bytes_per_element = cast,
          .kernels = 1,
          .fused_over_experts = true,
          .block_scaled_gemm = false};
}

int64_t StandardHeadDim(const ModelSpec& model) {
  if (model.head_dim > 0) return model.head_dim;
  if (model.num_attention_heads <= 0) return 0;
  return model.hidden_size / model.num_attention_heads;
}

absl::Status CheckDivisible(std::string_view what, int64_t value, std::string_view by_name,
                            int64_t by) {
  if (by > 0 && value % by == 0) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(std::string(what), " ", value, " is not divisible by ", std::string(by_name),
                   " ", by));
}

// What a quantised linear layer keeps of its input for the weight gradient. Transformer
// Engine keeps the quantised copy, not the bf16 input: transformer_engine/pytorch/module/
// linear.py (_Linear.forward) and grouped_linear.py call
// inputmat.update_usage(rowwise_usage=False, columnwise_usage=True) before saving it ("Discard
// row-wise data since it is not needed in backward pass"; the row-wise copy is kept instead when
// sequence parallelism gathers it again in backward, the same size), and layernorm_linear.py
// saves the fp8 ln_out its norm kernel wrote. torchao's Float8Linear (the rowwise recipe,
// torchtitan) saves the high-precision input and casts again in backward
// (torchao/float8/float8_linear.py, matmul_with_hp_or_float8_args.forward:
// ctx.save_for_backward(input_hp, weight_hp_t)).
double SavedLinearInputBytes(const LayerDims& dims) {
  // TF AMP saves the fp16 cast of the GEMM's input for its weight gradient.
  if (dims.tf_amp) return BytesPerElement(dims.act_dtype);
  if (!dims.quantized || dims.inference) return dims.act_bytes;
  const double q = BytesPerElement(dims.gemm_dtype);
  switch (dims.fp8_recipe) {
    case Fp8Recipe::kRowwise:
      return dims.act_bytes;
    case Fp8Recipe::kBlockwise:
      return q + kBlockwiseScaleBytesPerCopy;
    case Fp8Recipe::kMxfp8:
      return q + kMxfp8ScaleBytesPerCopy;
    case Fp8Recipe::kAuto:
    case Fp8Recipe::kDelayed:
    case Fp8Recipe::kTensorwise:
      break;
  }
  return q;  // one fp32 scale per tensor
}

double GemmOutputBytes(DType dtype) {
  if (dtype == DType::kFp8 || dtype == DType::kFp4) return 2.0;
  return BytesPerElement(dtype);
}

double NormOutputBytes(const LayerDims& dims, bool fused_into_linear) {
  return dims.quantized && fused_into_linear ? BytesPerElement(dims.gemm_dtype) : dims.act_bytes;
}

absl::StatusOr<LayerDims> ResolveDims(const ProfileContext& ctx) {
  const TrainingConfig& training = ctx.training;
  const ParallelConfig& parallel = ctx.parallel;
  if (training.micro_batch <= 0 || training.seq_len <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "micro_batch and seq_len must be > 0, got ", training.micro_batch, " and ",
        training.seq_len));
  }
  if (parallel.tp < 1 || parallel.cp < 1 || parallel.ep < 1 || parallel.etp < 1) {
    return absl::InvalidArgumentError(absl::StrCat("tp, cp, ep and etp must be >= 1, got tp=",
                                                   parallel.tp, " cp=", parallel.cp, " ep=",
                                                   parallel.ep, " etp=", parallel.etp));
  }
  if (ctx.model.hidden_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", ctx.model.name, ": hidden_size must be > 0"));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckDivisible("seq_len", training.seq_len, "cp", parallel.cp));
  LayerDims dims;
  dims.micro_batch = training.micro_batch;
  dims.seq_q = training.seq_len / parallel.cp;
  dims.seq_kv = training.seq_len;
  dims.tokens = training.micro_batch * dims.seq_q;
  dims.tp = parallel.tp;
  if (parallel.sequence_parallel) {
    PROJECTOR_RETURN_IF_ERROR(CheckDivisible("tokens per micro-batch (micro_batch*seq_len/cp)",
                                             dims.tokens, "tp (sequence parallel)", parallel.tp));
    dims.sp_tokens = dims.tokens / parallel.tp;
  } else {
    dims.sp_tokens = dims.tokens;
  }
  dims.gemm_dtype = training.precision;
  // FP8/FP4 training (Transformer Engine) runs the linear layers in low precision; activations,
  // the attention kernel and the output layer stay bf16.
  dims.act_dtype = (training.precision == DType::kFp8 || training.precision == DType::kFp4)
                       ? DType::kBf16
                       : training.precision;
  if (dims.act_dtype == DType::kTf32) dims.act_dtype = DType::kFp32;
  dims.act_bytes = BytesPerElement(dims.act_dtype);
  dims.quantized = BytesPerElement(dims.gemm_dtype) < dims.act_bytes;
  // TensorFlow's AMP keeps the elementwise work between the fp16 GEMMs in fp32
  // (TrainingConfig::tf_amp): 4 bytes per element there; the GEMMs and the attention core's
  // batched GEMMs keep act_dtype.
  dims.tf_amp = training.tf_amp;
  if (dims.tf_amp) dims.act_bytes = BytesPerElement(DType::kFp32);
  // TE casts a weight on the first micro-batch of a step (is_first_microbatch) and reuses the
  // cached fp8 copy for the step's other micro-batches. Under FSDP the gathered full weight is
  // freed after each micro-batch's forward (reshard), so its fp8 copy is made every micro-batch
  // (and is not cached across them: llm-foundry/Composer call te.Linear without
  // is_first_microbatch).
  dims.weight_cast_cached = !parallel.fsdp;
  dims.fp8_recipe = ctx.run.fp8_recipe;
  dims.eager_elementwise = ctx.run.eager_elementwise;
  dims.pytorch_modules = RunsPyTorchAttention(ctx.run.stack);
  dims.op_sac = ctx.run.stack == TrainingStack::kTorchTitan;
  dims.te_modules = ctx.run.stack == TrainingStack::kMegatron && !dims.pytorch_modules;
  dims.grouped_linear_kernel_per_expert = ctx.run.grouped_linear_kernel_per_expert;
  dims.gemm_scale_swizzle = ctx.run.gemm_scale_swizzle;
  dims.hidden_dropout = ctx.run.dropout.hidden > 0;
  dims.attention_dropout = ctx.run.dropout.attention > 0;
  dims.inference = ctx.run.inference;
  return dims;
}

ModuleOpBuilder::ModuleOpBuilder(std::string_view module, OpList& ops, size_t capacity,
                                 const LayerDims& dims)
    : module_(module),
      act_bytes_(dims.act_bytes),
      quantized_(dims.quantized),
      fp8_recipe_(dims.fp8_recipe),
      weight_cast_cached_(dims.weight_cast_cached),
      pytorch_modules_(dims.pytorch_modules),
      te_modules_(dims.te_modules),
      op_sac_(dims.op_sac),
      inference_(dims.inference),
      grouped_linear_kernel_per_expert_(dims.grouped_linear_kernel_per_expert),
      gemm_scale_swizzle_(dims.gemm_scale_swizzle),
      amp_casts_(dims.tf_amp && !dims.inference),
      ops_(ops),
      start_(ops.size()) {
  ops_.reserve(start_ + capacity);
}

Op& ModuleOpBuilder::AddForward(std::string_view name, OpKind kind) {
  PROJECTOR_CHECK(forward_count_ < kMaxForwardOps);
  std::construct_at(&pending_[forward_count_]);  // the slot's lifetime starts here
  pending_[forward_count_].groups =
      current_groups_ |
      (kind == OpKind::kAttention ? RecomputeBit(RecomputeModule::kCoreAttn) : RecomputeModules{0});
  ++forward_count_;
  Op& op = ops_.emplace_back();
  op.name = name;
  op.module = module_;
  op.kind = kind;
  op.phase = OpPhase::kForward;
  return op;
}

MemoryOp ModuleOpBuilder::CastOp(Bytes bytes, double elements) const {
  const Fp8Quantization k = QuantizationOf(fp8_recipe_, act_bytes_, 1.0);
  const int64_t per_expert = k.fused_over_experts ? 1 : linear_host_fanout_;
  return MemoryOp{.bytes = bytes,
                  .flops = Flops(kCastFlopsPerElement * elements),
                  .launches = k.kernels * per_expert};
}

int64_t ModuleOpBuilder::CastHostFanout() const {
  return QuantizationOf(fp8_recipe_, act_bytes_, 1.0).fused_over_experts ? linear_host_fanout_
                                                                         : 1;
}

void ModuleOpBuilder::AddCast(std::string_view name, Bytes bytes_per_repeat,
                              double elements_per_repeat, int64_t repeat, bool once_per_step) {
  Op& op = AddForward(name, OpKind::kMemory);
  if (once_per_step) op.phase = OpPhase::kOncePerStep;
  op.memory = CastOp(bytes_per_repeat, elements_per_repeat);
  op.host_fanout = CastHostFanout();
  op.repeat = repeat;
  op.flops = op.memory.flops * D(repeat);
  op.bytes = op.memory.bytes * D(repeat);
  Pending& p = pending_[forward_count_ - 1];
  p.has_backward = false;
  p.recomputed = !once_per_step;
}

namespace {

// `op` as the scale swizzles `swizzle` run `repeat` times (ScaleSwizzleOp). Launched from TE's
// C++ inside the GEMM call (an at::empty and a kernel launch each: no autograd node, no Python
// op of their own): on the host a forward element-wise launch each, in any phase (host_extra).
void MakeScaleSwizzle(Op& op, const MemoryOp& swizzle, int64_t repeat) {
  op.memory = swizzle;
  op.repeat = repeat;
  op.host_fanout = 0;
  op.host_extra = D(swizzle.launches) * HostCallWeight(OpKind::kMemory, OpPhase::kForward);
  op.flops = swizzle.flops * D(repeat);
  op.bytes = swizzle.bytes * D(repeat);
}

}  // namespace

void ModuleOpBuilder::AddScaleSwizzle(const MemoryOp& swizzle, int64_t repeat) {
  MakeScaleSwizzle(AddForward("scale_swizzle", OpKind::kMemory), swizzle, repeat);
  pending_[forward_count_ - 1].has_backward = false;
}

void ModuleOpBuilder::AddBackwardScaleSwizzle(const MemoryOp& swizzle, int64_t repeat,
                                              OpPhase phase) {
  Op& op = ops_.emplace_back();
  op.name = "scale_swizzle";
  op.module = module_;
  op.kind = OpKind::kMemory;
  op.phase = phase;
  MakeScaleSwizzle(op, swizzle, repeat);
}

void ModuleOpBuilder::AddAmpWeightCast(const MemoryOp& cast, int64_t repeat) {
  Op& op = AddForward("weight_amp_cast", OpKind::kMemory);
  op.memory = cast;
  op.repeat = repeat;
  op.flops = cast.flops * D(repeat);
  op.bytes = cast.bytes * D(repeat);
  pending_[forward_count_ - 1].has_backward = false;
}

// A quantised layer (TE Linear / LayerNormLinear, see the top of this file), per repeat, with
// c the recipe's bytes per quantised element (QuantizationOf; e + 2q under delayed scaling):
//   forward   weight_fp8_cast   in·out·batch elements, c bytes each, once per step in the
//                               first micro-batch (OpPhase::kOncePerStep), or in every
//                               micro-batch and its recompute when not cached (FSDP);
//             input_fp8_cast    m·in·batch elements, c bytes each (kCast only);
//   backward  grad_fp8_cast     m·out·batch elements of dY, c bytes each, before dgrad;
//             input_fp8_transpose  m·in·batch fp8 elements, 2q bytes each, before wgrad
//                               (kFusedNorm only: the norm wrote the row-major fp8 copy).
// Legacy grouped GEMMs (repeat > 1, one TE Linear per expert) cast per expert; the turbo
// grouped GEMM (batch, TE GroupedLinear) casts all experts in one multi-tensor kernel under
// delayed scaling (tex.fused_multi_quantize) and runs the other recipes' kernels per expert.
void ModuleOpBuilder::Linear(std::string_view name, int64_t m, int64_t in, int64_t out,
                             DType dtype, int64_t batch, int64_t repeat, LinearInput input) {
  const double q = BytesPerElement(dtype);
  const bool quantized = quantized_ && q < act_bytes_;
  const Fp8Quantization recipe = QuantizationOf(fp8_recipe_, act_bytes_, q);
  const double cast = recipe.bytes_per_element;
  if (quantized && !inference_) {
    const double weights = D(in) * D(out) * D(batch);
    // A weight cast once per step is not redone when full recompute re-runs the forward
    // (is_first_microbatch is false by then); a per-micro-batch (FSDP) cast is.
    AddCast("weight_fp8_cast", Bytes(cast * weights), weights, repeat,
            /*once_per_step=*/weight_cast_cached_);
  }
  if (quantized) {
    if (input == LinearInput::kCast) {
      const double x = D(m) * D(in) * D(batch);
      AddCast("input_fp8_cast", Bytes(cast * x), x, repeat, /*once_per_step=*/false);
    }
  }
  // MXFP8 (LayerDims::gemm_scale_swizzle): both operands' scales swizzled for cuBLAS before the
  // GEMM (ScaleSwizzleOp).
  const bool swizzle = quantized && gemm_scale_swizzle_;
  if (swizzle) AddScaleSwizzle(ScaleSwizzleOp(D(m) * D(in), D(in) * D(out), batch), repeat);
  // TF AMP: the fp32 variable is read and cast to fp16 in every micro-batch, 4 + 2 bytes per
  // weight (the activations' casts fuse into XLA's elementwise kernels, counted in their fp32
  // bytes); the weight gradient is cast back at the wgrad, 2 + 4 bytes.
  // The attention core's batched GEMMs multiply activations: no weight there.
  const bool amp_casts = amp_casts_ && !InAttentionCore();
  const double amp_weights = D(in) * D(out) * D(batch);
  const MemoryOp amp_cast{.bytes = Bytes(6.0 * amp_weights),
                          .flops = Flops(kCastFlopsPerElement * amp_weights)};
  if (amp_casts) AddAmpWeightCast(amp_cast, repeat);
  Op& op = AddForward(name, OpKind::kGemm);
  op.host_fanout = linear_host_fanout_;
  if (te_modules_) op.host_extra = kTeModuleExtraDispatches;
  op.gemm = GemmShape{.m = m, .n = out, .k = in, .batch = batch, .dtype = dtype};
  op.gemm.block_scaled = quantized && recipe.block_scaled_gemm;
  // A GroupedLinear of batched experts: one kernel per expert where TE launches them so.
  if (linear_host_fanout_ > 1 && grouped_linear_kernel_per_expert_) op.gemm.kernels = batch;
  op.repeat = repeat;
  op.flops = GemmFlops(op.gemm) * D(repeat);
  op.bytes = GemmBytes(op.gemm, /*accumulate_fp32=*/false) * D(repeat);
  if (amp_casts) pending_[forward_count_ - 1].wgrad_cast = amp_cast;
  if (!quantized) return;
  Pending& p = pending_[forward_count_ - 1];
  if (swizzle) {
    // dgrad dX = dY·Wᵀ, wgrad dW = Xᵀ·dY.
    p.dgrad_swizzle = ScaleSwizzleOp(D(m) * D(out), D(in) * D(out), batch);
    p.wgrad_swizzle = ScaleSwizzleOp(D(m) * D(in), D(m) * D(out), batch);
  }
  const double dy = D(m) * D(out) * D(batch);
  p.grad_cast = CastOp(Bytes(cast * dy), dy);
  p.grad_cast_host_fanout = CastHostFanout();
  if (input == LinearInput::kFusedNorm) {
    const double x = D(m) * D(in) * D(batch);
    p.input_transpose = MemoryOp{.bytes = Bytes(2.0 * q * x), .flops = Flops(0)};
  }
}

void ModuleOpBuilder::SeparateInputGradients(int64_t parts) {
  PROJECTOR_CHECK(forward_count_ > 0 && ops_.back().kind == OpKind::kGemm);
  if (parts < 2) return;
  const GemmShape& g = ops_.back().gemm;
  const double x = D(g.m) * D(g.k) * D(g.batch);
  pending_[forward_count_ - 1].input_grad_sum =
      MemoryOp{.bytes = Bytes(3.0 * act_bytes_ * x * D(parts - 1)),
               .flops = Flops(x * D(parts - 1)),
               .launches = parts - 1};
}

void ModuleOpBuilder::PlainTorchLinear() {
  PROJECTOR_CHECK(forward_count_ > 0 && ops_.back().kind == OpKind::kGemm);
  ops_.back().host_extra = 0;
}

void ModuleOpBuilder::SetBackwardGemmDType(DType dtype, const MemoryOp& casts) {
  PROJECTOR_CHECK(forward_count_ > 0 && ops_.back().kind == OpKind::kGemm);
  Pending& p = pending_[forward_count_ - 1];
  p.backward_dtype = dtype;
  p.backward_casts = casts;
}

void ModuleOpBuilder::SetMmOutputs(std::initializer_list<int64_t> widths) {
  PROJECTOR_CHECK(forward_count_ > 0 && ops_.back().kind == OpKind::kGemm);
  Pending& p = pending_[forward_count_ - 1];
  PROJECTOR_CHECK(widths.size() <= p.mm_outputs.size());
  p.mm_parts = 0;
  for (int64_t w : widths) p.mm_outputs[p.mm_parts++] = w;
}

void ModuleOpBuilder::SplitOutputGradients(int64_t parts) {
  PROJECTOR_CHECK(forward_count_ > 0 && ops_.back().kind == OpKind::kGemm);
  if (parts < 2) return;
  const GemmShape& g = ops_.back().gemm;
  // torch.cat: every element of the parts read once and written once into the joined gradient.
  pending_[forward_count_ - 1].output_grad_cat =
      MemoryOp{.bytes = Bytes(2.0 * act_bytes_ * D(g.m) * D(g.n) * D(g.batch)),
               .flops = Flops(0),
               .launches = 1};
}

void ModuleOpBuilder::Memory(std::string_view name, MemoryOp forward, MemoryOp backward,
                             OpPhase backward_phase) {
  Op& op = AddForward(name, OpKind::kMemory);
  op.memory = forward;
  op.flops = forward.flops;
  op.bytes = forward.bytes;
  Pending& p = pending_[forward_count_ - 1];
  p.backward_memory = backward;
  p.backward_phase = backward_phase;
  p.has_backward = backward.bytes.value() > 0 || backward.flops.value() > 0;
}

void ModuleOpBuilder::Attention(std::string_view name, const AttentionShape& shape,
                                Bytes forward_bytes, Bytes backward_bytes) {
  Op& op = AddForward(name, OpKind::kAttention);
  op.attention = shape;
  op.attention_pass = AttentionPass::kForward;
  op.flops = AttentionFlops(shape, AttentionPass::kForward);
  op.bytes = forward_bytes;
  pending_[forward_count_ - 1].backward_bytes = backward_bytes;
}

ModuleOpBuilder::MmColumns ModuleOpBuilder::OpSacColumns(size_t at, int64_t& mm_count) const {
  const Op& op = ops_[at];
  const Pending& p = pending_[at - start_];
  MmColumns columns;
  const bool in_core = (p.groups & RecomputeBit(RecomputeModule::kCoreAttn)) != 0;
  const bool one_mm = op.kind == OpKind::kGemm && !in_core && op.gemm.batch == 1 &&
                      op.host_fanout == 1;
  if (!one_mm) return columns;
  // A float8 linear (torchao's Float8Linear) multiplies with aten._scaled_mm, which the
  // policy's save list (aten.mm, the SDPA kernels, reduce_scatter, aten.max) does not hold and
  // its mm count does not count: re-run whole (torchtitan parallelize_llama.py _save_list).
  if (quantized_ && BytesPerElement(op.gemm.dtype) < act_bytes_) {
    columns.rerun = op.gemm.n;
    return columns;
  }
  // Every second mm of the block is re-run; a Linear of several mms re-runs its even ones.
  const size_t parts = p.mm_parts > 0 ? p.mm_parts : 1;
  for (size_t j = 0; j < parts; ++j) {
    const int64_t width = p.mm_parts > 0 ? p.mm_outputs[j] : op.gemm.n;
    (++mm_count % 2 == 0 ? columns.rerun : columns.saved) += width;
  }
  return columns;
}

// torchtitan's per-op SAC over this module's forward ops (Finish): the kRecompute copies.
void ModuleOpBuilder::AddOpSacRecompute(size_t first, size_t end) {
  int64_t mm_count = 0;
  for (size_t i = first; i < end; ++i) {
    const Pending& p = pending_[i - first];
    if (!p.recomputed) continue;
    if (ops_[i].kind == OpKind::kAttention) continue;  // SDPA's output is saved
    const MmColumns columns = OpSacColumns(i, mm_count);
    if (columns.saved + columns.rerun > 0 && columns.rerun == 0) continue;
    Op copy = ops_[i];
    copy.phase = OpPhase::kRecompute;
    if (columns.rerun > 0) {
      copy.gemm.n = columns.rerun;
      copy.flops = GemmFlops(copy.gemm) * D(copy.repeat);
      copy.bytes = GemmBytes(copy.gemm, /*accumulate_fp32=*/false) * D(copy.repeat);
    }
    ops_.push_back(copy);
  }
}

Bytes ModuleOpBuilder::StoredUnderOpSac() const {
  int64_t mm_count = 0;
  double stored = 0;
  for (size_t i = start_; i < start_ + forward_count_; ++i) {
    const Op& op = ops_[i];
    if (op.kind == OpKind::kAttention) {
      const AttentionShape& a = op.attention;
      const double rows = D(a.batch) * D(a.num_q_heads) * D(a.seq_q);
      stored += rows * (act_bytes_ * D(a.v_head_dim) + 4.0);
      continue;
    }
    if (!pending_[i - start_].recomputed) continue;
    const MmColumns columns = OpSacColumns(i, mm_count);
    stored += D(op.gemm.m) * D(columns.saved) * GemmOutputBytes(op.gemm.dtype) * D(op.repeat);
  }
  return Bytes(stored);
}

void ModuleOpBuilder::Finish(Recompute recompute, RecomputeModules modules) {
  const size_t first = start_;
  const size_t end = start_ + forward_count_;
  // Recompute and backward ops start as a copy of their forward op made in place (push_back of
  // an element of the list itself, which the vector allows even when it grows); the forward op
  // is read again by index after each.
  auto copy_forward = [this](size_t at) -> Op& {
    ops_.push_back(ops_[at]);
    return ops_.back();
  };
  if (op_sac_) op_sac_stored_ += StoredUnderOpSac();
  if (recompute == Recompute::kSelective && op_sac_) {
    AddOpSacRecompute(first, end);
  } else if (recompute != Recompute::kNone) {
    for (size_t i = first; i < end; ++i) {
      if (recompute == Recompute::kSelective && (pending_[i - first].groups & modules) == 0) {
        continue;
      }
      if (!pending_[i - first].recomputed) continue;
      copy_forward(i).phase = OpPhase::kRecompute;
    }
  }
  for (size_t idx = forward_count_; idx-- > 0;) {
    const size_t at = first + idx;
    const Pending& p = pending_[idx];
    switch (ops_[at].kind) {
      case OpKind::kGemm: {
        const GemmShape f = ops_[at].gemm;
        // dgrad dX = dY·Wᵀ (B transposed), wgrad dW = Xᵀ·dY (A transposed), in the backward
        // dtype (SetBackwardGemmDType).
        auto backward_gemm = [&f, dtype = p.backward_dtype.value_or(f.dtype)](
                                 int64_t m, int64_t n, int64_t k, bool transpose_a) {
          return GemmShape{.m = m,
                           .n = n,
                           .k = k,
                           .batch = f.batch,
                           .dtype = dtype,
                           .transpose_a = transpose_a,
                           .transpose_b = !transpose_a,
                           .block_scaled = f.block_scaled,
                           .kernels = f.kernels};
        };
        const int64_t repeat = ops_[at].repeat;
        const int64_t host_fanout = ops_[at].host_fanout;
        // Memory-bound companions of a quantised GEMM's backward, run `repeat` times like it.
        auto add_memory = [&](std::string_view name, const MemoryOp& m, OpPhase phase) {
          Op& op = ops_.emplace_back();
          op.name = name;
          op.module = module_;
          op.kind = OpKind::kMemory;
          op.phase = phase;
          op.memory = m;
          op.repeat = repeat;
          op.host_fanout = host_fanout;
          op.flops = m.flops * D(repeat);
          op.bytes = m.bytes * D(repeat);
        };
        if (p.output_grad_cat.launches > 0) {
          add_memory("output_grad_cat", p.output_grad_cat, OpPhase::kBackwardDgrad);
        }
        if (p.grad_cast.bytes.value() > 0) {
          add_memory("grad_fp8_cast", p.grad_cast, OpPhase::kBackwardDgrad);
          ops_.back().host_fanout = p.grad_cast_host_fanout;
        }
        if (p.backward_casts.launches > 0) {
          add_memory("backward_operand_cast", p.backward_casts, OpPhase::kBackwardDgrad);
        }
        if (p.dgrad_swizzle.launches > 0) {
          AddBackwardScaleSwizzle(p.dgrad_swizzle, repeat, OpPhase::kBackwardDgrad);
        }
        Op& dgrad = copy_forward(at);
        dgrad.phase = OpPhase::kBackwardDgrad;
        dgrad.host_extra = 0;  // the module's forward call was counted once
        dgrad.gemm = backward_gemm(f.m, f.k, f.n, /*transpose_a=*/false);
        dgrad.flops = GemmFlops(dgrad.gemm) * D(repeat);
        dgrad.bytes = GemmBytes(dgrad.gemm, false) * D(repeat);
        if (p.input_grad_sum.launches > 0) {
          add_memory("input_grad_sum", p.input_grad_sum, OpPhase::kBackwardDgrad);
        }
        if (p.input_transpose.bytes.value() > 0) {
          add_memory("input_fp8_transpose", p.input_transpose, OpPhase::kBackwardWgrad);
        }
        if (p.wgrad_swizzle.launches > 0) {
          AddBackwardScaleSwizzle(p.wgrad_swizzle, repeat, OpPhase::kBackwardWgrad);
        }
        Op& wgrad = copy_forward(at);
        wgrad.phase = OpPhase::kBackwardWgrad;
        wgrad.host_extra = 0;
        wgrad.gemm = backward_gemm(f.k, f.n, f.m, /*transpose_a=*/true);
        wgrad.flops = GemmFlops(wgrad.gemm) * D(repeat);
        wgrad.bytes = GemmBytes(wgrad.gemm, true) * D(repeat);
        if (p.wgrad_cast.bytes.value() > 0) {
          add_memory("wgrad_amp_cast", p.wgrad_cast, OpPhase::kBackwardWgrad);
        }
        break;
      }
      case OpKind::kAttention: {
        Op& bwd = copy_forward(at);
        bwd.phase = OpPhase::kBackwardDgrad;
        bwd.attention_pass = AttentionPass::kBackward;
        bwd.flops = AttentionFlops(bwd.attention, AttentionPass::kBackward);
        bwd.bytes = p.backward_bytes;
        break;
      }
      case OpKind::kMemory: {
        if (!p.has_backward) break;
        Op& bwd = copy_forward(at);
        bwd.phase = p.backward_phase;
        bwd.memory = p.backward_memory;
        bwd.flops = p.backward_memory.flops;
        bwd.bytes = p.backward_memory.bytes;
        break;
      }
      case OpKind::kCollective:
        break;
    }
  }
  forward_count_ = 0;
  start_ = ops_.size();
}

EagerKernels EagerRmsNorm(double e) {
  constexpr double f = 4.0;  // fp32
  return {.forward_bytes = 4.0 * e + 7.0 * f,
          .backward_bytes = 8.0 * e + 19.0 * f,
          .forward_launches = 8,
          .backward_launches = 16};
}

EagerKernels EagerSwiGlu(double e) {
  return {.forward_bytes = 5.0 * e,
          .backward_bytes = 9.0 * e,
          .forward_launches = 2,
          .backward_launches = 3};
}

EagerKernels EagerRope(double e, bool strided_gradient) {
  constexpr double f = 4.0;  // fp32
  return {.forward_bytes = 2.0 * e + 4.0 * f,
          .backward_bytes = 2.0 * e + 4.0 * f + (strided_gradient ? 2.0 * f : 0.0),
          .forward_launches = 3,
          .backward_launches = strided_gradient ? 4 : 3};
}

EagerKernels NormKernels(double e, double out_bytes, bool eager) {
  if (eager) return EagerRmsNorm(e);
  return {.forward_bytes = e + out_bytes,
          .backward_bytes = 3.0 * e,
          .forward_launches = 1,
          .backward_launches = 1};
}

void AddMlpOps(ModuleOpBuilder& b, const MlpOpNames& names, int64_t m, int64_t hidden,
               int64_t f_local, bool gated, DType gemm_dtype, double act_bytes, int64_t act_rows,
               int64_t batch, int64_t repeat, LinearInput fc1_input, bool eager) {
  b.Linear(names.fc1, m, hidden, gated ? 2 * f_local : f_local, gemm_dtype, batch, repeat,
           fc1_input);
  // PyTorch module code runs the gate and up projections as two linear layers (two mms).
  if (gated && b.pytorch_modules()) b.SetMmOutputs({f_local, f_local});
  // Eager PyTorch SwiGLU code (torchtitan's w1/w3, Hugging Face's gate_proj/up_proj) runs the
  // gate and up projections as two linear layers.
  if (gated && eager) b.SeparateInputGradients(2);
  const double n = D(act_rows) * D(f_local);
  const double e = act_bytes;
  if (names.routed_experts) b.BeginRecomputeGroup(RecomputeModule::kMoeAct);
  if (gated && eager) {
    // One eager kernel per op over all `act_rows` rows (grouped experts included).
    const EagerKernels k = EagerSwiGlu(e);
    b.Memory(names.act, k.Forward(n, 5.0 * n), k.Backward(n, 10.0 * n));
  } else if (gated) {
    // SwiGLU silu(g)·u: forward reads g and u, writes the product (~5 FLOPs per output:
    // exp, add, divide, two multiplies); backward reads g, u, dy and writes dg, du.
    b.Memory(names.act, MemoryOp{.bytes = Bytes(3.0 * e * n), .flops = Flops(5.0 * n)},
             MemoryOp{.bytes = Bytes(5.0 * e * n), .flops = Flops(10.0 * n)});
  } else {
    // GELU (tanh form, ~8 FLOPs per element): forward reads x and writes y; backward reads x
    // and dy and writes dx.
    b.Memory(names.act, MemoryOp{.bytes = Bytes(2.0 * e * n), .flops = Flops(8.0 * n)},
             MemoryOp{.bytes = Bytes(3.0 * e * n), .flops = Flops(16.0 * n)});
  }
  if (names.routed_experts) b.EndRecomputeGroup(RecomputeModule::kMoeAct);
  b.Linear(names.fc2, m, f_local, hidden, gemm_dtype, batch, repeat);
}

double MlpParameters(int64_t hidden, int64_t f_local, bool gated, bool bias) {
  double params = (gated ? 3.0 : 2.0) * D(hidden) * D(f_local);
  if (bias) params += (gated ? 2.0 : 1.0) * D(f_local) + D(hidden);
  return params;
}

double NormParamsPerElement(const ModelSpec& model) {
  return model.norm == NormKind::kLayerNorm && model.linear_bias ? 2.0 : 1.0;
}

double MlpInnerActivationBytes(int64_t rows, int64_t f_local, bool gated, const LayerDims& dims) {
  const double activation_input = gated ? 2.0 : 1.0;
  const double silu_output = gated && dims.eager_elementwise ? 1.0 : 0.0;
  return D(rows) * D(f_local) *
         (dims.act_bytes * (activation_input + silu_output) + SavedLinearInputBytes(dims));
}

}  // namespace projector::profiler_internal
