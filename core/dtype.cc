#include "core/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace projector {

std::string_view DTypeName(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kTf32:
      return "tf32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kFp4:
      return "fp4";
  }
  return "?";
}

std::string ValidDTypeNames() {
  std::string out;
  for (DType d : kAllDTypes) {
    if (!out.empty()) out += ", ";
    out += DTypeName(d);
  }
  return out;
}

absl::StatusOr<DType> ParseDType(std::string_view name) {
  for (DType d : kAllDTypes) {
    if (DTypeName(d) == name) return d;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", absl::string_view(name.data(), name.size()), "'; valid: ", ValidDTypeNames()));
}

}  // namespace projector
