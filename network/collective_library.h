// What the collective library adds to the network's transfers: NCCL's (and RCCL's, which keeps
// NCCL's tuning model) protocols and their costs. A collective launches once (base latency),
// every step of its algorithm pays a per-step latency that depends on the link type it crosses,
// and its protocol carries data at a share of the links' bandwidth:
//   LL      8-byte stores of 4 data bytes and a flag: lowest latency, half the bandwidth
//   LL128   128-byte lines with 8 flag bytes: 120/128 of the bandwidth (NCCL models 0.92)
//   Simple  plain copies with a fence per chunk: the whole bandwidth, the highest latency
// The library picks the fastest protocol for the size, as NCCL's tuner does. Figures: NCCL
// src/graph/tuning.cc (NCCL 2.2x: baseLat, hwLat, the ring and tree bandwidth refinements).
#ifndef PROJECTOR_NETWORK_COLLECTIVE_LIBRARY_H_
#define PROJECTOR_NETWORK_COLLECTIVE_LIBRARY_H_

#include <span>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "network/network_spec.h"

namespace projector {

// kNone: the network's transfers alone (links and their latency), as ASTRA-sim's analytical
// backend counts; kNccl: NCCL's launch and per-step costs and protocols on top.
enum class CollectiveLibrary { kNone, kNccl };
inline constexpr std::string_view kCollectiveLibraryNames[] = {"none", "nccl"};
std::string_view CollectiveLibraryName(CollectiveLibrary library);
absl::StatusOr<CollectiveLibrary> ParseCollectiveLibrary(std::string_view name);

enum class Protocol { kLL, kLL128, kSimple };
std::string_view ProtocolName(Protocol protocol);

// Steps of a phase by the link type they cross.
struct StepCounts {
  double nvlink = 0;
  double pcie = 0;
  double network = 0;
};

struct ProtocolCost {
  Seconds base;             // once per collective
  Seconds per_nvlink_step;  // per step over each link type
  Seconds per_pcie_step;
  Seconds per_network_step;
  double bandwidth_share = 1;  // of the links' bandwidth the protocol carries data at

  Seconds StepLatency(const StepCounts& steps) const;
};

// The protocols `library` offers for `algorithm`: none offers one costless "protocol"; NCCL
// offers LL, LL128 and Simple (NVLS: Simple only). Direct, halving-doubling and the phases of a
// hierarchical collective pay NCCL's ring costs (point-to-point steps of its primitives).
std::span<const Protocol> ProtocolsFor(CollectiveLibrary library, CollectiveAlgorithm algorithm);
// `single_node`: the collective stays in one dimension-0 instance (NCCL's tree LL128 share
// differs).
ProtocolCost CostOf(CollectiveLibrary library, CollectiveAlgorithm algorithm, Protocol protocol,
                    bool single_node);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_COLLECTIVE_LIBRARY_H_
