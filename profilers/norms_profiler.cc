// Norms profiler: the pre-attention and pre-MLP norms (RMSNorm or LayerNorm) and the two
// residual adds of one pre-norm transformer layer, all memory-bound. Under sequence
// parallelism each GPU normalises and adds only its T/t slice of the tokens.
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

absl::StatusOr<ModuleProfile> ProfileNorms(const ProfileContext& ctx, bool moe_layer) {
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  const double n = D(dims.sp_tokens) * D(model.hidden_size);
  const double e = dims.act_bytes;
  const bool layer_norm = model.norm == NormKind::kLayerNorm;

  // Norm: forward reads x, writes y (RMSNorm ~4 FLOPs per element: square, sum, scale,
  // weight; LayerNorm ~7: mean, centre, square, sum, scale, weight, bias). Backward reads x and
  // dy and writes dx; the weight-gradient reduction rides along. Under FP8 a norm fused into a
  // TE LayerNormLinear writes y in fp8 (TE layernorm_linear.py: layernorm_fwd_fp8 /
  // rmsnorm_fwd_fp8); Megatron fuses the input norm into a standard attention's QKV projection
  // and the pre-MLP norm into a dense fc1 (gpt_layer_specs.py); MLA's input norm and MoE's
  // pre-MLP norm are separate TENorms with bf16 outputs.
  const double flops_per_element = layer_norm ? 7.0 : 4.0;
  const double attention_norm_out =
      profiler_internal::NormOutputBytes(dims, !model.mla.has_value());
  const double mlp_norm_out = profiler_internal::NormOutputBytes(dims, !moe_layer);
  // Eager PyTorch RMSNorm: one kernel per op of the decomposition (EagerRmsNorm). LayerNorm is
  // one kernel eagerly too (F.layer_norm: native_layer_norm and its backward).
  const bool eager_norm = dims.eager_elementwise && !layer_norm;
  const profiler_internal::EagerKernels input_norm =
      profiler_internal::NormKernels(e, attention_norm_out, eager_norm);
  const profiler_internal::EagerKernels pre_mlp_norm =
      profiler_internal::NormKernels(e, mlp_norm_out, eager_norm);
  const double norm_bwd_flops = (layer_norm ? 14.0 : 8.0) * n;
  // Residual add: reads two streams and writes one. In backward the gradient of the residual
  // branch point is the sum of two incoming gradients: the same traffic.
  MemoryOp residual{.bytes = Bytes(3.0 * e * n), .flops = Flops(n)};
  MemoryOp residual_bwd = residual;
  // Hidden dropout on the branch before the add. Megatron fuses it into the add
  // (bias_dropout_add_fused_train, a TorchScript/nvFuser kernel): the forward also writes the
  // 1-byte keep mask, 3e + 1 per element; an eager stack runs torch's dropout as a kernel of
  // its own (read e, write e and the mask) before the add. Backward, either way, scales the
  // branch gradient by the mask: read dy and the mask, write dx, 2e + 1, besides the sum above.
  // The mask is stored with the module that owns the branch (attention, MLP).
  if (dims.hidden_dropout) {
    residual.bytes += Bytes((dims.eager_elementwise ? 2.0 * e + 1.0 : 1.0) * n);
    residual.flops += Flops(2.0 * n);  // draw and compare, scale
    residual.launches += dims.eager_elementwise ? 1 : 0;
    residual_bwd.bytes += Bytes((2.0 * e + 1.0) * n);
    residual_bwd.flops += Flops(n);
    residual_bwd.launches += 1;
  }

  ModuleProfile profile;
  profile.module = "norms";
  profile.tokens = dims.sp_tokens;
  profiler_internal::ModuleOpBuilder b("norms", profile.ops, 12, dims);
  // Megatron-Core's "layernorm" recompute re-runs the norms that are modules of their own
  // (MLA's input norm, MoE's pre-MLP norm); a norm fused into a TE linear layer is part of it.
  const bool separate_input_norm = model.mla.has_value();
  if (separate_input_norm) b.BeginRecomputeGroup(RecomputeModule::kLayernorm);
  b.Memory("input_norm", input_norm.Forward(n, flops_per_element * n),
           input_norm.Backward(n, norm_bwd_flops));
  b.EndRecomputeGroup(RecomputeModule::kLayernorm);
  b.Memory("attention_residual_add", residual, residual_bwd);
  if (moe_layer) b.BeginRecomputeGroup(RecomputeModule::kLayernorm);
  b.Memory("pre_mlp_norm", pre_mlp_norm.Forward(n, flops_per_element * n),
           pre_mlp_norm.Backward(n, norm_bwd_flops));
  b.EndRecomputeGroup(RecomputeModule::kLayernorm);
  b.Memory("mlp_residual_add", residual, residual_bwd);
  b.Finish(ctx.recompute, ctx.training.recompute_modules);
  profile.dense_parameters =
      2.0 * profiler_internal::NormParamsPerElement(model) * D(model.hidden_size);

  // Korthikanti et al. 2022, section 4.1: each norm keeps its input, 2sbh ×2 = 4sbh
  // (/t under SP). The residual adds keep nothing. An eager RMSNorm keeps its fp32 copy of the
  // input and its normalised output instead (4 + e bytes per element, EagerRmsNorm).
  profile.activation_bytes = Bytes(2.0 * (eager_norm ? 4.0 + e : e) * n);
  // torchtitan's per-op SAC checkpoints the whole block: the checkpoint keeps the block's input
  // (the first norm's input, 2sbh) and re-runs the norms and residual adds in backward.
  profile.activation_bytes_selective = dims.op_sac ? Bytes(e * n) : profile.activation_bytes;
  return profile;
}

}  // namespace projector
