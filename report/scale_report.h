// Renderings of `project scale` (studies/scale.h): a text table, JSON, and (html_report.h) a page
// with the scaling curve.
#ifndef PROJECTOR_REPORT_SCALE_REPORT_H_
#define PROJECTOR_REPORT_SCALE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "studies/scale.h"

namespace projector {

std::string ScaleText(const Scenario& base, const ScaleResult& result);
// {"mode", "model", "gpu", "seq_len", "points": [{"num_gpus", "global_batch", "found",
// "layout", "tokens_per_s_per_gpu", "step_time_ms", "efficiency", "speedup", "peak_memory_gib",
// "breakdown_ms": {term: ms}, "command"}], "breakdown_point" (null when none),
// "serial_fraction", "max_speedup" (null when unbounded), "growing_term", "elapsed_s"}.
nlohmann::json ScaleJson(const Scenario& base, const ScaleResult& result);

}  // namespace projector

#endif  // PROJECTOR_REPORT_SCALE_REPORT_H_
