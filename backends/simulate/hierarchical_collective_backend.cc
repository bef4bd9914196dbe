#include "backends/simulate/hierarchical_collective_backend.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/simulate/memo_cache.h"
#include "backends/simulate/network_placement.h"

namespace projector {
namespace {

using Algo = CollectiveAlgorithm;

// Cost structure. A group of n ranks lies on N nodes with r ranks each (network_placement.h).
// Every algorithm is an alpha-beta sum over its steps; a step's bytes travel either on the
// scale-up fabric or on the rank's share of the node's NICs, and the two run concurrently:
//
//   node 0: [g0]--[g1]--...--[g(r-1)]      fabric: switch = per-GPU bandwidth to any peer set;
//              |     |           |                 full mesh = one link per peer, k peers in
//   NICs:     nic0  nic1  ...  nic(r-1)             parallel use k links
//              |     |           |         NIC share per rank = nics·B_nic / gpus_per_node
//   node 1: [g0]--[g1]--...--[g(r-1)]      (siblings of other groups run in lockstep)
//
// Bandwidths carry the measured efficiencies (allreduce_efficiency for ring-type collectives and
// copies, alltoall_efficiency for A2A, on the NICs scale_out.efficiency and, for the A2A and
// send/recv, scale_out.p2p_efficiency); latencies are per step;
// one kernel launch per call.

// NVLS (NVSwitch in-network reduction, multimem ld_reduce + st): each GPU's links carry about S
// in each direction instead of the ring's 2(n-1)/n·S, so an NVLS all-reduce takes S / B_nvls
// for any n and its busbw is 2(n-1)/n·B_nvls. The profile gives the measured 8-GPU busbw, so
// B_nvls = busbw_8 / (2·7/8). Without a measurement: B_nvls = 0.6 · per-GPU bandwidth, the mean
// of measured 8-GPU NVLS busbw / (1.75 · per-GPU uni bandwidth): H100 480/787 = 0.61,
// H200 473.1/787 = 0.60, B200 838/1575 = 0.53 (reference/hardware_models.md 4.3). The switch's
// reduction rate, not the links, sets this ceiling, so it replaces allreduce_efficiency.
constexpr double kNvlsMeasuredBusFactor = 2.0 * 7.0 / 8.0;
constexpr double kInNetworkReductionEfficiency = 0.6;

// Pipelined algorithms (hierarchical, PXN) stream chunks of this size; the second phase starts
// after the first chunk (Primus PXN model: 4 MB, reference/primus.md 6.6).
constexpr double kPipelineChunkBytes = 4.0 * 1024 * 1024;

// RDMA warm-up of a multi-node AllReduce (Primus PR #644, shared/reference/primus.md 6.8): NIC
// queue pairs ramp up over the first tens of MB, which costs
//   260 µs · ceil(log2 nodes) · (1 − min(1, per-NIC bytes / 32 MiB)^2.5),
// per-NIC bytes = S / ranks per node (each rank's NIC carries its shard of the inter-node
// phase). Fitted by AMD on MI300X clusters; it also reproduces the NVIDIA B200 + EFA figure
// of hardware_models.md 4.3: 64 MiB over 4 x 8 GPUs measured 157 GB/s busbw, 149 GB/s with it
// (350 GB/s without); at >= 4 GiB it vanishes and the large-message busbw is unchanged.
constexpr double kRdmaWarmupSeconds = 260e-6;
constexpr double kRdmaWarmupBytes = 32.0 * 1024 * 1024;
constexpr double kRdmaWarmupExponent = 2.5;


constexpr Algo kAllReduceAlgos[] = {Algo::kRing, Algo::kTree, Algo::kDirect,
                                    Algo::kHalvingDoubling, Algo::kHierarchical};
// AllGather / ReduceScatter: only what NCCL implements for them. NCCL has no hierarchical
// (intra-node, then inter-node) or halving-doubling AG/RS: it runs a ring (collectives.h /
// tuning.cc list Ring, NVLS, CollNet and, from 2.23, PAT for them; tree is AllReduce-only).
// Direct stands for the single-node variants that use every scale-up port at once: NVLS
// (multimem) AG/RS on NVSwitch and RCCL's MSCCL direct all-gather on the xGMI mesh (both
// recalled, not verified from a stored source); it applies inside one node only. PAT
// (1 rank per node, log2 n steps) is not modelled, so a strided group pays the ring's n-1 steps.
constexpr Algo kGatherScatterAlgos[] = {Algo::kRing, Algo::kDirect};
// kLowLatency (DeepEP's low-latency kernels) is a kernel its caller picks, never the tuner's.
constexpr Algo kAllToAllAlgos[] = {Algo::kDirect, Algo::kHierarchical, Algo::kPxn,
                                   Algo::kLowLatency};
constexpr Algo kSendRecvAlgos[] = {Algo::kDirect};
constexpr Algo kBroadcastAlgos[] = {Algo::kRing, Algo::kTree, Algo::kDirect};

std::span<const Algo> AlgorithmsFor(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return kAllReduceAlgos;
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return kGatherScatterAlgos;
    case CollectiveKind::kAllToAll:
      return kAllToAllAlgos;
    case CollectiveKind::kSendRecv:
      return kSendRecvAlgos;
    case CollectiveKind::kBroadcast:
      return kBroadcastAlgos;
  }
  return {};
}

bool IsGatherScatter(CollectiveKind kind) {
  return kind == CollectiveKind::kAllGather || kind == CollectiveKind::kReduceScatter;
}

bool IsPowerOfTwo(int64_t x) { return x > 0 && std::has_single_bit(static_cast<uint64_t>(x)); }

double CeilLog2(int64_t x) {
  return x <= 1 ? 0.0 : static_cast<double>(std::bit_width(static_cast<uint64_t>(x - 1)));
}

double D(int64_t x) { return static_cast<double>(x); }

// Time split into its bandwidth part and its latency part (the bound is whichever dominates).
struct Cost {
  Seconds bandwidth;
  Seconds latency;
  Seconds total() const { return bandwidth + latency; }
};

// Everything one call needs, resolved once: placement and the per-rank effective bandwidths.
struct Call {
  double bytes = 0;       // S, nccl-tests convention
  int64_t n = 1;          // group size
  int64_t r = 1;          // ranks per node
  int64_t nodes = 1;      // nodes spanned
  int64_t gpus_per_node = 1;
  double up_peer = 0;     // B/s to one peer over the scale-up fabric, efficiency applied
  double up_all = 0;      // B/s to all r-1 node peers at once, efficiency applied
  double out = 0;         // B/s of scale-out one rank gets, efficiency applied
  double alpha_up = 0;    // s per scale-up step
  double alpha_out = 0;   // s per scale-out step
  double launch = 0;      // s, one kernel launch per collective
  bool in_network_reduction = false;
  double nvls_bw = 0;     // B/s per GPU for NVLS reductions
  double inter_peer = 0;  // s per inter-node peer of a direct exchange
  // AllToAll: the share of S a rank sends across the node boundary; < 0 = (N-1)/N (every row
  // to its share of peers). A dispatcher that sends a row once per destination node sets it
  // from the routing (ExpectedRemoteNodesPerRow / top_k).
  double network_share = -1;
  // AllToAll under PXN: the share of S the scale-up fabric carries: 1 (every routed copy), or
  // for a dispatcher that sends a row once per destination rank ExpectedDistinctRanks / top_k.
  double scale_up_share = 1.0;
  // B/s of scale-out DeepEP's kernels reach: the normal ones (an AllToAll under PXN with the
  // routing; scale_out.deepep_efficiency) and the low-latency ones.
  double out_deepep = 0;
  double out_deepep_low_latency = 0;
};

// The RDMA warm-up penalty of a multi-node AllReduce (kRdmaWarmupSeconds).
double RdmaWarmup(const Call& c) {
  if (c.nodes <= 1) return 0.0;
  const double ratio = std::min(1.0, c.bytes / D(c.r) / kRdmaWarmupBytes);
  return kRdmaWarmupSeconds * CeilLog2(c.nodes) * (1.0 - std::pow(ratio, kRdmaWarmupExponent));
}

// C(a, k) / C(b, k) for a <= b: the chance that k draws without replacement from b items all
// miss the b - a marked ones (0 when a < k).
double AllMiss(double a, double b, int64_t k) {
  double p = 1.0;
  for (int64_t i = 0; i < k; ++i) {
    const double num = a - static_cast<double>(i);
    if (num <= 0) return 0.0;
    p *= num / (b - static_cast<double>(i));
  }
  return p;
}

// C(n, j) as a double (small n: group counts).
double Choose(int64_t n, int64_t j) {
  if (j < 0 || j > n) return 0.0;
  double c = 1.0;
  for (int64_t i = 1; i <= j; ++i) c = c * static_cast<double>(n - j + i) / static_cast<double>(i);
  return c;
}

// Data time over the scale-up fabric; 0 when nothing moves (avoids 0/0 when r == 1).
double UpTime(double b, double bw) { return b > 0 ? b / bw : 0.0; }

Cost Make(double bw_s, double lat_s, const Call& c) {
  return {Seconds(bw_s), Seconds(lat_s + c.launch)};
}

// Step pace of a ring/chain: NCCL/RCCL run several channels, each a ring over its own links,
// so a rank's in-node hops together use every scale-up port it has towards its node peers
// (up_all: the whole NVSwitch port, or all r-1 xGMI links of a full mesh — the 312.9 GB/s
// RCCL ring all-reduce busbw of 8 MI300X is 70% of all 7 links, hardware_models.md 4.3);
// across nodes each channel crosses the node boundary on a different NIC, so the boundary
// hop gets r·out.
double RingHopBandwidth(const Call& c) {
  return c.nodes > 1 ? std::min(c.up_all, D(c.r) * c.out) : c.up_all;
}
double RingHopLatency(const Call& c) { return c.nodes > 1 ? c.alpha_out : c.alpha_up; }

// ---- AllReduce -------------------------------------------------------------------------------

// Ring: 2(n-1) steps of S/n each (reduce-scatter then all-gather), so every rank moves
// 2(n-1)/n·S; each step costs one hop's latency.
Cost RingAllReduce(const Call& c) {
  double steps = 2.0 * D(c.n - 1);
  return Make(steps * (c.bytes / D(c.n)) / RingHopBandwidth(c), steps * RingHopLatency(c), c);
}

// Double binary tree (NCCL): half of the data per tree; a rank sends S up (reduce) and S down
// (broadcast), pipelined; 2·log2 depth in latency (inter-node tree over nodes, chain inside).
Cost TreeAllReduce(const Call& c) {
  double lat = 2.0 * (CeilLog2(c.nodes) * c.alpha_out + CeilLog2(c.r) * c.alpha_up);
  return Make(2.0 * c.bytes / RingHopBandwidth(c), lat, c);
}

// Direct (single-shot reduce-scatter + all-gather, Primus "single-shot AR"): in each phase a
// rank exchanges S/n with every peer at once, r-1 over the fabric (a full mesh uses its r-1
// links in parallel) and n-r over its NIC share. With NVLS the switch reduces: ~S per link each
// way at the NVLS rate.
Cost DirectAllReduce(const Call& c) {
  double shard = c.bytes / D(c.n);
  double intra = UpTime(D(c.r - 1) * shard, c.up_all);
  double inter = c.nodes > 1 ? D(c.n - c.r) * shard / c.out : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) +
               (c.nodes > 1 ? c.alpha_out + D(c.n - c.r) * c.inter_peer : 0.0);
  Cost direct = Make(2.0 * std::max(intra, inter), 2.0 * lat, c);
  if (c.in_network_reduction && c.nodes == 1) {
    Cost nvls = Make(c.bytes / c.nvls_bw, 2.0 * c.alpha_up, c);
    if (nvls.total() < direct.total()) return nvls;
  }
  return direct;
}

// Recursive halving (RS) + doubling (AG), log2 n steps each. Partners are ordered so the large
// steps stay inside the node: intra steps move (1 - 1/r)·S to one peer at a time, inter steps
// (1 - 1/N)·S/r over the NIC. Needs power-of-two n and r.
Cost HalvingDoublingAllReduce(const Call& c) {
  double intra = UpTime(c.bytes * (1.0 - 1.0 / D(c.r)), c.up_peer);
  double inter = c.nodes > 1 ? c.bytes / D(c.r) * (1.0 - 1.0 / D(c.nodes)) / c.out : 0.0;
  double lat = 2.0 * (CeilLog2(c.r) * c.alpha_up + CeilLog2(c.nodes) * c.alpha_out);
  return Make(2.0 * (intra + inter), lat, c);
}

// Two pipelined phases: max(a, b) plus the fill of one chunk of the shorter one.
double Pipelined(double a, double b, double bytes) {
  double chunks = std::max(1.0, std::ceil(bytes / kPipelineChunkBytes));
  return std::max(a, b) + std::min(a, b) / chunks;
}

// Hierarchical (PR #644 style, matched the B200 multi-node data in hardware_models.md 4.3):
// intra-node reduce-scatter ((r-1)/r·S on all fabric links), inter-node ring all-reduce of the
// S/r shard among the N nodes on each rank's own NIC (2(N-1)/N·S/r), intra-node all-gather;
// the phases are pipelined over chunks.
Cost HierarchicalAllReduce(const Call& c) {
  double intra = 2.0 * UpTime(c.bytes * D(c.r - 1) / D(c.r), c.up_all);
  double inter =
      c.nodes > 1 ? 2.0 * D(c.nodes - 1) / D(c.nodes) * (c.bytes / D(c.r)) / c.out : 0.0;
  double lat = (c.r > 1 ? 2.0 * c.alpha_up : 0.0) + 2.0 * D(c.nodes - 1) * c.alpha_out;
  return Make(Pipelined(intra, inter, c.bytes), lat, c);
}

// ---- AllGather / ReduceScatter (S = gathered output / full input) ---------------------------

// Ring (NCCL's only multi-node AG/RS): n-1 steps of S/n, so every rank moves (n-1)/n·S at the
// ring's hop pace, and every step pays one hop latency, as in RingAllReduce. Across nodes each
// channel's boundary hop has its own NIC (RingHopBandwidth), so the NIC-side volume per rank is
// the hierarchical one, (N-1)/N·S/r; what the ring cannot avoid is the n-1 dependent steps:
//   t = (n-1)/n·S / min(B_up, r·B_out) + (n-1)·α_hop + launch,  α_hop = α_out if N > 1 else α_up.
Cost RingGather(const Call& c) {
  double steps = D(c.n - 1);
  return Make(steps * (c.bytes / D(c.n)) / RingHopBandwidth(c), steps * RingHopLatency(c), c);
}

// Direct (one node only, see kGatherScatterAlgos): S/n to/from every node peer at once.
Cost DirectGather(const Call& c) {
  double shard = c.bytes / D(c.n);
  double intra = UpTime(D(c.r - 1) * shard, c.up_all);
  double inter = c.nodes > 1 ? D(c.n - c.r) * shard / c.out : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) +
               (c.nodes > 1 ? c.alpha_out + D(c.n - c.r) * c.inter_peer : 0.0);
  return Make(std::max(intra, inter), lat, c);
}

// ---- Broadcast -------------------------------------------------------------------------------

// Pipelined chain: every rank forwards S once; fill of n-1 hops of one chunk.
Cost RingBroadcast(const Call& c) {
  double hop = RingHopBandwidth(c);
  double fill = D(c.n - 1) * std::min(c.bytes, kPipelineChunkBytes) / hop;
  return Make(c.bytes / hop + fill, D(c.n - 1) * RingHopLatency(c), c);
}

// Double binary tree: an interior rank sends S/2 to two children in each tree = S.
Cost TreeBroadcast(const Call& c) {
  double lat = CeilLog2(c.nodes) * c.alpha_out + CeilLog2(c.r) * c.alpha_up;
  return Make(c.bytes / RingHopBandwidth(c), lat, c);
}

// Root writes S to every peer: r-1 over its fabric links, n-r over its NIC share.
Cost DirectBroadcast(const Call& c) {
  double intra = UpTime(D(c.r - 1) * c.bytes, c.up_all);
  double inter = c.nodes > 1 ? D(c.n - c.r) * c.bytes / c.out : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) +
               (c.nodes > 1 ? c.alpha_out + D(c.n - c.r) * c.inter_peer : 0.0);
  return Make(std::max(intra, inter), lat, c);
}

// ---- AllToAll (S = bytes a rank sends, own share included; S/n per peer) --------------------

// Per-peer cost of an A2A that does not overlap with data, added after the data phases as in
// Primus 6.5: 28 us·min(peers, G-1) + 0.45 us·max(0, peers-(G-1)). The intra-node figure is a fit
// of RCCL's per-peer handling on an EP=8 node (seed 001: 27.4-28.1 us/peer), which does not get
// cheaper when a peer sits on another node, so Primus charges it for the first G-1 peers wherever
// they are and the RDMA per-message cost beyond (so an A2A never gets cheaper by leaving the node).
double PeerOverhead(const Call& c, double intra_peer_s, int64_t peers) {
  const int64_t first = std::min(peers, c.gpus_per_node - 1);
  return D(first) * intra_peer_s + D(peers - first) * c.inter_peer;
}

// Direct / single-shot: S/n to each of r-1 node peers (all fabric links at once) and n-r remote
// peers (NIC share), concurrently.
Cost DirectAllToAll(const Call& c, double intra_peer_s) {
  double shard = c.bytes / D(c.n);
  double intra = UpTime(D(c.r - 1) * shard, c.up_all);
  double inter = c.nodes > 1 ? D(c.n - c.r) * shard / c.out : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) + (c.nodes > 1 ? c.alpha_out : 0.0) +
               PeerOverhead(c, intra_peer_s, c.n - 1);
  return Make(std::max(intra, inter), lat, c);
}

// Two-phase: intra-node A2A gathers, on local rank j, everything bound for local rank j of every
// node ((r-1)/r·S over the fabric), then an inter-node A2A among the N same-rail ranks
// ((N-1)/N·S on the NIC, N-1 peers). Phase 2 needs phase 1's data: sequential.
Cost HierarchicalAllToAll(const Call& c, double intra_peer_s) {
  double intra = UpTime(c.bytes * D(c.r - 1) / D(c.r), c.up_all);
  double inter = c.nodes > 1 ? c.bytes * D(c.nodes - 1) / D(c.nodes) / c.out : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) + (c.nodes > 1 ? c.alpha_out : 0.0) +
               PeerOverhead(c, intra_peer_s, (c.r - 1) + (c.nodes - 1));
  return Make(intra + inter, lat, c);
}

// PXN (NCCL PXN / DeepEP): the same volumes as two-phase (with the routing, a row once per
// destination node over the NICs and once per destination rank over the scale-up fabric), but
// the NIC hop streams while the scale-up aggregation is still running; it starts after one 4 MB
// chunk has been aggregated (Primus PXN model, reference/primus.md 6.6). With the routing these are
// DeepEP's normal kernels, whose NIC hop runs at their own measured rate (Call::out_deepep).
Cost PxnAllToAll(const Call& c, double intra_peer_s) {
  double intra = UpTime(c.bytes * c.scale_up_share * D(c.r - 1) / D(c.r), c.up_all);
  double out_bytes = c.bytes * (c.network_share >= 0 ? c.network_share
                                                     : D(c.nodes - 1) / D(c.nodes));
  double inter = c.nodes > 1 ? out_bytes / (c.network_share >= 0 ? c.out_deepep : c.out) : 0.0;
  double delay = c.nodes > 1 ? UpTime(std::min(out_bytes, kPipelineChunkBytes), c.up_all) : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) + (c.nodes > 1 ? c.alpha_out : 0.0) +
               PeerOverhead(c, intra_peer_s, (c.r - 1) + (c.nodes - 1));
  return Make(std::max(intra, inter + delay), lat, c);
}

// DeepEP's low-latency kernels (deepseek-ai/DeepEP README, "Low-latency kernels with pure
// RDMA"; csrc/kernels/internode_ll.cu): a warp per routed copy puts it straight into its
// expert's slot on the destination rank, by NVLink where the peer is in the node (since DeepEP
// PR #173) and by a GPU-initiated RDMA write (IBGDA) otherwise. Nothing is aggregated or sent
// once per rank: the S/n of each peer crosses the fabric or the rank's own NIC, both at once,
// and there is no proxy or per-peer handshake, only each path's latency. Checked against the
// README's H800 table (128 tokens of 7,168 top-8, fp8 dispatch, bf16 combine, 16 to 256 ranks
// over 400G CX7): within 15% (tests/backends/collective_backend_test.cc).
Cost LowLatencyAllToAll(const Call& c) {
  double shard = c.bytes / D(c.n);
  double intra = UpTime(D(c.r - 1) * shard, c.up_all);
  double inter = c.nodes > 1 ? D(c.n - c.r) * shard / c.out_deepep_low_latency : 0.0;
  double lat = (c.r > 1 ? c.alpha_up : 0.0) + (c.nodes > 1 ? c.alpha_out : 0.0);
  return Make(std::max(intra, inter), lat, c);
}

// ---- SendRecv --------------------------------------------------------------------------------

// One message between two ranks: one fabric peer (a full mesh: one link) or the NIC share.
Cost SendRecv(const Call& c) {
  if (c.nodes > 1) return Make(c.bytes / c.out, c.alpha_out, c);
  return Make(c.bytes / c.up_peer, c.alpha_up, c);
}

// nccl-tests busbw factor.
double BusFactor(CollectiveKind kind, int64_t n) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return 2.0 * D(n - 1) / D(n);
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return D(n - 1) / D(n);
    case CollectiveKind::kSendRecv:
    case CollectiveKind::kBroadcast:
      return 1.0;
  }
  return 1.0;
}

std::string JoinNames(std::span<const Algo> algos) {
  std::string out = "auto";
  for (Algo a : algos) {
    out += ", ";
    out += CollectiveAlgorithmName(a);
  }
  return out;
}

class HierarchicalCollectiveBackend final : public CollectiveBackend {
 public:
  explicit HierarchicalCollectiveBackend(const HardwareProfile& hw);

  absl::StatusOr<CollectiveEstimate> Estimate(const CollectiveOp& op,
                                              CollectiveAlgorithm algorithm) const override;
  std::string_view name() const override { return "hierarchical"; }

 private:
  using Key = std::pair<CollectiveOp, CollectiveAlgorithm>;

  absl::StatusOr<CollectiveEstimate> Compute(const CollectiveOp& op,
                                             CollectiveAlgorithm algorithm) const;
  // Not every algorithm applies to every call: halving-doubling needs powers of two; a direct
  // AG/RS stays inside one node.
  static bool Applies(CollectiveKind kind, Algo algo, const Call& c);
  Cost Evaluate(CollectiveKind kind, Algo algo, const Call& c) const;

  const int64_t gpus_per_node_;
  const bool in_network_reduction_;
  // Raw (efficiency-free) figures, SI.
  const bool full_mesh_;
  const double per_gpu_bw_;
  const double per_link_bw_;
  const int64_t links_per_gpu_;
  const double nic_share_bw_;  // node NIC capacity / gpus_per_node
  const double allreduce_eff_;
  const double alltoall_eff_;
  const double out_eff_;
  const double p2p_out_eff_;
  const double deepep_out_eff_;
  const double deepep_low_latency_out_eff_;
  const double alpha_up_;
  const double alpha_out_;
  const double launch_;
  const double a2a_peer_overhead_;
  const double inter_peer_overhead_;
  const double nvls_bw_;
  // Non-empty when the profile cannot carry intra-node / inter-node traffic.
  std::string fabric_error_;
  std::string network_error_;

  MemoCache<Key, CollectiveEstimate> cache_;
};

HierarchicalCollectiveBackend::HierarchicalCollectiveBackend(const HardwareProfile& hw)
    : gpus_per_node_(std::max<int64_t>(1, hw.gpus_per_node)),
      in_network_reduction_(hw.scale_up.supports_in_network_reduction &&
                            hw.scale_up.topology == FabricTopology::kSwitch),
      full_mesh_(hw.scale_up.topology == FabricTopology::kFullMesh),
      per_gpu_bw_(hw.scale_up.per_gpu_bandwidth.value()),
      per_link_bw_(hw.scale_up.per_link_bandwidth.value()),
      links_per_gpu_(hw.scale_up.links_per_gpu),
      // Every GPU of a node runs its own group's collective at the same time (the sibling
      // TP/CP ranks run the same DP/EP/PP collective in lockstep), so a rank gets its node's
      // NIC capacity divided by the GPUs of the node: one rail NIC per GPU on DGX/MI300X
      // nodes, half a NIC where 4 NICs serve 8 GPUs.
      nic_share_bw_(D(hw.scale_out.nics_per_node) * hw.scale_out.per_nic_bandwidth.value() /
                    D(std::max<int64_t>(1, hw.gpus_per_node))),
      allreduce_eff_(hw.scale_up.allreduce_efficiency),
      alltoall_eff_(hw.scale_up.alltoall_efficiency),
      out_eff_(hw.scale_out.efficiency),
      p2p_out_eff_(hw.scale_out.PointToPointEfficiency()),
      deepep_out_eff_(hw.scale_out.DeepEpEfficiency()),
      deepep_low_latency_out_eff_(hw.scale_out.DeepEpLowLatencyEfficiency()),
      alpha_up_(hw.scale_up.latency.value()),
      alpha_out_(hw.scale_out.latency.value()),
      launch_(hw.gpu.kernel_launch_overhead.value()),
      a2a_peer_overhead_(hw.scale_up.alltoall_per_peer_overhead.value()),
      // One RDMA message setup per remote peer of a direct exchange (Primus a2a_peer_lat).
      inter_peer_overhead_(hw.scale_out.alltoall_per_peer_overhead.value()),
      nvls_bw_(hw.scale_up.in_network_allreduce_busbw.value() > 0
                   ? hw.scale_up.in_network_allreduce_busbw.value() / kNvlsMeasuredBusFactor
                   : hw.scale_up.per_gpu_bandwidth.value() * kInNetworkReductionEfficiency) {
  const std::string origin = absl::StrCat("hardware profile '", hw.name, "'");
  if (full_mesh_ && (per_link_bw_ <= 0 || links_per_gpu_ <= 0)) {
    fabric_error_ = absl::StrCat(origin, ": /scale_up: a full mesh needs per_link_bandwidth > 0 "
                                         "and links_per_gpu > 0");
  } else if (!full_mesh_ && per_gpu_bw_ <= 0) {
    fabric_error_ = absl::StrCat(origin, ": /scale_up/per_gpu_bandwidth must be > 0");
  } else if (!(allreduce_eff_ > 0) || !(alltoall_eff_ > 0)) {
    fabric_error_ = absl::StrCat(origin, ": /scale_up: efficiencies must be > 0");
  }
  if (!(nic_share_bw_ > 0) || !(out_eff_ > 0)) {
    network_error_ = absl::StrCat(origin,
                                  ": /scale_out: nics_per_node, per_nic_bandwidth and "
                                  "efficiency must be > 0 for a group that spans nodes");
  }
}

bool HierarchicalCollectiveBackend::Applies(CollectiveKind kind, Algo algo, const Call& c) {
  if (algo == Algo::kHalvingDoubling) return IsPowerOfTwo(c.n) && IsPowerOfTwo(c.r);
  if (algo == Algo::kDirect && IsGatherScatter(kind)) return c.nodes == 1;
  return true;
}

Cost HierarchicalCollectiveBackend::Evaluate(CollectiveKind kind, Algo algo,
                                             const Call& c) const {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      switch (algo) {
        case Algo::kRing:
          return RingAllReduce(c);
        case Algo::kTree:
          return TreeAllReduce(c);
        case Algo::kDirect:
          return DirectAllReduce(c);
        case Algo::kHalvingDoubling:
          return HalvingDoublingAllReduce(c);
        default:
          return HierarchicalAllReduce(c);
      }
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      switch (algo) {
        case Algo::kDirect:
          return DirectGather(c);
        default:
          return RingGather(c);
      }
    case CollectiveKind::kAllToAll:
      switch (algo) {
        case Algo::kDirect:
          return DirectAllToAll(c, a2a_peer_overhead_);
        case Algo::kHierarchical:
          return HierarchicalAllToAll(c, a2a_peer_overhead_);
        case Algo::kLowLatency:
          return LowLatencyAllToAll(c);
        default:
          return PxnAllToAll(c, a2a_peer_overhead_);
      }
    case CollectiveKind::kSendRecv:
      return SendRecv(c);
    case CollectiveKind::kBroadcast:
      switch (algo) {
        case Algo::kRing:
          return RingBroadcast(c);
        case Algo::kTree:
          return TreeBroadcast(c);
        default:
          return DirectBroadcast(c);
      }
  }
  return {};
}

absl::StatusOr<CollectiveEstimate> HierarchicalCollectiveBackend::Estimate(
    const CollectiveOp& op, CollectiveAlgorithm algorithm) const {
  const Key key{op, algorithm};
  if (std::optional<CollectiveEstimate> hit = cache_.Find(key)) return *hit;
  absl::StatusOr<CollectiveEstimate> result = Compute(op, algorithm);
  if (!result.ok()) return result;
  cache_.Insert(key, *result);
  return result;
}

absl::StatusOr<CollectiveEstimate> HierarchicalCollectiveBackend::Compute(
    const CollectiveOp& op, CollectiveAlgorithm algorithm) const {
  const std::string_view kind_name = CollectiveKindName(op.kind);
  const std::span<const Algo> algos = AlgorithmsFor(op.kind);
  if (op.group.size < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: group size must be >= 1, got %d", kind_name, op.group.size));
  }
  if (op.group.stride < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: group stride must be >= 1, got %d", kind_name, op.group.stride));
  }
  if (!(op.bytes.value() >= 0) || std::isinf(op.bytes.value())) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: bytes must be finite and >= 0, got %g", kind_name, op.bytes.value()));
  }
  if (op.kind == CollectiveKind::kSendRecv && op.group.size != 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sendrecv: group size must be 2 (stride = distance between the ranks), got %d",
        op.group.size));
  }
  if (algorithm != Algo::kAuto && std::find(algos.begin(), algos.end(), algorithm) == algos.end()) {
    return absl::UnimplementedError(
        absl::StrFormat("collective algorithm '%s' does not apply to %s; valid: %s",
                        CollectiveAlgorithmName(algorithm), kind_name, JoinNames(algos)));
  }

  const GroupPlacement place = PlaceGroup(op.group, gpus_per_node_);
  CollectiveEstimate est;
  est.nodes_spanned = place.nodes_spanned;
  est.ranks_per_node = place.ranks_per_node;
  est.algorithm = algorithm == Algo::kAuto ? algos.front() : algorithm;
  if (op.group.size == 1 || op.bytes.value() == 0) {
    est.bound = Bound::kLatency;
    return est;
  }
  if (place.ranks_per_node > 1 && !fabric_error_.empty()) {
    return absl::FailedPreconditionError(fabric_error_);
  }
  if (place.nodes_spanned > 1 && !network_error_.empty()) {
    return absl::FailedPreconditionError(network_error_);
  }

  Call c;
  c.bytes = op.bytes.value();
  c.n = op.group.size;
  c.r = place.ranks_per_node;
  c.nodes = place.nodes_spanned;
  c.gpus_per_node = gpus_per_node_;
  // AllToAll carries its own measured fabric efficiency, the ring-type collectives and copies
  // the all-reduce busbw fraction; on the NICs the AllToAll and send/recv (NCCL's point-to-point
  // traffic) take theirs, the ring-type collectives the NICs' own.
  const bool all_to_all = op.kind == CollectiveKind::kAllToAll;
  const bool point_to_point = all_to_all || op.kind == CollectiveKind::kSendRecv;
  const double up_eff = all_to_all ? alltoall_eff_ : allreduce_eff_;
  if (full_mesh_) {
    // Full mesh: one link to one peer; k peers at once use min(k, links) links.
    c.up_peer = per_link_bw_ * up_eff;
    c.up_all = D(std::clamp<int64_t>(c.r - 1, 1, links_per_gpu_)) * per_link_bw_ * up_eff;
  } else {
    // Switch: a GPU reaches any peer set at its full per-GPU bandwidth.
    c.up_peer = per_gpu_bw_ * up_eff;
    c.up_all = c.up_peer;
  }
  c.out = nic_share_bw_ * (point_to_point ? p2p_out_eff_ : out_eff_);
  c.out_deepep = nic_share_bw_ * deepep_out_eff_;
  c.out_deepep_low_latency = nic_share_bw_ * deepep_low_latency_out_eff_;
  c.alpha_up = alpha_up_;
  c.alpha_out = alpha_out_;
  c.launch = launch_;
  c.in_network_reduction = in_network_reduction_;
  c.nvls_bw = nvls_bw_;
  c.inter_peer = inter_peer_overhead_;
  if (all_to_all && op.routing.top_k > 0 && c.nodes > 1) {
    c.network_share = ExpectedRemoteNodesPerRow(op.routing, c.nodes) /
                      static_cast<double>(op.routing.top_k);
  }
  if (all_to_all && op.routing.top_k > 0 && c.n > 1) {
    c.scale_up_share = std::min(1.0, ExpectedDistinctRanks(op.routing, c.n) /
                                         static_cast<double>(op.routing.top_k));
  }

  Cost best;
  if (algorithm == Algo::kAuto) {
    // The tuner's choice: the fastest applicable algorithm; ties keep the earlier (simpler) one.
    double best_s = std::numeric_limits<double>::infinity();
    for (Algo a : algos) {
      if (a == Algo::kLowLatency || !Applies(op.kind, a, c)) continue;
      Cost cost = Evaluate(op.kind, a, c);
      if (cost.total().value() < best_s * (1.0 - 1e-9)) {
        best_s = cost.total().value();
        best = cost;
        est.algorithm = a;
      }
    }
  } else {
    if (!Applies(op.kind, algorithm, c)) {
      std::string valid = "auto";
      for (Algo a : algos) {
        if (!Applies(op.kind, a, c)) continue;
        valid += ", ";
        valid += CollectiveAlgorithmName(a);
      }
      if (algorithm == Algo::kDirect) {
        return absl::UnimplementedError(absl::StrFormat(
            "%s: direct runs inside one node only (NCCL has a ring across nodes), got %d nodes; "
            "valid here: %s",
            kind_name, c.nodes, valid));
      }
      return absl::UnimplementedError(absl::StrFormat(
          "%s: halving-doubling needs a power-of-two group and ranks per node, got %d ranks "
          "(%d per node); valid here: %s",
          kind_name, c.n, c.r, valid));
    }
    best = Evaluate(op.kind, algorithm, c);
  }
  if (op.kind == CollectiveKind::kAllReduce) best.latency += Seconds(RdmaWarmup(c));
  est.time = best.total();
  est.bound = best.latency > best.bandwidth ? Bound::kLatency : Bound::kNetwork;
  est.bus_bandwidth = BytesPerSecond(c.bytes / est.time.value() * BusFactor(op.kind, c.n));
  return est;
}

}  // namespace

std::unique_ptr<CollectiveBackend> MakeHierarchicalCollectiveBackend(const HardwareProfile& hw) {
  return std::make_unique<HierarchicalCollectiveBackend>(hw);
}

double ExpectedDistinctRanks(const A2aRouting& routing, int64_t ranks) {
  if (ranks <= 1) return 1.0;
  return ExpectedRemoteNodesPerRow(routing, ranks) * static_cast<double>(ranks) /
         static_cast<double>(ranks - 1);
}

double ExpectedRemoteNodesPerRow(const A2aRouting& routing, int64_t nodes) {
  if (nodes <= 1 || routing.top_k <= 0 || routing.experts <= 0) return 0.0;
  const double e = static_cast<double>(routing.experts);
  const double n = static_cast<double>(nodes);
  const int64_t k = routing.top_k;
  const int64_t groups = routing.groups;
  const int64_t t = routing.topk_groups;
  double p_hit = 0.0;
  if (groups <= 0 || t >= groups) {
    p_hit = 1.0 - AllMiss(e - e / n, e, k);
  } else if (groups >= nodes) {
    const int64_t g = groups / nodes;  // groups per node
    const int64_t m = std::min(k, t);  // chosen groups that receive an expert
    for (int64_t j = 1; j <= std::min(g, t); ++j) {
      const double pj = Choose(g, j) * Choose(groups - g, t - j) / Choose(groups, t);
      p_hit += pj * (1.0 - Choose(t - j, m) / Choose(t, m));
    }
  } else {
    const double per_group = e / static_cast<double>(groups);
    const int64_t k_group = std::max<int64_t>(
        1, static_cast<int64_t>(std::llround(static_cast<double>(k) / static_cast<double>(t))));
    p_hit = static_cast<double>(t) / static_cast<double>(groups) *
            (1.0 - AllMiss(per_group - e / n, per_group, k_group));
  }
  return (n - 1.0) * p_hit;
}

}  // namespace projector
