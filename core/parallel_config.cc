#include "core/parallel_config.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace projector {

std::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

absl::StatusOr<Recompute> ParseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (RecomputeName(r) == name) return r;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown recompute '", absl::string_view(name.data(), name.size()), "'; valid: none, selective, full"));
}

std::string_view AttentionKernelName(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kFlash:
      return "flash";
    case AttentionKernel::kUnfused:
      return "unfused";
  }
  return "?";
}

absl::StatusOr<AttentionKernel> ParseAttentionKernel(std::string_view name) {
  for (AttentionKernel k : {AttentionKernel::kFlash, AttentionKernel::kUnfused}) {
    if (AttentionKernelName(k) == name) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown attention kernel '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "'; valid: flash, unfused"));
}

}  // namespace projector
