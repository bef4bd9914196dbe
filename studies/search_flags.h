// The flags of a layout search: how it runs and ranks (--objective, --memory-limit-gb,
// --threads) and the space it enumerates (--tp-values ... --allow-cross-node-tp), read into
// SearchOptions over the base scenario's default space.
#ifndef PROJECTOR_STUDIES_SEARCH_FLAGS_H_
#define PROJECTOR_STUDIES_SEARCH_FLAGS_H_

#include <span>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "scenario/scenario.h"
#include "studies/search.h"

namespace projector {

// --objective, --memory-limit-gb, --threads.
std::span<const FlagSpec> SearchRunFlags();
// --memory-limit-gb and --threads (of SearchRunFlags), for a study that ranks nothing.
std::span<const FlagSpec> SearchMemoryAndThreadFlags();
// The --*-values lists and --allow-cross-node-tp.
std::span<const FlagSpec> SearchSpaceFlags();

// The options the flags give (no progress callback: the caller's), over DefaultSearchSpace(base)
// and DefaultMemoryLimit(base.hw). FlagError for a bad value, or an MoE-only value on a dense
// model.
absl::StatusOr<SearchOptions> SearchOptionsFromFlags(const FlagValues& flags, const Scenario& base);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SEARCH_FLAGS_H_
