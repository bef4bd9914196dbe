// `project search`: flags of the parallel-layout search, building the base scenario and the
// search space from them, running SearchLayouts (projection/search.h) and printing the ranking
// as text or JSON, with a progress line on stderr for searches longer than a second.
#ifndef PROJECTOR_CLI_SEARCH_COMMAND_H_
#define PROJECTOR_CLI_SEARCH_COMMAND_H_

#include <ostream>

#include "absl/status/status.h"

namespace projector {

// argv[0] is the program, argv[1] == "search". Writes the report to `out`, progress to `err`.
// kInvalidArgument naming the flag for unknown flags and bad values; kFailedPrecondition when
// no layout survives the constraints (naming the constraint that removed the last ones).
absl::Status RunSearchCommand(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace projector

#endif  // PROJECTOR_CLI_SEARCH_COMMAND_H_
