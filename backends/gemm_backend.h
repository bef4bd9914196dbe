// Interface of the GEMM backends: how long one (batched) GEMM takes on one GPU.
#ifndef PROJECTOR_BACKENDS_GEMM_BACKEND_H_
#define PROJECTOR_BACKENDS_GEMM_BACKEND_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {

// What bounds an op's time.
enum class Bound { kCompute, kMemory, kLatency, kNetwork, kMeasured };
std::string_view BoundName(Bound b);

struct GemmEstimate {
  Seconds time;
  // Part of `time` that scales with 1/clock (compute-bound cycles); the rest (memory, launch)
  // does not. Used by clock what-if studies.
  Seconds clock_scaled_time;
  Bound bound = Bound::kCompute;
  int64_t tile_m = 0;  // chosen macro tile (0 for models without tiles)
  int64_t tile_n = 0;
  int64_t tile_k = 0;
  int64_t waves = 0;
};

class GemmBackend {
 public:
  virtual ~GemmBackend() = default;
  // kInvalidArgument if m, n, k or batch is not positive, kUnimplemented if the GPU has no
  // matrix rate for the dtype.
  virtual absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_GEMM_BACKEND_H_
