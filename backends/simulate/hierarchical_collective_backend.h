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

// Expected number of nodes other than its own that one routed row reaches, when the group's
// experts are spread evenly over `nodes` nodes (E/N each, contiguous expert blocks). Without a
// group limit the k = top_k experts are a uniform draw; with one, the row's T = topk_groups
// groups (of G) are a uniform draw and, as groups are ranked by their best experts (DeepSeek-V2
// §2.2.1 device-limited routing, V3 §2.1.2 node-limited routing), its k experts fall
// min(k, T) to a distinct chosen group each and otherwise uniformly inside them. By symmetry
// the row's own node is hit like any other: the answer is (N - 1)·P(a given node is hit).
//   no group limit:  P(hit) = 1 - C(E - E/N, k) / C(E, k)
//   G >= N:          a node holds g = G/N groups (rounded down), j of them chosen with the
//                    hypergeometric P(j) = C(g, j)·C(G - g, T - j) / C(G, T); it is hit when one
//                    of those j gets an expert:
//                    P(hit) = sum_j P(j)·(1 - C(T - j, m) / C(T, m)), m = min(k, T)
//   G < N:           a chosen group spans N/G nodes and gets k_g = max(1, round(k/T)) experts:
//                    P(hit) = T/G·(1 - C(E/G - E/N, k_g) / C(E/G, k_g))
// DeepSeek-V3 (E 256, k 8, G 8, T 4) over 8 nodes: 7·(1 - C(7,4)/C(8,4)) = 3.5 remote nodes,
// against 7 of the 8 copies crossing without per-node deduplication.
double ExpectedRemoteNodesPerRow(const A2aRouting& routing, int64_t nodes);

// The ranks of `ranks` (experts spread evenly over them) one routed row reaches, its own
// included: each is hit with the probability a node is above, ranks taken as nodes; 1 for one
// rank. DeepEP sends a row once to each (its intranode dispatch: a token-by-rank mask, the
// rank's experts' copies made on arrival; the combine returns one partial sum per rank), so
// the scale-up fabric carries this many copies of a row, not top_k.
double ExpectedDistinctRanks(const A2aRouting& routing, int64_t ranks);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_HIERARCHICAL_COLLECTIVE_BACKEND_H_
