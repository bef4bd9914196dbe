// The flags of `project validate`: which cases (--cases, --only, --gpu), how (--threads,
// --hw-overlay, --fit-scales), the accuracy floor, and the what-ifs applied to every case.
#ifndef PROJECTOR_STUDIES_VALIDATE_FLAGS_H_
#define PROJECTOR_STUDIES_VALIDATE_FLAGS_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "studies/validate.h"

namespace projector {

// --cases, --threads, --only, --gpu, --hw-overlay, --fit-scales and the accuracy floor.
std::span<const FlagSpec> ValidationRunFlags();
// The kernel, communication and stack flags, --overlap-grad-reduce, --distributed-optimizer.
std::vector<FlagSpec> ValidationWhatIfFlags();

// The filters and what-ifs the flags give; each overlay file loaded.
absl::StatusOr<ValidationOptions> ValidationOptionsFromFlags(const FlagValues& flags);
// --max-median-error-pct and --min-within-20-pct.
absl::StatusOr<AccuracyFloor> AccuracyFloorFromFlags(const FlagValues& flags);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_VALIDATE_FLAGS_H_
