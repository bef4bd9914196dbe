// Enumerators named by a table of strings (names[i] names enumerator i): the one parser behind
// every "unknown <what> 'x'; accepted: a, b, ..." of the configuration enums.
#ifndef PROJECTOR_CORE_NAME_TABLE_H_
#define PROJECTOR_CORE_NAME_TABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace projector {

// The enumerator whose name is `name`, or kInvalidArgument "unknown <what> 'x'; accepted: a, b".
template <typename Enum, size_t N>
absl::StatusOr<Enum> ParseByName(std::string_view name, const std::string_view (&names)[N],
                                 std::string_view what) {
  std::string accepted;
  for (size_t i = 0; i < N; ++i) {
    if (names[i] == name) return static_cast<Enum>(i);
    accepted += (i > 0 ? ", " : "") + std::string(names[i]);
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown ", std::string(what), " '",
                                                 std::string(name), "'; accepted: ", accepted));
}

}  // namespace projector

#endif  // PROJECTOR_CORE_NAME_TABLE_H_
