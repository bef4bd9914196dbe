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

absl::StatusOr<NetworkCollectiveOpEstimate> EstimateNetworkCollectiveOp(
    const NetworkSpec& network, const CollectiveOp& op, CollectiveAlgorithm algorithm,
    Congestion congestion, int64_t chunks, CollectiveLibrary library) {
  const Topology topology(network);
  const int64_t last = (op.group.size - 1) * op.group.stride;
  if (last >= topology.npu_count()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a group of ", op.group.size, " ranks ", op.group.stride, " apart reaches NPU ", last,
        "; the network '", network.name, "' has NPUs 0 to ", topology.npu_count() - 1));
  }
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < op.group.size; ++i) ranks.push_back(i * op.group.stride);
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
