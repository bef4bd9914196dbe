// How a process group {size, stride} lies on the node hierarchy: ranks of the group sharing one
// node and nodes the group spans. Used by the collective backends to split a collective into
// scale-up (inside a node) and scale-out (across nodes) traffic.
#ifndef PROJECTOR_BACKENDS_SIMULATE_NETWORK_PLACEMENT_H_
#define PROJECTOR_BACKENDS_SIMULATE_NETWORK_PLACEMENT_H_

#include <cstdint>

#include "core/op_shapes.h"

namespace projector {

struct GroupPlacement {
  int64_t ranks_per_node = 1;  // group ranks on one node
  int64_t nodes_spanned = 1;   // nodes the group touches
};

// Ranks r0 + i·stride with nodes of `gpus_per_node` consecutive global ranks (the group is
// assumed aligned to its first rank, as every group of the TP-CP-DP-PP order is):
// ranks per node = clamp(gpus_per_node / stride, 1, size) when stride < gpus_per_node, else 1;
// nodes spanned = ceil(size / ranks per node).
// Precondition (unchecked, callers validate): size, stride and gpus_per_node are >= 1.
GroupPlacement PlaceGroup(const ProcessGroup& group, int64_t gpus_per_node);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_NETWORK_PLACEMENT_H_
