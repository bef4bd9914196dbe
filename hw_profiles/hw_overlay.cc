#include "hw_profiles/hw_overlay.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "core/yaml_reader.h"
#include "core/status_macros.h"

namespace projector {
namespace {

using nlohmann::json;

const OverlayConstant kConstants[] = {
    {"gemm_efficiency", "gpu", [](HardwareProfile& h) -> double& { return h.gpu.gemm_efficiency; }},
    // Absent from a profile, the FP8 figure falls back to the bf16 one (GpuSpec::GemmEfficiency);
    // it is materialised at that value so FP8/FP4 GEMMs can be fitted on their own.
    {"gemm_efficiency_fp8", "gpu",
     [](HardwareProfile& h) -> double& {
       if (!h.gpu.gemm_efficiency_fp8) h.gpu.gemm_efficiency_fp8 = h.gpu.gemm_efficiency;
       return *h.gpu.gemm_efficiency_fp8;
     }},
    {"attention_fwd_efficiency", "gpu",
     [](HardwareProfile& h) -> double& { return h.gpu.attention_fwd_efficiency; }},
    {"attention_bwd_efficiency", "gpu",
     [](HardwareProfile& h) -> double& { return h.gpu.attention_bwd_efficiency; }},
    {"hbm_efficiency", "gpu", [](HardwareProfile& h) -> double& { return h.gpu.hbm_efficiency; }},
    {"allreduce_efficiency", "scale_up",
     [](HardwareProfile& h) -> double& { return h.scale_up.allreduce_efficiency; }},
    {"alltoall_efficiency", "scale_up",
     [](HardwareProfile& h) -> double& { return h.scale_up.alltoall_efficiency; }},
    {"efficiency", "scale_out",
     [](HardwareProfile& h) -> double& { return h.scale_out.efficiency; }},
    // Absent, NCCL's point-to-point traffic takes `efficiency` (ScaleOutNetwork::
    // AllToAllEfficiency); materialised at that value so it can be fitted on its own.
    {"p2p_efficiency", "scale_out",
     [](HardwareProfile& h) -> double& {
       if (!h.scale_out.p2p_efficiency) h.scale_out.p2p_efficiency = h.scale_out.efficiency;
       return *h.scale_out.p2p_efficiency;
     }},
};

}  // namespace

std::span<const OverlayConstant> OverlayConstants() { return kConstants; }

absl::Status ApplyHwOverlay(const json& overlay, const std::string& origin, HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject root, JsonObject::Make(overlay, origin, ""));
  PROJECTOR_ASSIGN_OR_RETURN(std::string format, root.String("format"));
  if (format != kHwOverlayFormat) {
    return root.FieldError("format", absl::StrCat("unknown format '", format, "'; accepted: ",
                                                  std::string(kHwOverlayFormat)));
  }
  PROJECTOR_ASSIGN_OR_RETURN(int64_t version, root.Int("version"));
  if (version != kHwOverlayVersion) {
    return root.FieldError("version", absl::StrCat("unknown version ", version, "; accepted: ",
                                                   kHwOverlayVersion));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::string base, root.String("base"));
  if (base != hw.name) {
    return root.FieldError("base", absl::StrCat("overlay fitted for '", base, "' but the GPU is '",
                                                hw.name, "'; accepted: ", hw.name));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::string fitted_from, root.StringOr("fitted_from", ""));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> fit, root.OptionalObject("fit"));
  if (fit) {
    for (const char* key : {"rms_error_before_pct", "rms_error_after_pct", "ops", "cases",
                            "median_abs_error_before_pct", "median_abs_error_after_pct"}) {
      fit->Accept(key);
    }
    PROJECTOR_RETURN_IF_ERROR(fit->CheckNoUnknownKeys());
  }
  HardwareProfile out = hw;
  std::optional<double> compute_scale;
  for (const char* section : {"gpu", "scale_up", "scale_out"}) {
    PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> obj, root.OptionalObject(section));
    if (!obj) continue;
    if (std::string_view(section) == "gpu") {
      PROJECTOR_ASSIGN_OR_RETURN(compute_scale, obj->OptionalNumber("compute_scale"));
      if (compute_scale &&
          !(*compute_scale >= kMinFitScale && *compute_scale <= kMaxComputeScale)) {
        return obj->FieldError(
            "compute_scale", absl::StrCat("must be in [", kMinFitScale, ", ", kMaxComputeScale,
                                          "] (the range `project calibrate --cases` fits in), got ",
                                          *compute_scale));
      }
    }
    for (const OverlayConstant& c : kConstants) {
      if (std::string_view(c.section) != section) continue;
      PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> v, obj->OptionalNumber(c.name));
      if (!v) continue;
      if (!(*v > 0 && *v <= 1)) {
        return obj->FieldError(c.name, absl::StrCat("must be in (0, 1], got ", *v));
      }
      c.ref(out) = *v;
    }
    PROJECTOR_RETURN_IF_ERROR(obj->CheckNoUnknownKeys());
  }
  PROJECTOR_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  if (compute_scale) ScaleComputeEfficiencies(*compute_scale, out);
  PROJECTOR_RETURN_IF_ERROR(ValidateHardwareProfile(out, origin));
  hw = std::move(out);
  return absl::OkStatus();
}

void ScaleComputeEfficiencies(double scale, HardwareProfile& hw) {
  auto scaled = [scale](double e) { return std::min(1.0, e * scale); };
  GpuSpec& g = hw.gpu;
  g.gemm_efficiency_fp8 = scaled(g.GemmEfficiency(DType::kFp8));
  g.gemm_efficiency = scaled(g.gemm_efficiency);
  g.attention_fwd_efficiency = scaled(g.attention_fwd_efficiency);
  g.attention_bwd_efficiency = scaled(g.attention_bwd_efficiency);
  for (AttentionKernelSpec& k : g.attention_kernels) {
    k.fwd_efficiency = scaled(k.fwd_efficiency);
    k.bwd_efficiency = scaled(k.bwd_efficiency);
  }
}

absl::Status ApplyHwOverlayFile(const std::string& path, HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(json value, ReadConfigFile(path));
  return ApplyHwOverlay(value, path, hw);
}

}  // namespace projector
