// The high level of detail's section of a projection report (`project --lod high`): the event
// replay's step time beside the analytical one, its events and the wall time of each.
#ifndef PROJECTOR_REPORT_LOD_REPORT_H_
#define PROJECTOR_REPORT_LOD_REPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "studies/lod_high.h"

namespace projector {

// A group whose collectives the replay exposed inside the passes (its medium or timeline figure
// above 0): "TP", "CP", "EP" or "FSDP", the medium breakdown's exposure and the timeline's
// (HighLodResult::exposed_comm).
struct GroupExposureRow {
  std::string_view group;
  Seconds medium, high;
};
std::vector<GroupExposureRow> GroupExposureRows(const HighLodResult& r);

std::string HighLodText(const HighLodResult& r);
// {step_time_s, medium_step_time_s, difference_pct, pipeline_time_s, medium_pipeline_time_s,
//  tasks, resources, events, medium_wall_s, high_wall_s, wall_ratio, replayed, not_yet}
nlohmann::json HighLodJson(const HighLodResult& r);
// The replayed step as a Chrome trace (ui.perfetto.dev): one track per resource of the replay,
// each pipeline rank's stream (its passes, rendezvous receives and tail) and each link (an
// ordered pair of ranks: the overlapped transfers, named after the pass they feed and the ranks
// they join).
nlohmann::json HighLodTraceJson(const Scenario& scenario, const HighLodResult& r);

}  // namespace projector

#endif  // PROJECTOR_REPORT_LOD_REPORT_H_
