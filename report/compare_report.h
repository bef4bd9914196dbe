// Renderings of `project compare` (studies/compare.h): a side-by-side text table and JSON; the
// HTML page is in html_report.h.
#ifndef PROJECTOR_REPORT_COMPARE_REPORT_H_
#define PROJECTOR_REPORT_COMPARE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "studies/compare.h"

namespace projector {

std::string CompareText(const Comparison& c);
// {"sides": [{"name", "model", "gpu", "num_gpus", "layout", "tokens_per_s_per_gpu",
// "step_time_ms", "mfu", "peak_memory_gib", "fits", "breakdown_ms": {term: ms}}],
// "causes": [{"term", "a_ms", "b_ms", "diff_ms", "share"}]}.
nlohmann::json CompareJson(const Comparison& c);

}  // namespace projector

#endif  // PROJECTOR_REPORT_COMPARE_REPORT_H_
