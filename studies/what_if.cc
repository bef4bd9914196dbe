#include "studies/what_if.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {

absl::StatusOr<std::vector<ClockRow>> ClockWhatIf(const Scenario& scenario,
                                                  const std::vector<double>& clocks_mhz,
                                                  const ProjectionOptions& options,
                                                  const BackendFactory& make_backends) {
  if (clocks_mhz.empty()) {
    return absl::InvalidArgumentError("clock what-if: no clocks given; pass e.g. 1300,1700,2100");
  }
  std::vector<ClockRow> rows;
  rows.reserve(clocks_mhz.size());
  Scenario s = scenario;
  for (double mhz : clocks_mhz) {
    if (!(mhz > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("clock what-if: clock must be > 0 MHz, got ", mhz));
    }
    s.hw.gpu.sustained_clock = Megahertz(mhz);
    absl::StatusOr<BackendSet> set = make_backends ? make_backends(s.backends, s.hw)
                                                   : MakeBackendSet(s.backends, s.hw);
    if (!set.ok()) return set.status();
    PROJECTOR_ASSIGN_OR_RETURN(Projection p, Project(s, RefsOf(*set), options));
    rows.push_back({.clock_mhz = mhz, .step_time = p.step_time,
                    .tokens_per_s_per_gpu = p.tokens_per_s_per_gpu,
                    .tflops_per_gpu = p.tflops_per_gpu,
                    .clock_scaled_share = p.clock_scaled_share});
  }
  return rows;
}

}  // namespace projector
