#include "core/flag_values.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

const std::string& EmptyText() {
  static const std::string* const kEmpty = new std::string();
  return *kEmpty;
}

}  // namespace

void FlagValues::Add(absl::string_view name, absl::string_view value) {
  auto it = given_.find(name);
  if (it == given_.end()) it = given_.emplace(std::string(name), std::vector<std::string>()).first;
  it->second.emplace_back(value);
}

void FlagValues::SetDefault(absl::string_view name, absl::string_view value) {
  defaults_.insert_or_assign(std::string(name), std::string(value));
}

bool FlagValues::Given(absl::string_view name) const { return given_.contains(name); }

bool FlagValues::HasValue(absl::string_view name) const {
  return Given(name) || defaults_.contains(name);
}

const std::string& FlagValues::Text(absl::string_view name) const {
  if (auto it = given_.find(name); it != given_.end()) return it->second.back();
  if (auto it = defaults_.find(name); it != defaults_.end()) return it->second;
  return EmptyText();
}

std::span<const std::string> FlagValues::All(absl::string_view name) const {
  auto it = given_.find(name);
  if (it == given_.end()) return {};
  return it->second;
}

std::vector<std::string> FlagValues::GivenNames() const {
  std::vector<std::string> names;
  names.reserve(given_.size());
  for (const auto& [name, values] : given_) names.push_back(name);
  return names;
}

absl::Status FlagError(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

absl::Status WithFlag(absl::string_view flag, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("--", flag, ": ", status.message()));
}

bool Given(const FlagValues& flags, absl::string_view name) { return flags.Given(name); }

std::string StringFlag(const FlagValues& flags, absl::string_view name) { return flags.Text(name); }

absl::StatusOr<int64_t> IntFlag(const FlagValues& flags, absl::string_view name, IntRange range,
                                std::optional<int64_t> fallback) {
  const absl::string_view shown = range.shown.empty() ? name : range.shown;
  if (!flags.HasValue(name)) {
    if (fallback) return *fallback;
    return FlagError(shown, "required");
  }
  const std::string& text = flags.Text(name);
  int64_t v = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &v)) {
    return FlagError(shown, absl::StrCat("'", text, "' is not an integer; expected e.g. 8"));
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

absl::StatusOr<bool> BoolFlag(const FlagValues& flags, absl::string_view name, bool fallback) {
  if (!flags.HasValue(name)) return fallback;
  const std::string text = absl::AsciiStrToLower(flags.Text(name));
  if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "0" || text == "no" || text == "off") return false;
  return FlagError(
      name, absl::StrCat("'", flags.Text(name), "' is not true or false; accepted: true, false"));
}

absl::Status ReadBoolFlag(const FlagValues& flags, absl::string_view name, bool& target) {
  PROJECTOR_ASSIGN_OR_RETURN(target, BoolFlag(flags, name, target));
  return absl::OkStatus();
}

absl::Status ReadBoolFlag(const FlagValues& flags, absl::string_view name,
                          std::optional<bool>& target) {
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

absl::StatusOr<double> NumberFlag(const FlagValues& flags, absl::string_view name) {
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

absl::StatusOr<std::vector<int64_t>> IntListFlag(const FlagValues& flags, absl::string_view name,
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

}  // namespace projector
