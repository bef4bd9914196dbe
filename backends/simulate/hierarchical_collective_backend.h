// Hierarchical alpha-beta collective backend: places a process group on the node hierarchy
// (scale-up fabric inside a node, NICs between nodes) and costs ring, tree, direct,
// halving-doubling, hierarchical and PXN algorithms step by step, with measured efficiencies.
// kAuto picks the fastest valid algorithm, as NCCL/RCCL's tuner would; AllGather/ReduceScatter
// offer only what NCCL runs for them (a ring across nodes). Immutable after
// construction; estimates are memoised in a thread-safe cache.
#ifndef PROJECTOR_BACKENDS_SIMULATE_HIERARCHICAL_COLLECTIVE_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_HIERARCHICAL_COLLECTIVE_BACKEND_H_

#include <memory>

#include "backends/collective_backend.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

std::unique_ptr<CollectiveBackend> MakeHierarchicalCollectiveBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_HIERARCHICAL_COLLECTIVE_BACKEND_H_
