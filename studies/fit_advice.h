// What to change when a projection does not fit in GPU memory: single changes to the layout and
// the run (recompute, the distributed optimizer, bf16 gradients, a smaller micro-batch, more
// TP/PP/CP taken from DP, FSDP), each also paired with full recompute, every one validated and
// re-projected; those that fit, fastest first.
#ifndef PROJECTOR_STUDIES_FIT_ADVICE_H_
#define PROJECTOR_STUDIES_FIT_ADVICE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/units.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

// One change, re-projected.
struct FitChange {
  std::string flags;  // what to add to the command line: "--pp 2 --recompute full"
  Bytes peak_memory;  // per GPU
  double tokens_per_s_per_gpu = 0;
};

struct FitAdvice {
  Bytes peak_memory;  // of the scenario as given
  Bytes capacity;     // usable HBM per GPU
  // The changes that fit, fastest first (ties: the fewer flags), at most max_changes.
  std::vector<FitChange> changes;
  Bytes Over() const { return peak_memory - capacity; }
};

// Candidates for `scenario` (projected as `projection`, which does not fit): the changes above,
// each with its "auto" choices resolved again (ResolveKernels), kept only when it passes
// ValidateScenario and fits, projected with backends built for it (its kernels may differ). The
// GPU count, batch and sequence stay. Projection errors other than invalid layouts pass through.
absl::StatusOr<FitAdvice> AdviseFit(const Scenario& scenario, const Projection& projection,
                                    size_t max_changes = 3);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_FIT_ADVICE_H_
