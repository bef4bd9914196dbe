// Interface of the memory-bound kernel backends (norms, element-wise, permutations, optimizer).
#ifndef PROJECTOR_BACKENDS_MEMORY_BACKEND_H_
#define PROJECTOR_BACKENDS_MEMORY_BACKEND_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "backends/gemm_backend.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {

struct MemoryEstimate {
  Seconds time;
  Seconds clock_scaled_time;  // zero for a kernel bound by HBM bandwidth
  Bound bound = Bound::kMemory;
};

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;
  // kInvalidArgument for negative bytes/flops or launches < 1.
  virtual absl::StatusOr<MemoryEstimate> Estimate(const MemoryOp& op) const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_MEMORY_BACKEND_H_
