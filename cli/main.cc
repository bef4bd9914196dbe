// The `project` executable: dispatches to a subcommand (cli/commands.h) and maps its Status to
// a message on stderr and an exit code (2 bad input, 3 a failed accuracy floor, 1 internal).
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "absl/strings/str_cat.h"
#include "core/suggest.h"

namespace projector {
namespace {

int Run(int argc, char** argv, const Output& io) {
  const std::string sub = argc > 1 ? argv[1] : "";
  absl::Status status;
  if (sub == "estimate") {
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
  } else if (!sub.empty() && sub[0] != '-') {
    // Not a flag and no subcommand: a mistyped one ("serch").
    const std::vector<std::string> commands = {"estimate", "validate", "search", "calibrate",
                                               "network",  "serve",  "scale",   "compare"};
    status = absl::InvalidArgumentError(absl::StrCat(
        "unknown command '", sub, "'", DidYouMean(sub, commands),
        "; accepted: estimate, validate, search, scale, compare, calibrate, network, serve, or flags "
        "alone "
        "for one "
        "projection (see project --help)"));
  } else {
    status = RunProjectCommand(argc, argv, io);
  }
  if (status.ok()) return 0;
  io.err << "project: error: " << status.message() << "\n";
  return ExitCodeFor(status);
}

}  // namespace
}  // namespace projector

int main(int argc, char** argv) {
  const projector::Output io{std::cout, std::cerr};
  try {
    return projector::Run(argc, argv, io);
  } catch (const std::exception& e) {
    std::cerr << "project: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "project: internal error: unknown exception\n";
    return 1;
  }
}
