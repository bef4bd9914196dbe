#include "cli/flags.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "core/progress.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "report/html_report.h"

namespace projector {
namespace {

// Every flag's value arrives as text: the readers of core/flag_values check it and name the flag.
std::shared_ptr<cxxopts::Value> ValueOf(const FlagSpec& spec) {
  if (spec.arity == FlagArity::kSwitch) return cxxopts::value<bool>();
  auto value = cxxopts::value<std::string>();
  if (spec.arity == FlagArity::kBool) value->implicit_value("true");
  if (!spec.default_value.empty()) value->default_value(std::string(spec.default_value));
  return value;
}

// The long names of the switches (FlagArity::kSwitch: cxxopts booleans).
std::vector<std::string> SwitchNames(const cxxopts::Options& options) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      if (o.is_boolean) names.insert(names.end(), o.l.begin(), o.l.end());
    }
  }
  return names;
}

// The parse result as FlagValues: each value given, and the declared defaults apart. A switch
// written off (`--show-ops=false`, as cxxopts reads a boolean) counts as not given, so that
// Given() reads it as the user meant.
FlagValues ToFlagValues(const cxxopts::Options& options, const cxxopts::ParseResult& result) {
  FlagValues values;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      if (o.has_default && !o.is_boolean && !o.l.empty()) {
        values.SetDefault(o.l.front(), o.default_value);
      }
    }
  }
  const std::vector<std::string> switches = SwitchNames(options);
  for (const cxxopts::KeyValue& kv : result.arguments()) {
    const bool is_switch = std::find(switches.begin(), switches.end(), kv.key()) != switches.end();
    if (is_switch && !result[kv.key()].as<bool>()) continue;
    values.Add(kv.key(), kv.value());
  }
  return values;
}

// Every long flag name the options know.
std::vector<std::string> KnownFlagNames(const cxxopts::Options& options) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups()) {
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options) {
      names.insert(names.end(), o.l.begin(), o.l.end());
    }
  }
  return names;
}

// The first "--name" or "--name=value" among `args` that is not a known flag, with the closest
// known one: "unknown flag --seqlen (did you mean --seq-len?)". Empty when all are known.
std::string UnknownFlagMessage(const cxxopts::Options& options, std::span<char*> args) {
  const std::vector<std::string> known = KnownFlagNames(options);
  for (char* arg : args) {
    const std::string_view a(arg);
    if (!a.starts_with("--") || a.size() < 3) continue;
    const std::string name(a.substr(2, a.find('=') == std::string_view::npos
                                           ? std::string_view::npos
                                           : a.find('=') - 2));
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::optional<std::string> close = ClosestName(name, known);
    return absl::StrCat("unknown flag --", name,
                        close ? absl::StrCat(" (did you mean --", *close, "?)") : "");
  }
  return "";
}

// The first "--name=value" among `args` whose name is a switch and whose value cxxopts could not
// read (`error` quotes it): "--show-ops: 'maybe' is not true or false; ...". Empty when there is
// none.
std::string BadSwitchValueMessage(const cxxopts::Options& options, std::span<char*> args,
                                  std::string_view error) {
  const std::vector<std::string> switches = SwitchNames(options);
  for (char* arg : args) {
    const std::string_view a(arg);
    const size_t eq = a.find('=');
    if (!a.starts_with("--") || eq == std::string_view::npos) continue;
    const std::string name(a.substr(2, eq - 2));
    const std::string value(a.substr(eq + 1));
    if (std::find(switches.begin(), switches.end(), name) == switches.end()) continue;
    if (value == "true" || value == "false" || error.find(value) == std::string_view::npos) {
      continue;
    }
    return absl::StrCat("--", name, ": '", value, "' is not true or false; the switch takes no ",
                        "value (--", name, " turns it on, leaving it out or --", name,
                        "=false leaves it off)");
  }
  return "";
}

}  // namespace

void AddFlags(cxxopts::Options& options, absl::string_view group, std::span<const FlagSpec> flags) {
  auto adder = options.add_options(std::string(group));
  for (const FlagSpec& spec : flags) {
    // cxxopts takes one-letter names only as short options: help is also -h.
    const std::string names = spec.name == "help" ? "h,help" : std::string(spec.name);
    adder(names, std::string(spec.help), ValueOf(spec), std::string(spec.value_name));
  }
}

absl::StatusOr<std::optional<FlagValues>> ParseFlags(cxxopts::Options& options,
                                                     std::span<char*> args,
                                                     absl::string_view command,
                                                     absl::string_view hint, std::ostream& out,
                                                     const std::vector<std::string>& help_groups) {
  cxxopts::ParseResult result;
  try {
    result = options.parse(static_cast<int>(args.size()), args.data());
  } catch (const std::exception& e) {
    std::string message = UnknownFlagMessage(options, args.subspan(1));
    if (message.empty()) message = BadSwitchValueMessage(options, args.subspan(1), e.what());
    if (message.empty()) message = e.what();
    return absl::InvalidArgumentError(absl::StrCat(command, message, hint));
  }
  if (result.count("help")) {
    out << (help_groups.empty() ? options.help() : options.help(help_groups));
    return std::nullopt;
  }
  if (!result.unmatched().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command, "unexpected argument '", result.unmatched().front(), "'", hint));
  }
  return ToFlagValues(options, result);
}

absl::StatusOr<std::optional<FlagValues>> ParseFlags(cxxopts::Options& options, int argc,
                                                     char** argv, int first,
                                                     absl::string_view command,
                                                     absl::string_view hint, std::ostream& out,
                                                     const std::vector<std::string>& help_groups) {
  const std::span<char*> args(argv, static_cast<size_t>(argc));
  return ParseFlags(options, args.subspan(static_cast<size_t>(first)), command, hint, out,
                    help_groups);
}

absl::StatusOr<size_t> WritePlots(const std::string& dir, const std::string& html) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir)) {
    return FlagError("plots", absl::StrCat("cannot create the directory '", dir, "'"));
  }
  const std::vector<SvgFile> files = ChartsOf(html);
  for (const SvgFile& f : files) {
    PROJECTOR_RETURN_IF_ERROR(
        WriteOutputFile("plots", (std::filesystem::path(dir) / f.name).string(), f.svg));
  }
  return files.size();
}

const FlagSpec kProgressFlags[2] = {
    {"quiet", "No progress bar on stderr", "", FlagArity::kSwitch},
    {"progress", "A progress bar on stderr even when it is not a terminal", "", FlagArity::kSwitch},
};

absl::StatusOr<bool> ProgressFlag(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(const bool quiet, BoolFlag(flags, "quiet"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool forced, BoolFlag(flags, "progress"));
  if (quiet && forced) return FlagError("quiet", "give --quiet or --progress, not both");
  return ProgressWanted(quiet, forced);
}

absl::StatusOr<bool> WantsJson(const FlagValues& flags) {
  if (!Given(flags, "format")) return false;
  const std::string f = StringFlag(flags, "format");
  if (f == "json") return true;
  if (f == "text") return false;
  return FlagError("format", absl::StrCat("unknown format '", f, "'; accepted: text, json"));
}

absl::StatusOr<std::string> OutputFileFlag(const FlagValues& flags, absl::string_view name,
                                           absl::string_view mode) {
  if (!Given(flags, name)) return std::string();
  std::string path = StringFlag(flags, name);
  if (path.empty()) return FlagError(name, "empty file name; give the path to write");
  if (mode != "simulate") {
    return FlagError(name, absl::StrCat("written by --profiling-mode simulate only; drop --", name,
                                        " or the mode"));
  }
  return path;
}

absl::Status WriteOutputFile(absl::string_view flag, const std::string& path,
                             const std::string& content) {
  std::ofstream file(path);
  if (file) file << content;
  if (!file) {
    return FlagError(flag, absl::StrCat("cannot write '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

std::ostream& NoteStream(bool as_json, std::ostream& out, std::ostream& err) {
  return as_json ? err : out;
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return 2;
    case absl::StatusCode::kOutOfRange:  // a check the user asked for failed (accuracy floor)
      return 3;
    default:
      return 1;
  }
}

absl::StatusOr<WorkTeam*> TeamFor(const Output& io, const std::function<int64_t()>& tasks,
                                  absl::string_view what) {
  WorkTeam* team = io.team != nullptr ? io.team : &Solo();
  if (team->size() > 1) {
    PROJECTOR_RETURN_IF_ERROR(
        CheckRanksFor(*team, tasks(), std::string_view(what.data(), what.size())));
  }
  return team;
}

}  // namespace projector
