#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"

namespace projector {

std::string_view BoundName(Bound b) {
  switch (b) {
    case Bound::kCompute:
      return "compute";
    case Bound::kMemory:
      return "memory";
    case Bound::kLatency:
      return "latency";
    case Bound::kNetwork:
      return "network";
    case Bound::kMeasured:
      return "measured";
  }
  return "?";
}

}  // namespace projector
