#include "backends/simulate/network_placement.h"

#include <algorithm>
#include <cstdint>

namespace projector {

GroupPlacement PlaceGroup(const ProcessGroup& group, int64_t gpus_per_node) {
  // Rank order is TP fastest, so a stride-s group finds G/s of its members inside a G-GPU node
  // (TP=8, stride 1: 8 per node; an EP group strided by TP=2: 4 per node; DP strided by TP=8:
  // one per node).
  int64_t per_node = 1;
  if (group.stride < gpus_per_node) {
    per_node = std::clamp<int64_t>(gpus_per_node / group.stride, 1, group.size);
  }
  return {.ranks_per_node = per_node,
          .nodes_spanned = (group.size + per_node - 1) / per_node};
}

}  // namespace projector
