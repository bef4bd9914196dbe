#include "studies/fit_advice.h"

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "studies/scenario_changes.h"

namespace projector {

absl::StatusOr<FitAdvice> AdviseFit(const Scenario& scenario, const Projection& projection,
                                    size_t max_changes) {
  FitAdvice advice{.peak_memory = projection.peak_memory_per_gpu,
                   .capacity = projection.memory.capacity,
                   .changes = {}};
  const std::vector<ScenarioChange> changes = MemoryChanges(scenario);
  const auto full_recompute =
      std::find_if(changes.begin(), changes.end(),
                   [](const ScenarioChange& c) { return c.flags == "--recompute full"; });
  auto try_change = [&](const std::vector<const ScenarioChange*>& parts) -> absl::Status {
    PROJECTOR_ASSIGN_OR_RETURN(const std::optional<Reprojected> r, Reproject(scenario, parts));
    if (!r || !r->fits) return absl::OkStatus();
    advice.changes.push_back({.flags = r->flags,
                              .peak_memory = r->peak_memory,
                              .tokens_per_s_per_gpu = r->tokens_per_s_per_gpu});
    return absl::OkStatus();
  };
  for (const ScenarioChange& change : changes) {
    PROJECTOR_RETURN_IF_ERROR(try_change({&change}));
    // Every change that is not itself a recompute setting, also with full recompute.
    if (!change.flags.starts_with("--recompute")) {
      PROJECTOR_RETURN_IF_ERROR(try_change({&change, &*full_recompute}));
    }
  }
  std::stable_sort(advice.changes.begin(), advice.changes.end(),
                   [](const FitChange& a, const FitChange& b) {
                     if (a.tokens_per_s_per_gpu != b.tokens_per_s_per_gpu) {
                       return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
                     }
                     return a.flags.size() < b.flags.size();
                   });
  if (advice.changes.size() > max_changes) advice.changes.resize(max_changes);
  return advice;
}

}  // namespace projector
