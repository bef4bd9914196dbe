// Interface of the collective / point-to-point backends: one collective on a process group
// placed on the cluster's hierarchical network.
#ifndef PROJECTOR_BACKENDS_COLLECTIVE_BACKEND_H_
#define PROJECTOR_BACKENDS_COLLECTIVE_BACKEND_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/gemm_backend.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {


struct CollectiveEstimate {
  Seconds time;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  // nccl-tests bus bandwidth: algbw · factor (AllReduce 2(n-1)/n, AG/RS (n-1)/n, A2A (n-1)/n).
  BytesPerSecond bus_bandwidth;
  int64_t nodes_spanned = 1;     // nodes the group touches
  int64_t ranks_per_node = 1;    // group ranks sharing one node
  Bound bound = Bound::kNetwork;
};

// One call as a backend priced it, for reports: the group's placement and the algorithm taken.
struct CollectiveDecision {
  CollectiveOp op;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  std::string placement;  // "dim 0 (NVLink 4 + NVSwitch) x 8"
  Seconds time;
};

class CollectiveBackend {
 public:
  virtual ~CollectiveBackend() = default;
  // kInvalidArgument for a group size < 1, negative bytes, or SendRecv with size != 2;
  // kUnimplemented if `algorithm` does not exist for op.kind.
  virtual absl::StatusOr<CollectiveEstimate> Estimate(
      const CollectiveOp& op, CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) const = 0;
  virtual std::string_view name() const = 0;
  // The calls priced so far with their placement and algorithm, largest first; empty for a
  // backend with nothing to say beyond its estimates.
  virtual std::vector<CollectiveDecision> Decisions() const { return {}; }
};

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_COLLECTIVE_BACKEND_H_
