// Transformer-layer profiler: one layer = attention + norms/residuals + dense MLP or MoE MLP,
// each module with its own op list. Communication is added by the composer (projection/).
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/module_profilers.h"

namespace projector {

int64_t TokensPerGpu(const ModelSpec& /*model*/, const ParallelConfig& parallel,
                     const TrainingConfig& training) {
  const int64_t cp = parallel.cp > 0 ? parallel.cp : 1;
  return training.micro_batch * training.seq_len / cp;
}

absl::StatusOr<LayerProfile> ProfileLayer(const ProfileContext& ctx, bool is_moe,
                                          const ModuleProfile* attention) {
  if (is_moe && !ctx.model.moe.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("model ", ctx.model.name, ": MoE layer requested but the model has no MoE"));
  }
  LayerProfile layer;
  layer.is_moe = is_moe;
  layer.modules.reserve(3);
  if (attention != nullptr) {
    layer.modules.push_back(*attention);
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile own, ProfileAttention(ctx));
    layer.modules.push_back(std::move(own));
  }
  PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile norms, ProfileNorms(ctx, is_moe));
  layer.modules.push_back(std::move(norms));
  if (is_moe) {
    PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile moe, ProfileMoeMlp(ctx));
    layer.modules.push_back(std::move(moe));
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(ModuleProfile mlp, ProfileDenseMlp(ctx));
    layer.modules.push_back(std::move(mlp));
  }
  return layer;
}

absl::Status TimeLayer(const BackendRefs& backends, LayerProfile& layer) {
  for (ModuleProfile& module : layer.modules) {
    PROJECTOR_RETURN_IF_ERROR(TimeOps(backends, module.ops));
  }
  return absl::OkStatus();
}

}  // namespace projector
