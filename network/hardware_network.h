// A hardware profile's built-in network (a scale-up fabric inside each node, the NICs between
// nodes) written as a NetworkSpec, so the tool's own two-level cluster is one more network file
// (`project network export --gpu-arch G --num-gpus N` prints it to start a custom one from).
#ifndef PROJECTOR_NETWORK_HARDWARE_NETWORK_H_
#define PROJECTOR_NETWORK_HARDWARE_NETWORK_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "hw_profiles/hardware_profile.h"
#include "network/network_spec.h"

namespace projector {

// Dimension 0: the node's fabric, `switch` (NVSwitch: links_per_gpu links of per_link bandwidth
// to the switch) or `fully_connected` (xGMI full mesh: one link of per_link bandwidth to each
// peer), the all-reduce efficiency from the profile, and its end-to-end latency split over the
// route's links (two through a switch, one on a mesh). Dimension 1, when num_gpus spans
// nodes: a non-blocking `switch` over the nodes, one per local rank (rail-optimised), each GPU
// with its share of the node's NICs (nics x NIC rate / GPUs per node), the NICs' latency (half
// per link) and efficiency. kInvalidArgument when num_gpus is not a multiple of the GPUs per node
// (or fewer than one node's worth but not a divisor of it).
absl::StatusOr<NetworkSpec> NetworkFromHardware(const HardwareProfile& hw, int64_t num_gpus);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_HARDWARE_NETWORK_H_
