// The command line as a function: dispatches `argv` (argv[1] the subcommand, or flags for one
// projection) to cli/commands.h, prints the result on io.out, an error on io.err as
// "project: error: ...", and returns the exit code (0, 2 bad input, 3 a failed accuracy floor,
// 1 internal). The executable's main() and the Python module both call it, so they share every
// flag, default, message and JSON document.
#ifndef PROJECTOR_CLI_DISPATCH_H_
#define PROJECTOR_CLI_DISPATCH_H_

#include "cli/commands.h"

namespace projector {

int RunCommandLine(int argc, char** argv, const Output& io);

}  // namespace projector

#endif  // PROJECTOR_CLI_DISPATCH_H_
