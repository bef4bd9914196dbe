// The flags a user gave, by name, as text (FlagValues); how a layer declares the flags it reads
// (FlagSpec); and one reader per kind of value with the one error type ("--name: problem").
// scenario/ builds the Scenario from FlagValues and studies/ their options; cli/ fills them from
// the command line (a binding may fill them from keyword arguments). No parser is known here.
#ifndef PROJECTOR_CORE_FLAG_VALUES_H_
#define PROJECTOR_CORE_FLAG_VALUES_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace projector {

// How a flag takes its value.
enum class FlagArity {
  kValue,     // --tp 8, --tp=8
  kBool,      // --fsdp (true), --fsdp=false
  kSwitch,    // --show-ops: present or not
  kRepeated,  // --hw-overlay A,B --hw-overlay C: every value kept (FlagValues::All)
};

// One flag as the layer that reads it declares it.
struct FlagSpec {
  absl::string_view name;        // without the dashes: "tp"
  absl::string_view help;        // one line for --help
  absl::string_view value_name;  // the value's placeholder in --help: "N", "FILE"
  FlagArity arity = FlagArity::kValue;
  absl::string_view default_value = "";  // what FlagValues::Text returns when absent ("" = none)
};

// The flags given, each as the text the user typed; defaults apart, so Given() says what the
// user chose.
class FlagValues {
 public:
  // Records a value given (several for one flag are kept in order; the last one counts).
  void Add(absl::string_view name, absl::string_view value);
  // The value Text() returns while the flag is not given.
  void SetDefault(absl::string_view name, absl::string_view value);

  bool Given(absl::string_view name) const;
  // Given, or declared with a default.
  bool HasValue(absl::string_view name) const;
  // The last value given, else the default, else "".
  const std::string& Text(absl::string_view name) const;
  // Every value given, in order (empty when not given).
  std::span<const std::string> All(absl::string_view name) const;
  // The names given, sorted.
  std::vector<std::string> GivenNames() const;

 private:
  std::map<std::string, std::vector<std::string>, std::less<>> given_;
  std::map<std::string, std::string, std::less<>> defaults_;
};

// kInvalidArgument "--<flag>: <problem>".
absl::Status FlagError(absl::string_view flag, absl::string_view problem);
// The same status with "--<flag>: " in front of its message (the code kept).
absl::Status WithFlag(absl::string_view flag, const absl::Status& status);

bool Given(const FlagValues& flags, absl::string_view name);
std::string StringFlag(const FlagValues& flags, absl::string_view name);

// An integer flag in [min, max]; its default, else `fallback` when absent (FlagError "required"
// without either).
struct IntRange {
  int64_t min = 1;
  int64_t max = std::numeric_limits<int64_t>::max();
  absl::string_view beyond = "";  // said after a value above max: " (beyond any training run)"
  absl::string_view shown = "";   // the name in messages when it differs from the flag's
};
absl::StatusOr<int64_t> IntFlag(const FlagValues& flags, absl::string_view name,
                                IntRange range = {},
                                std::optional<int64_t> fallback = std::nullopt);
// A boolean flag: true/false (also 1/0, yes/no, on/off); its default, else `fallback` when
// absent.
absl::StatusOr<bool> BoolFlag(const FlagValues& flags, absl::string_view name,
                              bool fallback = false);
// Sets `target` from a boolean flag when it is given.
absl::Status ReadBoolFlag(const FlagValues& flags, absl::string_view name, bool& target);
absl::Status ReadBoolFlag(const FlagValues& flags, absl::string_view name,
                          std::optional<bool>& target);

// One finite decimal number and nothing else ("1.5", "2e3"; not "1.5abc", "0x10", "inf").
absl::StatusOr<double> ParseNumber(absl::string_view text, absl::string_view flag);
// A number flag through ParseNumber.
absl::StatusOr<double> NumberFlag(const FlagValues& flags, absl::string_view name);
// "1300,1700" -> {1300, 1700}; each value a positive number.
absl::StatusOr<std::vector<double>> ParsePositiveList(absl::string_view text,
                                                      absl::string_view flag);
// "1,2,4,8" -> {1, 2, 4, 8}; each value a positive integer of at most `max`.
absl::StatusOr<std::vector<int64_t>> IntListFlag(const FlagValues& flags, absl::string_view name,
                                                 int64_t max);
// A comma-separated list of names, each read by `parse` (a StatusOr<T>(const std::string&)).
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> NameListFlag(const FlagValues& flags, absl::string_view name,
                                            Parse parse);
// "1GiB", "64MB", "4096" -> bytes (nccl-tests convention: KiB/MiB/GiB are powers of two).
absl::StatusOr<double> ParseByteSize(absl::string_view text, absl::string_view flag);
// A name flag (or its default) read by `parse` (a StatusOr<T>(absl::string_view)), nullopt when
// absent; the
// parser's message behind the flag's name.
template <typename T, typename Parse>
absl::StatusOr<std::optional<T>> ParsedFlag(const FlagValues& flags, absl::string_view name,
                                            Parse parse);

template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> NameListFlag(const FlagValues& flags, absl::string_view name,
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
absl::StatusOr<std::optional<T>> ParsedFlag(const FlagValues& flags, absl::string_view name,
                                            Parse parse) {
  if (!flags.HasValue(name)) return std::nullopt;
  absl::StatusOr<T> v = parse(StringFlag(flags, name));
  if (!v.ok()) return FlagError(name, v.status().message());
  return *v;
}

}  // namespace projector

#endif  // PROJECTOR_CORE_FLAG_VALUES_H_
