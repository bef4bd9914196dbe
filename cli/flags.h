// Flag reading for every subcommand of the `project` executable: one error type (FlagError,
// "--name: problem"), one reader per kind of value, the cxxopts parse with its exceptions turned
// into Status, and the output-file and exit-code conventions. Nothing here models performance.
#ifndef PROJECTOR_CLI_FLAGS_H_
#define PROJECTOR_CLI_FLAGS_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "cxxopts.hpp"

namespace projector {

using Flags = cxxopts::ParseResult;

// kInvalidArgument "--<flag>: <problem>".
absl::Status FlagError(absl::string_view flag, absl::string_view problem);
// The same status with "--<flag>: " in front of its message (the code kept).
absl::Status WithFlag(absl::string_view flag, const absl::Status& status);

// Parses `args` (args[0] stands for the program) with `options`. `command` ("validate: ")
// prefixes a parse error and an unexpected positional argument; `hint` (" (see project --help)")
// follows it; a value that fails to parse is named by the flag the user typed in `user_args`.
// nullopt when --help was asked and the help (of `help_groups`, all when empty) went to `out`.
absl::StatusOr<std::optional<Flags>> ParseFlags(cxxopts::Options& options, std::span<char*> args,
                                                std::span<char*> user_args,
                                                absl::string_view command, absl::string_view hint,
                                                std::ostream& out,
                                                const std::vector<std::string>& help_groups = {});
// The same over argv[first..argc) of the command line itself.
absl::StatusOr<std::optional<Flags>> ParseFlags(cxxopts::Options& options, int argc, char** argv,
                                                int first, absl::string_view command,
                                                absl::string_view hint, std::ostream& out,
                                                const std::vector<std::string>& help_groups = {});

bool Given(const Flags& flags, absl::string_view name);
std::string StringFlag(const Flags& flags, absl::string_view name);

// An integer flag in [min, max]; `fallback` when absent (FlagError "required" without one).
struct IntRange {
  int64_t min = 1;
  int64_t max = std::numeric_limits<int64_t>::max();
  absl::string_view beyond = "";  // said after a value above max: " (beyond any training run)"
  absl::string_view shown = "";   // the name in messages when it differs from the option's
};
absl::StatusOr<int64_t> IntFlag(const Flags& flags, absl::string_view name, IntRange range = {},
                                std::optional<int64_t> fallback = std::nullopt);
// A boolean flag (true/false); `fallback` when absent.
absl::StatusOr<bool> BoolFlag(const Flags& flags, absl::string_view name, bool fallback = false);
// Sets `target` from a boolean flag when it is given.
absl::Status ReadBoolFlag(const Flags& flags, absl::string_view name, bool& target);
absl::Status ReadBoolFlag(const Flags& flags, absl::string_view name, std::optional<bool>& target);

// One finite decimal number and nothing else ("1.5", "2e3"; not "1.5abc", "0x10", "inf").
absl::StatusOr<double> ParseNumber(absl::string_view text, absl::string_view flag);
// A number flag declared as a string, through ParseNumber.
absl::StatusOr<double> NumberFlag(const Flags& flags, absl::string_view name);
// "1300,1700" -> {1300, 1700}; each value a positive number.
absl::StatusOr<std::vector<double>> ParsePositiveList(absl::string_view text,
                                                      absl::string_view flag);
// "1,2,4,8" -> {1, 2, 4, 8}; each value a positive integer of at most `max`.
absl::StatusOr<std::vector<int64_t>> IntListFlag(const Flags& flags, absl::string_view name,
                                                 int64_t max);
// A comma-separated list of names, each read by `parse` (a StatusOr<T>(const std::string&)).
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> NameListFlag(const Flags& flags, absl::string_view name,
                                            Parse parse);
// "1GiB", "64MB", "4096" -> bytes (nccl-tests convention: KiB/MiB/GiB are powers of two).
absl::StatusOr<double> ParseByteSize(absl::string_view text, absl::string_view flag);
// A name flag read by `parse` (a StatusOr<T>(absl::string_view)), nullopt when absent; the
// parser's message behind the flag's name.
template <typename T, typename Parse>
absl::StatusOr<std::optional<T>> ParsedFlag(const Flags& flags, absl::string_view name,
                                            Parse parse);

// --format: true for json, false for text (the default).
absl::StatusOr<bool> WantsJson(const Flags& flags);
// The path of an output-file flag (--trace, --html): empty when absent; FlagError for an empty
// name, or with a `mode` other than simulate (they are written from a simulated replay).
absl::StatusOr<std::string> OutputFileFlag(const Flags& flags, absl::string_view name,
                                           absl::string_view mode = "simulate");
// Writes `content` to `path`; FlagError naming `flag` when it cannot.
absl::Status WriteOutputFile(absl::string_view flag, const std::string& path,
                             const std::string& content);
// "html: report written to FILE (open in a browser)" and the like, on `out` for text output and
// on `err` under --format json (stdout stays one JSON document).
std::ostream& NoteStream(bool as_json, std::ostream& out, std::ostream& err);

// 0 OK; 2 bad input (kInvalidArgument, kNotFound, kFailedPrecondition, kUnimplemented); 3 a
// check the user asked for failed (kOutOfRange: an accuracy floor); 1 anything else.
int ExitCodeFor(const absl::Status& status);

template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> NameListFlag(const Flags& flags, absl::string_view name,
                                            Parse parse) {
  std::vector<T> out;
  for (absl::string_view part : absl::StrSplit(StringFlag(flags, name), ',')) {
    absl::StatusOr<T> v = parse(std::string(absl::StripAsciiWhitespace(part)));
    if (!v.ok()) return FlagError(name, v.status().message());
    out.push_back(*v);
  }
  return out;
}

template <typename T, typename Parse>
absl::StatusOr<std::optional<T>> ParsedFlag(const Flags& flags, absl::string_view name,
                                            Parse parse) {
  if (!Given(flags, name)) return std::nullopt;
  absl::StatusOr<T> v = parse(StringFlag(flags, name));
  if (!v.ok()) return FlagError(name, v.status().message());
  return *v;
}

}  // namespace projector

#endif  // PROJECTOR_CLI_FLAGS_H_
