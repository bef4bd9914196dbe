#include "report/calibrate_report.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

// GCC 12 reports a false -Warray-bounds inside std::map when nlohmann::json objects are built
// (GCC bug 107138); the JSON code here is plain nlohmann::json use.
#pragma GCC diagnostic ignored "-Warray-bounds"

namespace projector {

using nlohmann::json;

std::string CalibrationText(const CalibrationResult& result) {
  std::string out = absl::StrFormat("Calibration of %s against %s (%d ops, %d iterations)\n",
                                    result.gpu, result.profile_file, result.residuals.size(),
                                    result.iterations);
  absl::StrAppendFormat(&out, "  %-26s %9s %9s %6s\n", "constant", "initial", "fitted", "ops");
  for (const CalibratedConstant& c : result.constants) {
    if (!c.identifiable) {
      absl::StrAppendFormat(&out, "  %-26s %9.4f %9s %6d  (no measured op depends on it)\n",
                            c.json_pointer, c.initial, "-", c.ops);
      continue;
    }
    absl::StrAppendFormat(&out, "  %-26s %9.4f %9.4f %6d%s\n", c.json_pointer, c.initial,
                          c.fitted, c.ops, c.at_bound ? "  (at the [0.01, 1] bound)" : "");
  }
  absl::StrAppend(&out, "\nResiduals (simulated vs measured)\n");
  absl::StrAppendFormat(&out, "  %-52s %10s %10s %8s %10s %8s\n", "op", "meas us", "before",
                        "error", "after", "error");
  for (const CalibrationResidual& r : result.residuals) {
    absl::StrAppendFormat(&out, "  %-52s %10.2f %10.2f %+7.1f%% %10.2f %+7.1f%%\n", r.shape,
                          r.measured_us, r.before_us, (r.before_us / r.measured_us - 1) * 100,
                          r.after_us, (r.after_us / r.measured_us - 1) * 100);
  }
  absl::StrAppendFormat(&out, "\nRMS relative error: %.2f%% before, %.2f%% after\n",
                        result.rms_error_before_pct, result.rms_error_after_pct);
  return out;
}

json CalibrationJson(const CalibrationResult& result) {
  json out = json::object();
  out["gpu"] = result.gpu;
  out["profile"] = result.profile_file;
  out["iterations"] = result.iterations;
  out["rms_error_before_pct"] = result.rms_error_before_pct;
  out["rms_error_after_pct"] = result.rms_error_after_pct;
  json constants = json::array();
  for (const CalibratedConstant& c : result.constants) {
    json j = json::object();
    j["name"] = c.name;
    j["json_pointer"] = c.json_pointer;
    j["initial"] = c.initial;
    j["fitted"] = c.fitted;
    j["ops"] = c.ops;
    j["identifiable"] = c.identifiable;
    j["at_bound"] = c.at_bound;
    constants.push_back(std::move(j));
  }
  out["constants"] = std::move(constants);
  json residuals = json::array();
  for (const CalibrationResidual& r : result.residuals) {
    json j = json::object();
    j["shape"] = r.shape;
    j["measured_us"] = r.measured_us;
    j["before_us"] = r.before_us;
    j["after_us"] = r.after_us;
    j["before_error_pct"] = (r.before_us / r.measured_us - 1) * 100;
    j["after_error_pct"] = (r.after_us / r.measured_us - 1) * 100;
    residuals.push_back(std::move(j));
  }
  out["residuals"] = std::move(residuals);
  return out;
}

std::string StackCalibrationText(const StackCalibrationResult& r) {
  std::string out = absl::StrFormat(
      "Stack calibration of %s against %s (%d projected cases, %d evaluations)\n", r.gpu,
      r.cases_file, r.after.projected, r.evaluations);
  absl::StrAppendFormat(&out,
                        "  compute_scale %.3f: GEMM and attention efficiencies x%.3f (capped at "
                        "1)%s\n\n",
                        r.compute_scale, r.compute_scale,
                        r.at_bound ? "  (at the search bound)" : "");
  absl::StrAppendFormat(&out, "  %-8s %5s %11s %9s %6s %6s %6s\n", "", "cases", "median|err|",
                        "mean err", "<=10%", "<=20%", "<=30%");
  for (const auto& [name, s] : {std::pair<const char*, const ErrorSummary*>{"before", &r.before},
                                {"after", &r.after}}) {
    absl::StrAppendFormat(&out, "  %-8s %5d %10.1f%% %+8.1f%% %5.0f%% %5.0f%% %5.0f%%\n", name,
                          s->projected, s->median_abs_error_pct, s->mean_error_pct,
                          s->within_10_pct, s->within_20_pct, s->within_30_pct);
  }
  return out;
}

json StackCalibrationJson(const StackCalibrationResult& r) {
  auto summary = [](const ErrorSummary& s) {
    return json{{"projected", s.projected},
                {"median_abs_error_pct", s.median_abs_error_pct},
                {"mean_error_pct", s.mean_error_pct},
                {"within_10_pct", s.within_10_pct},
                {"within_20_pct", s.within_20_pct},
                {"within_30_pct", s.within_30_pct}};
  };
  return {{"gpu", r.gpu},
          {"cases_file", r.cases_file},
          {"compute_scale", r.compute_scale},
          {"at_bound", r.at_bound},
          {"evaluations", r.evaluations},
          {"before", summary(r.before)},
          {"after", summary(r.after)}};
}

std::string GroupScalesText(const std::vector<GroupScale>& scales) {
  std::string out =
      "\nCompute scale that best fits each source on each GPU (project calibrate --cases; not "
      "applied above)\n";
  absl::StrAppendFormat(&out, "%-44s %5s %7s %11s %11s %7s\n", "source on GPU", "cases", "scale",
                        "median|err|", "after fit", "<=20%");
  for (const GroupScale& g : scales) {
    const std::string name = absl::StrCat(g.source.substr(0, 28), " on ", g.fit.gpu);
    absl::StrAppendFormat(&out, "%-44s %5d %7.3f %10.1f%% %10.1f%% %6.0f%%\n", name,
                          g.fit.after.projected, g.fit.compute_scale,
                          g.fit.before.median_abs_error_pct, g.fit.after.median_abs_error_pct,
                          g.fit.after.within_20_pct);
  }
  return out;
}

json GroupScalesJson(const std::vector<GroupScale>& scales) {
  json out = json::array();
  for (const GroupScale& g : scales) {
    json j = StackCalibrationJson(g.fit);
    j.erase("cases_file");
    j["source"] = g.source;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace projector
