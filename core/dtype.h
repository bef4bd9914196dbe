// Numeric formats of GEMM/attention operands and their sizes in bytes.
#ifndef PROJECTOR_CORE_DTYPE_H_
#define PROJECTOR_CORE_DTYPE_H_

#include <array>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace projector {

enum class DType { kFp32, kTf32, kBf16, kFp16, kFp8, kFp4 };

inline constexpr std::array<DType, 6> kAllDTypes = {DType::kFp32, DType::kTf32, DType::kBf16,
                                                    DType::kFp16, DType::kFp8,  DType::kFp4};
inline constexpr int kNumDTypes = 6;

constexpr int DTypeIndex(DType d) { return static_cast<int>(d); }

// Bytes per element in memory (fp4 = 0.5; tf32 is stored as fp32).
constexpr double BytesPerElement(DType d) {
  switch (d) {
    case DType::kFp32:
    case DType::kTf32:
      return 4.0;
    case DType::kBf16:
    case DType::kFp16:
      return 2.0;
    case DType::kFp8:
      return 1.0;
    case DType::kFp4:
      return 0.5;
  }
  return 2.0;
}

// "fp32", "tf32", "bf16", "fp16", "fp8", "fp4".
std::string_view DTypeName(DType d);
// kInvalidArgument listing the valid names for an unknown one.
absl::StatusOr<DType> ParseDType(std::string_view name);
std::string ValidDTypeNames();

}  // namespace projector

#endif  // PROJECTOR_CORE_DTYPE_H_
