#include "cli/flags.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"

namespace projector {
namespace {

// A decimal number and nothing else (absl::SimpleAtod alone also takes hex and "inf").
bool StrictAtod(absl::string_view text, double* v) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != absl::string_view::npos) {
    return false;
  }
  return absl::SimpleAtod(text, v) && std::isfinite(*v);
}

// cxxopts says "Argument ‘x’ failed to parse"; this names the flag the value was given to.
std::string ExplainParseError(const std::exception& e, int argc, char** argv) {
  std::string what = e.what();
  const std::string open = "\xe2\x80\x98", close = "\xe2\x80\x99";  // ‘ ’
  size_t a = what.find(open);
  size_t b = a == std::string::npos ? a : what.find(close, a + open.size());
  if (what.find("failed to parse") == std::string::npos || b == std::string::npos) return what;
  std::string value = what.substr(a + open.size(), b - a - open.size());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == value && i > 1 && argv[i - 1][0] == '-') {
      return absl::StrCat(argv[i - 1], ": '", value, "' is not a valid value for this flag");
    }
    size_t eq = arg.find('=');
    if (eq != std::string::npos && arg.substr(eq + 1) == value) {
      return absl::StrCat(arg.substr(0, eq), ": '", value, "' is not a valid value for this flag");
    }
  }
  return what;
}

}  // namespace

absl::Status FlagError(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

absl::Status WithFlag(absl::string_view flag, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("--", flag, ": ", status.message()));
}

absl::StatusOr<std::optional<Flags>> ParseFlags(cxxopts::Options& options, std::span<char*> args,
                                                std::span<char*> user_args,
                                                absl::string_view command, absl::string_view hint,
                                                std::ostream& out,
                                                const std::vector<std::string>& help_groups) {
  Flags flags;
  try {
    flags = options.parse(static_cast<int>(args.size()), args.data());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        command, ExplainParseError(e, static_cast<int>(user_args.size()), user_args.data()), hint));
  }
  if (flags.count("help")) {
    out << (help_groups.empty() ? options.help() : options.help(help_groups));
    return std::nullopt;
  }
  if (!flags.unmatched().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(command, "unexpected argument '", flags.unmatched().front(), "'", hint));
  }
  return flags;
}

absl::StatusOr<std::optional<Flags>> ParseFlags(cxxopts::Options& options, int argc, char** argv,
                                                int first, absl::string_view command,
                                                absl::string_view hint, std::ostream& out,
                                                const std::vector<std::string>& help_groups) {
  const std::span<char*> user_args(argv, static_cast<size_t>(argc));
  return ParseFlags(options, user_args.subspan(static_cast<size_t>(first)), user_args, command,
                    hint, out, help_groups);
}

bool Given(const Flags& flags, absl::string_view name) {
  return flags.count(std::string(name)) > 0;
}

std::string StringFlag(const Flags& flags, absl::string_view name) {
  return flags[std::string(name)].as<std::string>();
}

absl::StatusOr<int64_t> IntFlag(const Flags& flags, absl::string_view name, IntRange range,
                                std::optional<int64_t> fallback) {
  const absl::string_view shown = range.shown.empty() ? name : range.shown;
  if (!Given(flags, name)) {
    if (fallback) return *fallback;
    return FlagError(shown, "required");
  }
  int64_t v = 0;
  try {
    v = flags[std::string(name)].as<int64_t>();
  } catch (const std::exception& e) {
    return FlagError(shown, absl::StrCat("expected an integer (", e.what(), ")"));
  }
  if (v < range.min) {
    return FlagError(shown, range.min == 1 ? absl::StrCat("must be > 0, got ", v)
                                           : absl::StrCat("must be >= ", range.min, ", got ", v));
  }
  if (v > range.max) {
    return FlagError(shown, absl::StrCat("must be <= ", range.max, range.beyond, ", got ", v));
  }
  return v;
}

absl::StatusOr<bool> BoolFlag(const Flags& flags, absl::string_view name, bool fallback) {
  if (!Given(flags, name)) return fallback;
  try {
    return flags[std::string(name)].as<bool>();
  } catch (const std::exception&) {
    return FlagError(name, "expected true or false");
  }
}

absl::Status ReadBoolFlag(const Flags& flags, absl::string_view name, bool& target) {
  PROJECTOR_ASSIGN_OR_RETURN(target, BoolFlag(flags, name, target));
  return absl::OkStatus();
}

absl::Status ReadBoolFlag(const Flags& flags, absl::string_view name, std::optional<bool>& target) {
  if (!Given(flags, name)) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(target, BoolFlag(flags, name));
  return absl::OkStatus();
}

absl::StatusOr<double> ParseNumber(absl::string_view text, absl::string_view flag) {
  double v = 0;
  if (!StrictAtod(text, &v)) {
    return FlagError(flag, absl::StrCat("'", text, "' is not a number; expected e.g. 1.5"));
  }
  return v;
}

absl::StatusOr<double> NumberFlag(const Flags& flags, absl::string_view name) {
  return ParseNumber(StringFlag(flags, name), name);
}

absl::StatusOr<std::vector<double>> ParsePositiveList(absl::string_view text,
                                                      absl::string_view flag) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!StrictAtod(part, &v) || v <= 0) {
      return FlagError(flag, absl::StrCat("'", std::string(part),
                                          "' is not a positive number; expected e.g. 1300,1700"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> IntListFlag(const Flags& flags, absl::string_view name,
                                                 int64_t max) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(StringFlag(flags, name), ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v) || v <= 0) {
      return FlagError(name, absl::StrCat("'", std::string(part),
                                          "' is not a positive integer; expected e.g. 1,2,4,8"));
    }
    if (v > max) {
      return FlagError(name, absl::StrCat(v, " is beyond any training run (at most ", max, ")"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<double> ParseByteSize(absl::string_view text, absl::string_view flag) {
  struct Suffix {
    const char* name;
    double factor;
  };
  static constexpr Suffix kSuffixes[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024.0},
                                         {"TB", 1e12},          {"GB", 1e9},        {"MB", 1e6},
                                         {"KB", 1e3},           {"B", 1.0}};
  absl::string_view body = absl::StripAsciiWhitespace(text);
  double factor = 1.0;
  for (const Suffix& s : kSuffixes) {
    if (absl::ConsumeSuffix(&body, s.name)) {
      factor = s.factor;
      break;
    }
  }
  double v = 0;
  if (!absl::SimpleAtod(body, &v) || !std::isfinite(v) || v < 0) {
    return FlagError(flag, absl::StrCat("'", text,
                                        "' is not a size; expected a number with an optional "
                                        "suffix B, KB, MB, GB, TB, KiB, MiB, GiB"));
  }
  return v * factor;
}

absl::StatusOr<bool> WantsJson(const Flags& flags) {
  if (!Given(flags, "format")) return false;
  const std::string f = StringFlag(flags, "format");
  if (f == "json") return true;
  if (f == "text") return false;
  return FlagError("format", absl::StrCat("unknown format '", f, "'; accepted: text, json"));
}

absl::StatusOr<std::string> OutputFileFlag(const Flags& flags, absl::string_view name,
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

}  // namespace projector
