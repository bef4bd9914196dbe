// Output-layer profiler (last pipeline stage): the final norm, the vocab-parallel output
// projection (Megatron's ColumnParallelLinear, T × hidden × V/t; bf16 even under FP8 training,
// since it is not a Transformer Engine layer) and the vocab-parallel cross-entropy loss.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"
#include "profilers/profiler_internal.h"

namespace projector {

absl::StatusOr<ModuleProfile> ProfileOutputLayer(const ProfileContext& ctx) {
  using profiler_internal::D;
  PROJECTOR_ASSIGN_OR_RETURN(const profiler_internal::LayerDims dims,
                             profiler_internal::ResolveDims(ctx));
  const ModelSpec& model = ctx.model;
  if (model.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", model.name, ": vocab_size must be > 0"));
  }
  const int64_t v_l = PaddedVocabSize(model, dims.tp) / dims.tp;
  const int64_t h = model.hidden_size;
  const double e = dims.act_bytes;
  const bool layer_norm = model.norm == NormKind::kLayerNorm;
  const double norm_n = D(dims.sp_tokens) * D(h);
  const double logits = D(dims.tokens) * D(v_l);

  ModuleProfile profile;
  profile.module = "output";
  profile.tokens = dims.tokens;
  profiler_internal::ModuleOpBuilder b("output", profile.ops, 12, dims);
  b.Memory("final_norm",
           MemoryOp{.bytes = Bytes(2.0 * e * norm_n), .flops = Flops((layer_norm ? 7.0 : 4.0) * norm_n)},
           MemoryOp{.bytes = Bytes(3.0 * e * norm_n), .flops = Flops((layer_norm ? 14.0 : 8.0) * norm_n)});
  b.Linear("output_proj", dims.tokens, h, v_l, dims.act_dtype);
  // Megatron's vocab_parallel_cross_entropy on T × V/t logits in fp32: forward reads the bf16
  // logits, writes the fp32 softmax it keeps for backward and makes two fp32 passes (max, sum of
  // exp): 2 + 4 + 4 + 4 = 14 bytes per logit; backward reads the softmax and writes the bf16
  // logit gradient: 6 bytes per logit. The max/sum AllReduces over TP carry T floats only.
  b.Memory("cross_entropy", MemoryOp{.bytes = Bytes(14.0 * logits), .flops = Flops(5.0 * logits)},
           MemoryOp{.bytes = Bytes(6.0 * logits), .flops = Flops(2.0 * logits)});
  b.Finish(ctx.recompute);

  const bool shares_embedding = model.tied_embeddings && ctx.parallel.pp == 1;
  profile.dense_parameters =
      profiler_internal::NormParamsPerElement(model) * D(h) +
      (shares_embedding ? 0.0 : D(v_l) * D(h));
  // Kept for backward: the final norm's input (SP-sharded), the output projection's input
  // (the norm output, SP-sharded and re-gathered in backward) and the fp32 softmax.
  profile.activation_bytes = Bytes(2.0 * e * norm_n + 4.0 * logits);
  profile.activation_bytes_selective = profile.activation_bytes;
  return profile;
}

}  // namespace projector
