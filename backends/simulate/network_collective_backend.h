// Collective backend on a network file (`--network`): each process group {size, stride} is laid
// on the network's NPUs in the layout's rank order (rank r on NPU r), and its collectives are
// priced by the network model (network/collectives.h: routed step patterns, flow-level link
// sharing, the algorithm NCCL's tuner would pick, or the one asked for), plus one kernel launch
// per call from the GPU profile. A DeepEP-style all-to-all (PXN) is the hierarchical one.
// Thread-safe: the network model sits behind a lock; estimates are memoised.
#ifndef PROJECTOR_BACKENDS_SIMULATE_NETWORK_COLLECTIVE_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_NETWORK_COLLECTIVE_BACKEND_H_

#include <memory>

#include "backends/collective_backend.h"
#include "hw_profiles/hardware_profile.h"
#include "network/network_spec.h"

namespace projector {

// Precondition: `network` is valid (ValidateNetworkSpec). Calls whose group reaches beyond its
// NPUs get kInvalidArgument.
std::unique_ptr<CollectiveBackend> MakeNetworkCollectiveBackend(const HardwareProfile& hw,
                                                                const NetworkSpec& network);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_NETWORK_COLLECTIVE_BACKEND_H_
