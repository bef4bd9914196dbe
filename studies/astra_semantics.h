// ASTRA-sim's semantics for one collective (`project estimate collective --network FILE
// --semantics astra`), replayed on the event engine so that this tool gives ASTRA-sim's own
// figures where a user compares the two (issue 24 point 7). What ASTRA-sim 2.x does, from its
// sources (astra-sim/astra-sim system layer, astra-sim/astra-network-analytical backends):
//   - the system layer cuts the collective into `preferred-dataset-splits` chunks and runs
//     `active-chunks-per-dimension` of them at once per NPU; a chunk starts when one before it
//     ends on that NPU;
//   - each chunk runs its algorithm as messages between NPUs: ring (2(n-1) messages of D/n to
//     the next NPU, each after the one received), direct (D/n to every peer at once, reduce,
//     then again), halving-doubling (D/2, D/4, ... to the partner at distance 1, 2, ..., then
//     back), all-to-all direct (D/n to every peer at once) and ring (n(n-1)/2 messages of D/n
//     to the next NPU, n-1 in flight);
//   - every message passes the NPU's memory bus first (`endpoint-delay`), and a message that
//     carries reduced data waits for the reduction: one write and two reads of its size at
//     `local-mem-bw` (PacketBundle: mem_write + 2 mem_read; SimpleMemory: bytes / (GB/s as
//     B/ns)); which messages reduce follows the algorithm (ring all-reduce: its 2nd to n-th;
//     halving-doubling: its 2nd to log2(n)-th, of the sizes they release: D/4, D/8, ...; direct:
//     once per reduce-scatter);
//   - the analytical network backends read a link's GB/s as 2^30 B/s (bw_GBps_to_Bpns in the
//     releases of these figures; newer releases read 10^9: `binary_gigabytes`). Congestion
//     unaware: a message takes hops x latency + bytes / bandwidth, alone. Congestion aware: each
//     link serves one message at a time, first come first served, for bytes / bandwidth, and
//     the message reaches the next node a latency later, store and forward.
// Limits: one-dimensional networks (ring, fully connected, switch), the whole network as the
// group, the algorithms above. A link carries its `bandwidth_gbps` x `links` as ASTRA-sim reads
// it; this tool's `efficiency` field, which ASTRA-sim does not have, is not applied.
#ifndef PROJECTOR_STUDIES_ASTRA_SEMANTICS_H_
#define PROJECTOR_STUDIES_ASTRA_SEMANTICS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "network/flow_model.h"
#include "network/network_spec.h"

namespace projector {

// The system-file fields the replay reads. Defaults: ASTRA-sim's
// examples/system/native_collectives/HGX-H100-validated.json, the system of the microbenchmarks
// in shared/reference/network_reference.md.
struct AstraSystem {
  int64_t dataset_splits = 4;               // preferred-dataset-splits
  int64_t active_chunks = 2;                // active-chunks-per-dimension
  Seconds endpoint_delay = Seconds(10e-9);  // endpoint-delay (ns)
  double local_mem_bw_gbps = 3350;          // local-mem-bw (GB/s, read as B/ns)
  bool binary_gigabytes = true;             // network GB/s as 2^30 B/s
  std::string source = "ASTRA-sim HGX-H100-validated.json (built in)";
};

// An ASTRA-sim system JSON (its keys as ASTRA-sim names them). kNotFound when it cannot be read;
// kInvalidArgument naming the file and key for a value of the wrong type or range, or a key
// ASTRA-sim does not have (closest suggested).
absl::StatusOr<AstraSystem> LoadAstraSystem(const std::string& path);

struct AstraCollectiveResult {
  Seconds time;          // the last NPU's end
  int64_t messages = 0;  // sent over all NPUs and chunks
  int64_t events = 0;    // engine events
};

// `kind` of `bytes` per NPU (nccl-tests sizes, as ASTRA-sim's microbenchmarks give them) on every
// NPU of `network`. kInvalidArgument naming what is not supported (a network of more than one
// dimension, a topology other than ring, fully connected and switch, an algorithm or kind the
// replay does not have, fewer than 2 NPUs; halving-doubling on a count that is not a power of 2).
absl::StatusOr<AstraCollectiveResult> SimulateAstraCollective(const NetworkSpec& network,
                                                              CollectiveKind kind,
                                                              CollectiveAlgorithm algorithm,
                                                              Bytes bytes, Congestion congestion,
                                                              const AstraSystem& system);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_ASTRA_SEMANTICS_H_
