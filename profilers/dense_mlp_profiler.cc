// Dense MLP profiler: Megatron-Core MLP with a column-parallel fc1 (SwiGLU: fused gate+up,
// N = 2·ffn/t; plain: N = ffn/t), the activation, and a row-parallel fc2 (ffn/t → hidden).
// Forward: 2 GEMMs + 1 memory op; backward: 4 GEMMs (dgrad + wgrad each) + 1 memory op.
// Under FP8 fc1 is Megatron's TELayerNormColumnParallelLinear (the pre-MLP norm is fused into it
// and writes fp8, megatron/core/models/gpt/gpt_layer_specs.py: pre_mlp_layernorm = IdentityOp
// for dense layers); fc2's bf16 input (the activation output) is cast separately.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

absl::StatusOr<ModuleProfile> ProfileDenseMlp(const ProfileContext& ctx) {
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  const int64_t h = model.hidden_size;
  const int64_t f = model.ffn_hidden_size;
  if (f <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, ": ffn_hidden_size must be > 0, got ", f));
  }
  PROJECTOR_RETURN_IF_ERROR(profiler_internal::CheckDivisible("ffn_hidden_size", f, "tp", dims.tp));
  const int64_t f_l = f / dims.tp;
  const bool gated = model.mlp == MlpKind::kSwiGlu;
  const int64_t T = dims.tokens;

  ModuleProfile profile;
  profile.module = "mlp";
  profile.tokens = T;
  profiler_internal::ModuleOpBuilder b("mlp", profile.ops, 40, dims);
  b.BeginRecomputeGroup(RecomputeModule::kMlp);
  profiler_internal::AddMlpOps(b,
                               {.fc1 = gated ? "fc1_gate_up" : "fc1_up",
                                .act = gated ? "swiglu" : "gelu",
                                .fc2 = "fc2_down"},
                               T, h, f_l, gated, dims.gemm_dtype, dims.act_bytes, T,
                               /*batch=*/1, /*repeat=*/1,
                               profiler_internal::LinearInput::kFusedNorm, dims.eager_elementwise);
  b.EndRecomputeGroup(RecomputeModule::kMlp);
  b.Finish(ctx.recompute, ctx.training.recompute_modules);
  profile.dense_parameters = profiler_internal::MlpParameters(h, f_l, gated, model.linear_bias);

  // Korthikanti et al. 2022, section 4.1: fc1 input 2sbh (the norm output, SP-sharded), the
  // activation input (GELU: 8sbh for ffn = 4h; SwiGLU: both fc1 halves) and fc2's input (8sbh),
  // plus the 1-byte dropout mask sbh. Total 19sbh for GPT with dropout, /t under TP+SP. Under
  // a Transformer Engine fp8 recipe fc1 and fc2 keep their quantised inputs
  // (SavedLinearInputBytes, 1 byte an element: sbh and 4sbh instead of 2sbh and 8sbh).
  double stored = profiler_internal::SavedLinearInputBytes(dims) * D(dims.sp_tokens) * D(h) +
                  profiler_internal::MlpInnerActivationBytes(T, f_l, gated, dims);
  if (dims.hidden_dropout) stored += D(dims.sp_tokens) * D(h);
  profile.activation_bytes = Bytes(stored);
  // Megatron-Core's "mlp" recompute checkpoints the MLP on its input, the residual stream the
  // fused pre-MLP norm reads (kept by the norms module): only the dropout mask of the
  // bias-dropout-add after it stays.
  const double mask = dims.hidden_dropout ? D(dims.sp_tokens) * D(h) : 0.0;
  profile.activation_bytes_selective =
      dims.op_sac ? b.OpSacStoredBytes()
      : profiler_internal::SelectiveRecomputes(ctx, RecomputeModule::kMlp) ? Bytes(mask)
                                                                          : profile.activation_bytes;
  return profile;
}

}  // namespace projector
