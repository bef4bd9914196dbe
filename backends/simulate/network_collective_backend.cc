#include "backends/simulate/network_collective_backend.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "network/collectives.h"
#include "network/topology.h"

namespace projector {
namespace {

using Algo = CollectiveAlgorithm;

// "dim 0 x 8, dim 1 x 4": the dimensions the group's ranks differ in, with how many distinct
// coordinates each.
std::string Placement(const Topology& topology, const std::vector<int64_t>& ranks) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < topology.spec().dimensions.size(); ++d) {
    absl::flat_hash_set<int64_t> coords;
    for (const int64_t npu : ranks) coords.insert(topology.Coordinate(npu, d));
    if (coords.size() < 2) continue;
    parts.push_back(absl::StrCat("dim ", d, " x ", coords.size()));
  }
  return parts.empty() ? "one NPU" : absl::StrJoin(parts, ", ");
}

class NetworkCollectiveBackend final : public CollectiveBackend {
 public:
  NetworkCollectiveBackend(const HardwareProfile& hw, NetworkSpec network)
      : launch_(hw.gpu.kernel_launch_overhead),
        topology_(std::move(network)),
        collectives_(topology_) {}

  absl::StatusOr<CollectiveEstimate> Estimate(const CollectiveOp& op,
                                              Algo algorithm) const override {
    absl::MutexLock lock(&mu_);
    const auto key = std::make_pair(op, algorithm);
    if (auto it = memo_.find(key); it != memo_.end()) return it->second.estimate;
    absl::StatusOr<Entry> entry = Compute(op, algorithm);
    if (!entry.ok()) return entry.status();
    return memo_.emplace(key, *std::move(entry)).first->second.estimate;
  }

  std::string_view name() const override { return "network"; }

  std::vector<CollectiveDecision> Decisions() const override {
    absl::MutexLock lock(&mu_);
    std::vector<CollectiveDecision> out;
    for (const auto& [key, entry] : memo_) {
      out.push_back({.op = key.first,
                     .algorithm = entry.estimate.algorithm,
                     .placement = entry.placement,
                     .time = entry.estimate.time});
    }
    std::sort(out.begin(), out.end(), [](const CollectiveDecision& a, const CollectiveDecision& b) {
      if (a.op.bytes != b.op.bytes) return a.op.bytes > b.op.bytes;
      return a.op.group.stride < b.op.group.stride;
    });
    return out;
  }

 private:
  struct Entry {
    CollectiveEstimate estimate;
    std::string placement;
  };

  absl::StatusOr<Entry> Compute(const CollectiveOp& op, Algo algorithm) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (op.group.size < 1 || op.group.stride < 1) {
      return absl::InvalidArgumentError("a process group needs size and stride >= 1");
    }
    if (op.group.size == 1) {
      return Entry{.estimate = {.time = Seconds(0), .bus_bandwidth = BytesPerSecond(0)},
                   .placement = "one NPU"};
    }
    std::vector<int64_t> ranks;
    for (int64_t i = 0; i < op.group.size; ++i) ranks.push_back(i * op.group.stride);
    if (ranks.back() >= topology_.npu_count()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a group of ", op.group.size, " ranks ", op.group.stride,
                       " apart reaches rank ", ranks.back(), "; the network '",
                       topology_.spec().name, "' has ", topology_.npu_count(), " NPUs"));
    }
    // On an explicit topology PXN is its two-phase exchange, and DeepEP's low-latency copies
    // a direct exchange (every rank straight to every peer over its routes).
    const Algo requested = algorithm == Algo::kPxn          ? Algo::kHierarchical
                           : algorithm == Algo::kLowLatency ? Algo::kDirect
                                                            : algorithm;
    absl::StatusOr<NetworkCollectiveEstimate> e =
        collectives_.Estimate({.kind = op.kind,
                               .bytes = op.bytes,
                               .ranks = ranks,
                               .algorithm = requested,
                               .library = CollectiveLibrary::kNccl});
    if (!e.ok()) return e.status();
    Entry entry{.estimate = {.time = e->time + launch_,
                             .algorithm = e->algorithm,
                             .bus_bandwidth = e->bus_bandwidth},
                .placement = Placement(topology_, ranks)};
    // Nodes: instances of dimension 0 (the scale-up domain) the group touches.
    const int64_t per_instance = topology_.spec().dimensions[0].npus;
    absl::flat_hash_set<int64_t> instances;
    for (const int64_t npu : ranks) instances.insert(npu / per_instance);
    entry.estimate.nodes_spanned = static_cast<int64_t>(instances.size());
    entry.estimate.ranks_per_node = op.group.size / entry.estimate.nodes_spanned;
    Seconds latency;
    for (const CollectivePhase& p : e->phases) latency += p.latency;
    entry.estimate.bound = latency * 2 > e->time ? Bound::kLatency : Bound::kNetwork;
    return entry;
  }

  const Seconds launch_;
  const Topology topology_;
  mutable absl::Mutex mu_;
  mutable NetworkCollectives collectives_ ABSL_GUARDED_BY(mu_);
  mutable absl::flat_hash_map<std::pair<CollectiveOp, Algo>, Entry> memo_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<CollectiveBackend> MakeNetworkCollectiveBackend(const HardwareProfile& hw,
                                                                const NetworkSpec& network) {
  return std::make_unique<NetworkCollectiveBackend>(hw, network);
}

}  // namespace projector
