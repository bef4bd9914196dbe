#include "core/number_format.h"

#include "absl/strings/str_cat.h"

namespace projector {

std::string GroupThousands(std::string_view digits) {
  std::string out;
  const size_t len = digits.size();
  for (size_t i = 0; i < len; ++i) {
    if (i > 0 && (len - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string FormatCount(int64_t n) {
  const std::string grouped = GroupThousands(absl::StrCat(n < 0 ? -n : n));
  return n < 0 ? "-" + grouped : grouped;
}

}  // namespace projector
