#include "report/what_if_report.h"

#include <cmath>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "report/report.h"

namespace projector {

namespace {

// The row at the profile's sustained clock (the projection without a clock what-if); nullptr
// when the sweep does not include it.
const ClockRow* ProfileClockRow(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  const double mhz = ToMegahertz(scenario.hw.gpu.sustained_clock);
  for (const ClockRow& r : rows) {
    if (std::abs(r.clock_mhz - mhz) < 1e-6) return &r;
  }
  return nullptr;
}

double PercentOver(double value, double reference) {
  return reference > 0 ? (value / reference - 1.0) * 100.0 : 0.0;
}

}  // namespace

std::string ClockWhatIfText(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  std::string out = DescribeScenario(scenario) + "\nClock what-if (sustained GPU clock)\n";
  const ClockRow* base = ProfileClockRow(scenario, rows);
  const std::optional<double>& measured = scenario.measured_tokens_per_s_per_gpu;
  absl::StrAppendFormat(&out, "  %10s  %12s  %12s  %12s  %14s  %10s%s\n", "clock MHz", "step ms",
                        "TGS", "TFLOP/s/GPU", "clock-scaled %", "TGS vs base",
                        measured ? "  vs measured" : "");
  for (const ClockRow& r : rows) {
    absl::StrAppendFormat(
        &out, "  %10.0f  %12.2f  %12.1f  %12.1f  %13.1f%%  %10s%s%s\n", r.clock_mhz,
        ToMilliseconds(r.step_time), r.tokens_per_s_per_gpu, r.tflops_per_gpu,
        r.clock_scaled_share * 100.0,
        base ? absl::StrFormat("%+.1f%%", PercentOver(r.tokens_per_s_per_gpu,
                                                      base->tokens_per_s_per_gpu))
             : "",
        measured ? absl::StrFormat("  %+10.1f%%", PercentOver(r.tokens_per_s_per_gpu, *measured))
                 : "",
        &r == base ? "  (profile clock)" : "");
  }
  if (measured) {
    absl::StrAppendFormat(&out, "  measured TGS %.1f\n", *measured);
  }
  return out;
}

nlohmann::json ClockWhatIfJson(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  const ClockRow* base = ProfileClockRow(scenario, rows);
  const std::optional<double>& measured = scenario.measured_tokens_per_s_per_gpu;
  for (const ClockRow& r : rows) {
    nlohmann::json row = {{"clock_mhz", r.clock_mhz},
                          {"step_time_s", r.step_time.value()},
                          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                          {"tflops_per_gpu", r.tflops_per_gpu},
                          {"clock_scaled_share", r.clock_scaled_share},
                          {"is_profile_clock", &r == base}};
    if (base) row["tgs_vs_profile_clock_pct"] = PercentOver(r.tokens_per_s_per_gpu,
                                                            base->tokens_per_s_per_gpu);
    if (measured) row["error_pct"] = PercentOver(r.tokens_per_s_per_gpu, *measured);
    arr.push_back(std::move(row));
  }
  nlohmann::json j{{"clock_sweep", arr}, {"scenario", ScenarioToJson(scenario)}};
  if (measured) j["measured_tokens_per_s_per_gpu"] = *measured;
  return j;
}

}  // namespace projector
