#include "report/lod_report.h"

#include "absl/strings/str_format.h"

namespace projector {
namespace {

constexpr char kReplayed[] =
    "every pass of every micro-batch and chunk on each pipeline rank's stream in the schedule's "
    "order, the activation transfers between stages, each rank's gradient-sync and optimizer "
    "tail";
constexpr char kNotYet[] =
    "the ops inside a pass as events, collectives as steps on the network's links, contention";

}  // namespace

std::string HighLodText(const HighLodResult& r) {
  std::string out = "\nLevel of detail: high (the step replayed as events; docs/event_engine.md)\n";
  absl::StrAppendFormat(&out, "  step time   medium %12.3f ms   high %12.3f ms   %+.4f%%\n",
                        ToMilliseconds(r.medium.step_time), ToMilliseconds(r.step_time),
                        r.DifferencePct());
  absl::StrAppendFormat(&out, "  pipeline    medium %12.3f ms   high %12.3f ms\n",
                        ToMilliseconds(r.medium.pipeline_time), ToMilliseconds(r.pipeline_time));
  absl::StrAppendFormat(&out, "  events      %d (%d tasks on %d streams and links)\n", r.events,
                        r.tasks, r.resources);
  absl::StrAppendFormat(&out, "  wall time   medium %9.3f ms   high %9.3f ms   high/medium %.2fx\n",
                        r.medium_wall_s * 1e3, r.high_wall_s * 1e3, r.Speedup());
  out +=
      "  replayed    each rank's passes (every micro-batch and chunk, in the schedule's order),\n"
      "              the transfers between stages, each rank's gradient-sync and optimizer tail\n"
      "  not yet     the ops inside a pass, collectives as steps on the network's links,\n"
      "              contention\n";
  return out;
}

nlohmann::json HighLodJson(const HighLodResult& r) {
  return {{"step_time_s", r.step_time.value()},
          {"medium_step_time_s", r.medium.step_time.value()},
          {"difference_pct", r.DifferencePct()},
          {"pipeline_time_s", r.pipeline_time.value()},
          {"medium_pipeline_time_s", r.medium.pipeline_time.value()},
          {"tasks", r.tasks},
          {"resources", r.resources},
          {"events", r.events},
          {"medium_wall_s", r.medium_wall_s},
          {"high_wall_s", r.high_wall_s},
          {"wall_ratio", r.Speedup()},
          {"replayed", kReplayed},
          {"not_yet", kNotYet}};
}

}  // namespace projector
