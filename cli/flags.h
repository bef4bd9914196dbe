// The command line's side of flags: the declared FlagSpecs registered with cxxopts, the parse
// with its exceptions turned into Status and its result into FlagValues, and the output-file and
// exit-code conventions. Reading the values is core/flag_values'; nothing here models.
#ifndef PROJECTOR_CLI_FLAGS_H_
#define PROJECTOR_CLI_FLAGS_H_

#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/commands.h"
#include "core/flag_values.h"
#include "cxxopts.hpp"

namespace projector {

// Registers `flags` under the --help title `group` ("" for the untitled first group).
void AddFlags(cxxopts::Options& options, absl::string_view group, std::span<const FlagSpec> flags);

// Parses `args` (args[0] stands for the program) with `options` (-h/--help added). `command`
// ("validate: ") prefixes a parse error and an unexpected positional argument; `hint`
// (" (see project --help)") follows it. nullopt when --help was asked and the help (of
// `help_groups`, all when empty) went to `out`.
absl::StatusOr<std::optional<FlagValues>> ParseFlags(
    cxxopts::Options& options, std::span<char*> args, absl::string_view command,
    absl::string_view hint, std::ostream& out, const std::vector<std::string>& help_groups = {});
// The same over argv[first..argc) of the command line itself.
absl::StatusOr<std::optional<FlagValues>> ParseFlags(
    cxxopts::Options& options, int argc, char** argv, int first, absl::string_view command,
    absl::string_view hint, std::ostream& out, const std::vector<std::string>& help_groups = {});

// --format: true for json, false for text (the default).
absl::StatusOr<bool> WantsJson(const FlagValues& flags);
// The path of an output-file flag (--trace, --html): empty when absent; FlagError for an empty
// name, or with a `mode` other than simulate (they are written from a simulated replay).
absl::StatusOr<std::string> OutputFileFlag(const FlagValues& flags, absl::string_view name,
                                           absl::string_view mode = "simulate");
// Writes `content` to `path`; FlagError naming `flag` when it cannot.
absl::Status WriteOutputFile(absl::string_view flag, const std::string& path,
                             const std::string& content);
// "html: report written to FILE (open in a browser)" and the like, on `out` for text output and
// on `err` under --format json (stdout stays one JSON document).
std::ostream& NoteStream(bool as_json, std::ostream& out, std::ostream& err);

// --plots DIR: the charts of `html` (ChartsOf) as SVG files in DIR (created if missing); the
// number written, or FlagError naming --plots when DIR cannot be made or written.
absl::StatusOr<size_t> WritePlots(const std::string& dir, const std::string& html);
inline constexpr FlagSpec kPlotsFlag = {
    "plots", "Also write the report's charts as SVG files into this directory", "DIR"};

// --quiet and --progress: the progress bar of a long run (core/progress.h).
extern const FlagSpec kProgressFlags[2];
// Whether to draw it: --quiet never, --progress always, else when stderr is a terminal.
absl::StatusOr<bool> ProgressFlag(const FlagValues& flags);

// 0 OK; 2 bad input (kInvalidArgument, kNotFound, kFailedPrecondition, kUnimplemented); 3 a
// check the user asked for failed (kOutOfRange: an accuracy floor); 1 anything else.
int ExitCodeFor(const absl::Status& status);

// The MPI team of `io` (the process alone when it has none), with at most `tasks()` ranks: more
// ranks than `what` to evaluate (points, candidates, GPU counts) is kInvalidArgument, the same on
// every rank, so rank 0 alone says it. `tasks` is called only for a team of several ranks.
absl::StatusOr<WorkTeam*> TeamFor(const Output& io, const std::function<int64_t()>& tasks,
                                  absl::string_view what);

}  // namespace projector

#endif  // PROJECTOR_CLI_FLAGS_H_
