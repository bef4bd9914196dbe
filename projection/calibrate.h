// Calibration (`project calibrate --profile FILE`): fits the per-architecture efficiency
// constants of the simulate backends (GEMM, attention forward/backward, HBM, collective
// bandwidth efficiencies) to the measured ops of a profile by least squares, and the
// hardware-profile overlay that carries the fitted values (`--hw-overlay FILE`).
#ifndef PROJECTOR_PROJECTION_CALIBRATE_H_
#define PROJECTOR_PROJECTION_CALIBRATE_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "backends/profile/profile_file.h"
#include "hw_profiles/hardware_profile.h"
#include "nlohmann/json.hpp"
#include "projection/validate.h"

namespace projector {

inline constexpr std::string_view kHwOverlayFormat = "projector-hw-overlay";
inline constexpr int64_t kHwOverlayVersion = 1;

struct CalibratedConstant {
  std::string name;          // "gemm_efficiency"
  std::string json_pointer;  // "/gpu/gemm_efficiency" in a hardware profile
  double initial = 0;
  double fitted = 0;
  int64_t ops = 0;            // measured ops whose simulated time depends on it
  bool identifiable = false;  // false: no measured op constrains it (left at `initial`)
  bool at_bound = false;      // the fit hit the (0.01, 1] range
};

struct CalibrationResidual {
  std::string shape;  // DescribeProfiledOp
  double measured_us = 0;
  double before_us = 0;  // simulated with the initial constants
  double after_us = 0;   // simulated with the fitted constants
};

struct CalibrationResult {
  std::string gpu;          // hardware profile name
  std::string profile_file;
  std::vector<CalibratedConstant> constants;
  std::vector<CalibrationResidual> residuals;
  // Root mean square of the relative error (simulated / measured − 1) over the ops, in %.
  double rms_error_before_pct = 0;
  double rms_error_after_pct = 0;
  int64_t iterations = 0;
  HardwareProfile fitted_hw;  // the input hardware with the fitted constants applied
};

// Fits the constants that the profile's ops constrain, minimising Σ log(sim_i / measured_i)²
// (relative error, so small and large ops weigh alike) by Levenberg–Marquardt with Eigen, each
// constant kept in [0.01, 1]. `hw` is the hardware the profile was measured on (its clock).
// kInvalidArgument if the profile has no ops; errors of the simulate backends pass through.
absl::StatusOr<CalibrationResult> Calibrate(const Profile& profile, const HardwareProfile& hw,
                                            const BackendSelection& selection = {});

// The overlay file: {"format": "projector-hw-overlay", "version": 1, "base": GPU name,
// "fitted_from": profile file, "gpu": {gemm_efficiency, gemm_efficiency_fp8,
// attention_fwd_efficiency, attention_bwd_efficiency, hbm_efficiency}, "scale_up": {allreduce_efficiency,
// alltoall_efficiency}, "scale_out": {efficiency}, "fit": {rms_error_before_pct,
// rms_error_after_pct, ops}}, with only the identifiable constants.
nlohmann::json HwOverlayJson(const CalibrationResult& result);

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
// Reads an overlay for `project validate`, checked against the library profile of the GPU it
// names (so a malformed one fails before any case is projected).
absl::StatusOr<ValidationOptions::Overlay> LoadValidationOverlay(const std::string& path);

// Stack calibration (`project calibrate --cases FILE --gpu-arch NAME`): the one compute scale
// (ScaleComputeEfficiencies) that best matches a set of measured end-to-end runs on one GPU,
// i.e. how far a training stack's in-situ GEMM and attention rates sit from the kernel-level
// figures of the profile. A user fits it to runs of their own stack and projects new layouts
// with the overlay; the shipped profiles carry no fitted scale.
struct StackCalibrationResult {
  std::string gpu;
  std::string cases_file;
  double compute_scale = 1;
  bool at_bound = false;    // the fit hit the search range [kMinFitScale, kMaxComputeScale]
  int64_t evaluations = 0;  // projections of the whole case set
  ErrorSummary before, after;
};
inline constexpr double kMinFitScale = 0.2;
inline constexpr double kScaleTolerance = 1e-3;

// Minimises the mean of log(projected / measured)² over the projected cases on `gpu` (the
// ValidationOptions filters and what-ifs apply; `options.gpu` is set to `gpu`) by golden-section
// search over the scale. kInvalidArgument when no case on that GPU can be projected.
absl::StatusOr<StackCalibrationResult> CalibrateFromCases(const std::string& cases_file,
                                                          const std::string& gpu,
                                                          ValidationOptions options);
// The stack scale of every (source, GPU) group of a validation with at least kMinCasesForScaleFit
// projected cases: CalibrateFromCases on that group alone (`project validate --fit-scales`), to
// show which stack sits how far from the kernel-level figures. Groups in the report's order.
inline constexpr int64_t kMinCasesForScaleFit = 3;
struct GroupScale {
  std::string source;
  StackCalibrationResult fit;
};
absl::StatusOr<std::vector<GroupScale>> FitScalesBySourceAndGpu(const std::string& cases_file,
                                                                const ValidationReport& report,
                                                                const ValidationOptions& options);
std::string GroupScalesText(const std::vector<GroupScale>& scales);
nlohmann::json GroupScalesJson(const std::vector<GroupScale>& scales);

// {"format", "version", "base", "fitted_from", "gpu": {"compute_scale"}, "fit": {"cases",
// "median_abs_error_before_pct", "median_abs_error_after_pct"}}.
nlohmann::json StackOverlayJson(const StackCalibrationResult& result);
std::string StackCalibrationText(const StackCalibrationResult& result);
nlohmann::json StackCalibrationJson(const StackCalibrationResult& result);

// Text: fitted constants (initial -> fitted, ops), per-op residuals before/after, RMS errors.
std::string CalibrationText(const CalibrationResult& result);
// JSON: {gpu, profile, iterations, rms_error_before_pct, rms_error_after_pct,
// constants [{name, json_pointer, initial, fitted, ops, identifiable, at_bound}],
// residuals [{shape, measured_us, before_us, after_us, before_error_pct, after_error_pct}]}.
nlohmann::json CalibrationJson(const CalibrationResult& result);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_CALIBRATE_H_
