// Renderings of a profile-mode projection (studies/profile_mode.h): the measured-vs-simulated
// comparison, the per-op and per-term sources and the projection, as text and JSON.
#ifndef PROJECTOR_REPORT_PROFILE_MODE_REPORT_H_
#define PROJECTOR_REPORT_PROFILE_MODE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "studies/profile_mode.h"

namespace projector {

// JSON object: mode ("profile" | "both"), profile {file, tool, device, model, layout},
// comparison {ops [row], modules [{layer_kind, module, measured_forward_us,
// measured_backward_us, simulated_forward_us, simulated_backward_us, forward_error_pct,
// backward_error_pct}], mean_abs_op_error_pct, max_abs_op_error_pct} (both only),
// module_terms [{layer_kind, module, phase, measured_us, simulated_measured_us,
// simulated_target_us, projected_us, provenance}],
// ops [{layer, module, name, phase, shape, simulated_us, projected_us, measured_us?,
// error_pct?, provenance, source_shape?, scale}], terms [{term, time_s, provenance}],
// provenance_counts {measured, scaled_from_measured, simulated}, projection (ProjectionJson),
// simulated_projection (both only), warnings [string].
nlohmann::json ProfileModeJson(const Scenario& target, const ProfileModeReport& report);
// Text: the comparison tables (both), the measured module times used, the per-op source table,
// the term table, then the projection report.
std::string ProfileModeText(const Scenario& target, const ProfileModeReport& report);

}  // namespace projector

#endif  // PROJECTOR_REPORT_PROFILE_MODE_REPORT_H_
