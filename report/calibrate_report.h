// Renderings of the calibrations (studies/calibrate.h): fitted constants and residuals, the
// stack scale fit and the per-group scales, as text and JSON.
#ifndef PROJECTOR_REPORT_CALIBRATE_REPORT_H_
#define PROJECTOR_REPORT_CALIBRATE_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "studies/calibrate.h"

namespace projector {

std::string GroupScalesText(const std::vector<GroupScale>& scales);
nlohmann::json GroupScalesJson(const std::vector<GroupScale>& scales);
std::string StackCalibrationText(const StackCalibrationResult& result);
nlohmann::json StackCalibrationJson(const StackCalibrationResult& result);
// Text: fitted constants (initial -> fitted, ops), per-op residuals before/after, RMS errors.
std::string CalibrationText(const CalibrationResult& result);
// JSON: {gpu, profile, iterations, rms_error_before_pct, rms_error_after_pct,
// constants [{name, json_pointer, initial, fitted, ops, identifiable, at_bound}],
// residuals [{shape, measured_us, before_us, after_us, before_error_pct, after_error_pct}]}.
nlohmann::json CalibrationJson(const CalibrationResult& result);

}  // namespace projector

#endif  // PROJECTOR_REPORT_CALIBRATE_REPORT_H_
