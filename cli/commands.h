// The subcommands of the `project` executable, one function each: parse the flags, call the one
// study or projection they ask for, print what report/ renders. Errors come back as Status; main
// turns them into messages and exit codes (cli/flags.h ExitCodeFor).
#ifndef PROJECTOR_CLI_COMMANDS_H_
#define PROJECTOR_CLI_COMMANDS_H_

#include <ostream>

#include "absl/status/status.h"
#include "core/work_team.h"

namespace projector {

struct Output {
  std::ostream& out;
  std::ostream& err;
  // The MPI ranks this process is one of (cli/mpi_team.h); null when it runs alone. Rank 0 prints;
  // every other rank gets streams that print nothing.
  WorkTeam* team = nullptr;
};

// `project [flags]`: one projection, a clock sweep, or a profile/both/measure mode run.
absl::Status RunProjectCommand(int argc, char** argv, const Output& io);
// `project estimate gemm|attention|collective`: one op.
absl::Status RunEstimateCommand(int argc, char** argv, const Output& io);
// `project validate --cases FILE`: projected against measured over a cases file.
absl::Status RunValidateCommand(int argc, char** argv, const Output& io);
// `project search ...`: every valid layout ranked under a memory limit.
absl::Status RunSearchCommand(int argc, char** argv, const Output& io);
// `project network show|route --network FILE`: a network file's links, diameter, bisection, routes.
absl::Status RunNetworkCommand(int argc, char** argv, const Output& io);
// `project compare A B | A --flags | --gpu-arch a,b,c`: projections side by side.
absl::Status RunCompareCommand(int argc, char** argv, const Output& io);
// `project scale ...`: one job over a list of GPU counts, each at its best layout.
absl::Status RunScaleCommand(int argc, char** argv, const Output& io);
absl::Status RunSweepCommand(int argc, char** argv, const Output& io);
// `project serve ...`: an inference deployment under a request workload.
absl::Status RunServeCommand(int argc, char** argv, const Output& io);
// `project calibrate --profile FILE | --cases FILE --gpu-arch NAME`: a hardware overlay fitted.
absl::Status RunCalibrateCommand(int argc, char** argv, const Output& io);

}  // namespace projector

#endif  // PROJECTOR_CLI_COMMANDS_H_
