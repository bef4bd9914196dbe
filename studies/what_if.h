// Clock-frequency what-if: re-projects a scenario at several sustained GPU clocks (backends
// rebuilt for a copy of the hardware profile at each clock) and tabulates step time, TGS and
// the share of step time that scales with the clock.
#ifndef PROJECTOR_STUDIES_WHAT_IF_H_
#define PROJECTOR_STUDIES_WHAT_IF_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "core/units.h"
#include "nlohmann/json.hpp"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

struct ClockRow {
  double clock_mhz = 0;
  Seconds step_time;
  double tokens_per_s_per_gpu = 0;
  double tflops_per_gpu = 0;
  double clock_scaled_share = 0;  // of the step time at this clock
};

using BackendFactory =
    std::function<absl::StatusOr<BackendSet>(const BackendSelection&, const HardwareProfile&)>;

// One row per clock, in the given order. kInvalidArgument for an empty list or a clock <= 0;
// projection errors pass through. `make_backends` defaults to MakeBackendSet.
absl::StatusOr<std::vector<ClockRow>> ClockWhatIf(const Scenario& scenario,
                                                  const std::vector<double>& clocks_mhz,
                                                  const ProjectionOptions& options = {},
                                                  const BackendFactory& make_backends = {});

}  // namespace projector

#endif  // PROJECTOR_STUDIES_WHAT_IF_H_
