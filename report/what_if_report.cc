#include "report/what_if_report.h"

#include "absl/strings/str_format.h"
#include "report/report.h"

namespace projector {

std::string ClockWhatIfText(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  std::string out = DescribeScenario(scenario) + "\nClock what-if (sustained GPU clock)\n";
  absl::StrAppendFormat(&out, "  %10s  %12s  %12s  %12s  %14s\n", "clock MHz", "step ms", "TGS",
                        "TFLOP/s/GPU", "clock-scaled %");
  for (const ClockRow& r : rows) {
    absl::StrAppendFormat(&out, "  %10.0f  %12.2f  %12.1f  %12.1f  %13.1f%%\n", r.clock_mhz,
                          ToMilliseconds(r.step_time), r.tokens_per_s_per_gpu, r.tflops_per_gpu,
                          r.clock_scaled_share * 100.0);
  }
  return out;
}

nlohmann::json ClockWhatIfJson(const Scenario& scenario, const std::vector<ClockRow>& rows) {
  nlohmann::json arr = nlohmann::json::array();
  for (const ClockRow& r : rows) {
    arr.push_back({{"clock_mhz", r.clock_mhz},
                   {"step_time_s", r.step_time.value()},
                   {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                   {"tflops_per_gpu", r.tflops_per_gpu},
                   {"clock_scaled_share", r.clock_scaled_share}});
  }
  return nlohmann::json{{"clock_sweep", arr}, {"scenario", ScenarioToJson(scenario)}};
}

}  // namespace projector
