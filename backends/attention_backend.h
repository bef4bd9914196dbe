// Interface of the attention backends: flash-attention forward or backward on one GPU.
#ifndef PROJECTOR_BACKENDS_ATTENTION_BACKEND_H_
#define PROJECTOR_BACKENDS_ATTENTION_BACKEND_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/gemm_backend.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {

struct AttentionEstimate {
  Seconds time;
  Seconds clock_scaled_time;
  Bound bound = Bound::kCompute;
  int64_t tile_q = 0;   // query rows per work item
  int64_t tile_kv = 0;  // key/value rows per inner iteration
  int64_t waves = 0;
};

class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  // kInvalidArgument for non-positive sizes or num_q_heads not a multiple of num_kv_heads.
  virtual absl::StatusOr<AttentionEstimate> Estimate(const AttentionShape& shape,
                                                     AttentionPass pass) const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_ATTENTION_BACKEND_H_
