// Calibration (`project calibrate --profile FILE`): fits the per-architecture efficiency
// constants of the simulate backends (GEMM, attention forward/backward, HBM, collective
// bandwidth efficiencies) to the measured ops of a profile by least squares, and the
// hardware-profile overlay that carries the fitted values (`--hw-overlay FILE`).
#ifndef PROJECTOR_STUDIES_CALIBRATE_H_
#define PROJECTOR_STUDIES_CALIBRATE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "backends/profile/profile_file.h"
#include "hw_profiles/hardware_profile.h"
#include "hw_profiles/hw_overlay.h"
#include "nlohmann/json.hpp"
#include "studies/validate.h"

namespace projector {

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
  std::string gpu;  // hardware profile name
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
// attention_fwd_efficiency, attention_bwd_efficiency, hbm_efficiency}, "scale_up":
// {allreduce_efficiency, alltoall_efficiency}, "scale_out": {efficiency}, "fit":
// {rms_error_before_pct, rms_error_after_pct, ops}}, with only the identifiable constants.
nlohmann::json HwOverlayJson(const CalibrationResult& result);

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
inline constexpr double kScaleTolerance = 1e-3;

// Minimises the mean of log(projected / measured)² over the projected cases on `gpu` (the
// ValidationOptions filters and what-ifs apply; `options.gpu` is set to `gpu`) by golden-section
// search over the scale. kInvalidArgument when no case on that GPU can be projected.
// `on_progress` (empty: none) is called with (validations done, validations the search runs)
// after each validation of the cases.
absl::StatusOr<StackCalibrationResult> CalibrateFromCases(
    const std::string& cases_file, const std::string& gpu, ValidationOptions options,
    const std::function<void(int64_t done, int64_t total)>& on_progress = {});
// The validations CalibrateFromCases runs: one at the start, two to open the golden-section
// search, one per step until the interval is under kScaleTolerance, one at the fitted scale.
int64_t CalibrationEvaluations();
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

// {"format", "version", "base", "fitted_from", "gpu": {"compute_scale"}, "fit": {"cases",
// "median_abs_error_before_pct", "median_abs_error_after_pct"}}.
nlohmann::json StackOverlayJson(const StackCalibrationResult& result);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_CALIBRATE_H_
