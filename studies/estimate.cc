#include "studies/estimate.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "network/topology.h"

namespace projector {
namespace {

EstimateContext ContextOf(const HardwareProfile& hw, std::string_view backend) {
  return {.gpu = hw.name,
          .clock_mhz = ToMegahertz(hw.gpu.sustained_clock),
          .gpus_per_node = hw.gpus_per_node,
          .backend = std::string(backend)};
}

}  // namespace

absl::StatusOr<GemmOpEstimate> EstimateGemmOp(const HardwareProfile& hw, const GemmBackend& backend,
                                              const GemmShape& shape) {
  PROJECTOR_ASSIGN_OR_RETURN(GemmEstimate e, backend.Estimate(shape));
  return GemmOpEstimate{.context = ContextOf(hw, backend.name()),
                        .shape = shape,
                        .estimate = e,
                        .tflops = ToTeraFlopsPerSecond(GemmFlops(shape) / e.time)};
}

absl::StatusOr<AttentionOpEstimate> EstimateAttentionOp(const HardwareProfile& hw,
                                                        const AttentionBackend& backend,
                                                        const AttentionShape& shape,
                                                        AttentionPass pass) {
  PROJECTOR_ASSIGN_OR_RETURN(AttentionEstimate e, backend.Estimate(shape, pass));
  return AttentionOpEstimate{.context = ContextOf(hw, backend.name()),
                             .shape = shape,
                             .pass = pass,
                             .estimate = e,
                             .tflops = ToTeraFlopsPerSecond(AttentionFlops(shape, pass) / e.time)};
}

absl::StatusOr<CollectiveOpEstimate> EstimateCollectiveOp(const HardwareProfile& hw,
                                                          const CollectiveBackend& backend,
                                                          const CollectiveOp& op,
                                                          CollectiveAlgorithm algorithm) {
  PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate e, backend.Estimate(op, algorithm));
  return CollectiveOpEstimate{.context = ContextOf(hw, backend.name()), .op = op, .estimate = e};
}

namespace {

// NPUs first, first + stride, ...; kInvalidArgument when the group leaves the network.
absl::StatusOr<std::vector<int64_t>> GroupRanks(const ProcessGroup& group, int64_t first,
                                                const Topology& topology) {
  const int64_t last = first + (group.size - 1) * group.stride;
  if (first < 0 || last >= topology.npu_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a group of ", group.size, " ranks ", group.stride, " apart from NPU ", first,
        " reaches NPU ", last, "; the network '", topology.spec().name, "' has NPUs 0 to ",
        topology.npu_count() - 1));
  }
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < group.size; ++i) ranks.push_back(first + i * group.stride);
  return ranks;
}

}  // namespace

absl::StatusOr<ConcurrentCollectivesEstimate> EstimateConcurrentCollectives(
    const NetworkSpec& network, std::span<const ConcurrentCollective> collectives,
    Congestion congestion, CollectiveLibrary library) {
  const Topology topology(network);
  std::vector<NetworkCollectiveRequest> requests;
  for (const ConcurrentCollective& c : collectives) {
    PROJECTOR_ASSIGN_OR_RETURN(std::vector<int64_t> ranks,
                               GroupRanks(c.op.group, c.first, topology));
    requests.push_back({.kind = c.op.kind,
                        .bytes = c.op.bytes,
                        .ranks = std::move(ranks),
                        .algorithm = c.algorithm,
                        .congestion = congestion,
                        .library = library});
  }
  NetworkCollectives model(topology);
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<ConcurrentEstimate> results,
                             model.EstimateConcurrent(requests, congestion));
  return ConcurrentCollectivesEstimate{
      .network = network.name,
      .congestion = congestion,
      .library = library,
      .collectives = std::vector<ConcurrentCollective>(collectives.begin(), collectives.end()),
      .results = std::move(results)};
}

absl::StatusOr<NetworkCollectiveOpEstimate> EstimateNetworkCollectiveOp(
    const NetworkSpec& network, const CollectiveOp& op, CollectiveAlgorithm algorithm,
    Congestion congestion, int64_t chunks, CollectiveLibrary library) {
  const Topology topology(network);
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<int64_t> ranks, GroupRanks(op.group, 0, topology));
  NetworkCollectives collectives(topology);
  PROJECTOR_ASSIGN_OR_RETURN(NetworkCollectiveEstimate e,
                             collectives.Estimate({.kind = op.kind,
                                                   .bytes = op.bytes,
                                                   .ranks = std::move(ranks),
                                                   .algorithm = algorithm,
                                                   .congestion = congestion,
                                                   .chunks = chunks,
                                                   .library = library}));
  NetworkCollectiveOpEstimate result{.network = network.name,
                                     .network_npus = topology.npu_count(),
                                     .op = op,
                                     .congestion = congestion,
                                     .chunks = chunks,
                                     .library = library,
                                     .estimate = std::move(e),
                                     .busiest_link = ""};
  if (result.estimate.busiest_link >= 0) {
    const NetworkLink& link = topology.links()[result.estimate.busiest_link];
    result.busiest_link = absl::StrCat(topology.NodeName(link.from), " -> ",
                                       topology.NodeName(link.to), " (dim ", link.dimension, ")");
  }
  return result;
}

}  // namespace projector
