// Changes to a scenario a study proposes (a layout, run or hardware setting, with the flags that
// make it) and their re-projection: the changed scenario's "auto" choices resolved again, the
// layout validated, projected on backends built for it. Shared by the fit advice and the
// bottleneck analysis, whose recommendations are checked this way rather than guessed.
#ifndef PROJECTOR_STUDIES_SCENARIO_CHANGES_H_
#define PROJECTOR_STUDIES_SCENARIO_CHANGES_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/units.h"
#include "scenario/scenario.h"

namespace projector {

// One change: what to add to the command line, and what it does to a copy of the scenario
// (false when it does not apply: already so, or nothing to take from).
struct ScenarioChange {
  std::string flags;
  std::function<bool(Scenario&)> apply;
};

// A change re-projected.
struct Reprojected {
  std::string flags;  // the parts' flags, space-separated
  Bytes peak_memory;  // per GPU
  double tokens_per_s_per_gpu = 0;
  bool fits = true;
};

// Applies `parts` in order to a copy of `scenario` and projects it. nullopt when a part does not
// apply, the changed scenario fails ResolveKernels or ValidateScenario, or the profilers refuse
// its layout (kFailedPrecondition / kInvalidArgument); other errors pass through.
absl::StatusOr<std::optional<Reprojected>> Reproject(const Scenario& scenario,
                                                     std::span<const ScenarioChange* const> parts);

// Takes `factor` from DP for the dimension `degree` (TP, PP, CP), the GPU count kept; false when
// DP does not divide by it.
bool TakeFromDp(Scenario& s, int64_t& degree, int64_t factor);

// The changes that lower the memory a GPU holds: selective and full recompute, the distributed
// optimizer, bf16 gradient reduction, half the micro-batch, TP x2/x4/x8 with sequence
// parallelism, PP x2/x4/x8 and CP x2 taken from DP, FSDP (without PP).
std::vector<ScenarioChange> MemoryChanges(const Scenario& s);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SCENARIO_CHANGES_H_
