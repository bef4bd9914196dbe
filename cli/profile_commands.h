// CLI side of profile-driven projection: the profile flags, the main projection in the
// profile / both / measure profiling modes, and the `project calibrate` subcommand. Parsing,
// files and printing only; the modelling lives in projection/profile_mode and
// projection/calibrate, the GPU timing in backends/measure.
#ifndef PROJECTOR_CLI_PROFILE_COMMANDS_H_
#define PROJECTOR_CLI_PROFILE_COMMANDS_H_

#include <ostream>
#include <string_view>

#include "absl/status/status.h"
#include "cxxopts.hpp"
#include "scenario/scenario.h"

namespace projector {

// Adds --profile, --profile-out, --hw-overlay, --measure-warmup, --measure-repetitions and
// --measure-device (group "Profiles") to the main projection's options.
void AddProfileFlags(cxxopts::Options& options);

// Applies --hw-overlay FILE (a `project calibrate` overlay) to scenario.hw when given; a no-op
// otherwise. kInvalidArgument / kNotFound naming the file and field.
absl::Status ApplyHwOverlayFlag(const cxxopts::ParseResult& flags, Scenario& scenario);

// The main projection for --profiling-mode profile, both or measure. `target` is the scenario
// the flags describe (overlay already applied); when the flags name no scenario at all (only
// the profile flags, --profiling-mode and --format), profile/both project the profile's own
// scenario instead. measure times the target's ops on the local GPU, writes --profile-out and
// then projects from it. Exit-code mapping as ExitCodeFor: kFailedPrecondition (2) when the
// build has no GPU runtime or no device is present, kInvalidArgument (2) for a missing or bad
// --profile, kInvalidArgument for a mode other than the three.
absl::Status RunProfilingMode(std::string_view mode, const cxxopts::ParseResult& flags,
                              const Scenario& target, bool as_json, std::ostream& out,
                              std::ostream& err);

// `project calibrate --profile FILE [--overlay-out FILE] [--format text|json]
// [--gemm-backend ...]`: argv[1] is "calibrate". Fits the efficiency constants, prints them with
// the residuals, writes the overlay (default hw-overlay.json). kInvalidArgument for bad flags
// or a bad profile.
absl::Status RunCalibrateCommand(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace projector

#endif  // PROJECTOR_CLI_PROFILE_COMMANDS_H_
