#include "cli/dispatch.h"

#include <exception>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/suggest.h"

namespace projector {
namespace {

// The commands whose work MPI ranks share.
bool SharesWorkOverRanks(const std::string& sub) {
  return sub == "search" || sub == "scale" || sub == "serve" || sub == "sweep";
}

int Dispatch(int argc, char** argv, const Output& io) {
  const std::string sub = argc > 1 ? argv[1] : "";
  absl::Status status;
  if (io.team != nullptr && io.team->size() > 1 && !SharesWorkOverRanks(sub)) {
    status = absl::InvalidArgumentError(absl::StrCat(
        "project ", sub.empty() || sub[0] == '-' ? std::string("(one projection)") : sub,
        " runs in one process, not over ", io.team->size(),
        " MPI ranks; start it without mpirun/srun (ranks share the work of search, scale, serve "
        "--search-layouts and sweep)"));
  } else if (sub == "estimate") {
    status = RunEstimateCommand(argc, argv, io);
  } else if (sub == "validate") {
    status = RunValidateCommand(argc, argv, io);
  } else if (sub == "search") {
    status = RunSearchCommand(argc, argv, io);
  } else if (sub == "calibrate") {
    status = RunCalibrateCommand(argc, argv, io);
  } else if (sub == "network") {
    status = RunNetworkCommand(argc, argv, io);
  } else if (sub == "compare") {
    status = RunCompareCommand(argc, argv, io);
  } else if (sub == "scale") {
    status = RunScaleCommand(argc, argv, io);
  } else if (sub == "serve") {
    status = RunServeCommand(argc, argv, io);
  } else if (sub == "sweep") {
    status = RunSweepCommand(argc, argv, io);
  } else if (!sub.empty() && sub[0] != '-') {
    // Not a flag and no subcommand: a mistyped one ("serch").
    const std::vector<std::string> commands = {"estimate", "validate", "search",
                                               "calibrate", "network", "serve",
                                               "scale",    "compare",  "sweep"};
    status = absl::InvalidArgumentError(absl::StrCat(
        "unknown command '", sub, "'", DidYouMean(sub, commands),
        "; accepted: estimate, validate, search, scale, compare, sweep, calibrate, network, serve, "
        "or flags alone for one projection (see project --help)"));
  } else {
    status = RunProjectCommand(argc, argv, io);
  }
  // A serving rank's study printed nothing of its own: the coordinator printed the result.
  if (status.ok() || IsServedStatus(status)) return 0;
  io.err << "project: error: " << status.message() << "\n";
  return ExitCodeFor(status);
}

}  // namespace

int RunCommandLine(int argc, char** argv, const Output& io) {
  try {
    return Dispatch(argc, argv, io);
  } catch (const std::exception& e) {
    io.err << "project: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    io.err << "project: internal error: unknown exception\n";
    return 1;
  }
}

}  // namespace projector

