// Number formatting shared by every text rendering: thousands separators for counts.
#ifndef PROJECTOR_CORE_NUMBER_FORMAT_H_
#define PROJECTOR_CORE_NUMBER_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace projector {

// "1234567" -> "1,234,567": commas between groups of three digits of an unsigned digit string.
std::string GroupThousands(std::string_view digits);
// -1234567 -> "-1,234,567".
std::string FormatCount(int64_t n);

}  // namespace projector

#endif  // PROJECTOR_CORE_NUMBER_FORMAT_H_
