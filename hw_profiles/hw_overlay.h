// Hardware-profile overlays: the efficiency constants `project calibrate` fits, written as a
// small JSON file (`--hw-overlay FILE`) and applied on top of a library profile, validated like
// the profile itself. Next to the hardware profile it changes; studies/calibrate.h fits them.
#ifndef PROJECTOR_HW_PROFILES_HW_OVERLAY_H_
#define PROJECTOR_HW_PROFILES_HW_OVERLAY_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "hw_profiles/hardware_profile.h"
#include "nlohmann/json.hpp"

namespace projector {

inline constexpr std::string_view kHwOverlayFormat = "projector-hw-overlay";
inline constexpr int64_t kHwOverlayVersion = 1;

// A constant an overlay may set: its key, its object in the overlay and in a hardware profile
// (gpu, scale_up, scale_out), and where it lives in a HardwareProfile.
struct OverlayConstant {
  const char* name;
  const char* section;
  double& (*ref)(HardwareProfile&);
};
// Every constant an overlay may set, in the overlay's order.
std::span<const OverlayConstant> OverlayConstants();

// The range of an overlay's compute_scale (and of the scale `project calibrate --cases` fits).
inline constexpr double kMinFitScale = 0.2;
// An overlay's "gpu": {"compute_scale": s} multiplies every compute efficiency of the GPU (GEMM
// bf16 and FP8, attention forward and backward of every named kernel), each capped at 1: the
// in-situ rate of a training stack relative to the kernel-level figures, as fitted by
// CalibrateFromCases. Applied after the overlay's own constants.
inline constexpr double kMaxComputeScale = 2.0;
void ScaleComputeEfficiencies(double scale, HardwareProfile& hw);

// Applies an overlay to `hw` and validates the result. kInvalidArgument
// "<origin>: <json-pointer>: <problem>" for a wrong format/version, an unknown key, a value
// outside (0, 1], or an overlay fitted for another GPU ("base").
absl::Status ApplyHwOverlay(const nlohmann::json& overlay, const std::string& origin,
                            HardwareProfile& hw);
// The same from a file; kNotFound if it cannot be opened.
absl::Status ApplyHwOverlayFile(const std::string& path, HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_HW_PROFILES_HW_OVERLAY_H_
