// Renderings of the clock what-if (studies/what_if.h): a text table and JSON.
#ifndef PROJECTOR_REPORT_WHAT_IF_REPORT_H_
#define PROJECTOR_REPORT_WHAT_IF_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "studies/what_if.h"

namespace projector {

// The scenario's description, then the table.
std::string ClockWhatIfText(const Scenario& scenario, const std::vector<ClockRow>& rows);
// {"clock_sweep": [{clock_mhz, step_time_s, tokens_per_s_per_gpu, tflops_per_gpu,
//                   clock_scaled_share}], "scenario": {...}}
nlohmann::json ClockWhatIfJson(const Scenario& scenario, const std::vector<ClockRow>& rows);

}  // namespace projector

#endif  // PROJECTOR_REPORT_WHAT_IF_REPORT_H_
