// One op on its own (`project estimate gemm|attention|collective`): the backend's estimate of a
// GEMM, an attention pass or a collective on one GPU profile, with the rate it achieves.
#ifndef PROJECTOR_STUDIES_ESTIMATE_H_
#define PROJECTOR_STUDIES_ESTIMATE_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"
#include "core/op_shapes.h"
#include "hw_profiles/hardware_profile.h"
#include "network/collectives.h"
#include "network/network_spec.h"
#include "studies/astra_semantics.h"

namespace projector {

// The GPU and backend an estimate was made on.
struct EstimateContext {
  std::string gpu;
  double clock_mhz = 0;  // the profile's sustained clock
  int64_t gpus_per_node = 0;
  std::string backend;
};

struct GemmOpEstimate {
  EstimateContext context;
  GemmShape shape;
  GemmEstimate estimate;
  double tflops = 0;  // achieved: the GEMM's FLOPs over its time
};

struct AttentionOpEstimate {
  EstimateContext context;
  AttentionShape shape;
  AttentionPass pass = AttentionPass::kForward;
  AttentionEstimate estimate;
  double tflops = 0;
};

struct CollectiveOpEstimate {
  EstimateContext context;
  CollectiveOp op;
  CollectiveEstimate estimate;
};

// A collective on a network file's topology (network/collectives.h) rather than a GPU
// profile's built-in two-level network.
struct NetworkCollectiveOpEstimate {
  std::string network;  // the network's name
  int64_t network_npus = 0;
  CollectiveOp op;  // group: `size` ranks r0 + i·stride from NPU 0
  Congestion congestion = Congestion::kAware;
  int64_t chunks = 1;
  CollectiveLibrary library = CollectiveLibrary::kNccl;
  NetworkCollectiveEstimate estimate;
  std::string busiest_link;  // "npu 0 [0,0] -> dim 0 switch 0 #0 (dim 0)"; empty when none
};

// A collective under ASTRA-sim's semantics (`--semantics astra`, studies/astra_semantics.h): the
// whole network as the group.
struct AstraCollectiveOpEstimate {
  std::string network;
  int64_t network_npus = 0;
  CollectiveOp op;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  Congestion congestion = Congestion::kAware;
  AstraSystem system;
  AstraCollectiveResult result;
};

// Collectives started together on one network (`--concurrent`): each one's group from NPU
// `first`, and its time alone and beside the others (network/collectives.h EstimateConcurrent).
struct ConcurrentCollective {
  CollectiveOp op;
  int64_t first = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
};
struct ConcurrentCollectivesEstimate {
  std::string network;
  Congestion congestion = Congestion::kAware;
  CollectiveLibrary library = CollectiveLibrary::kNccl;
  std::vector<ConcurrentCollective> collectives;
  std::vector<ConcurrentEstimate> results;  // one per collective, in order
};

// Backend errors (a shape it rejects) pass through.
absl::StatusOr<GemmOpEstimate> EstimateGemmOp(const HardwareProfile& hw, const GemmBackend& backend,
                                              const GemmShape& shape);
absl::StatusOr<AttentionOpEstimate> EstimateAttentionOp(const HardwareProfile& hw,
                                                        const AttentionBackend& backend,
                                                        const AttentionShape& shape,
                                                        AttentionPass pass);
absl::StatusOr<CollectiveOpEstimate> EstimateCollectiveOp(const HardwareProfile& hw,
                                                          const CollectiveBackend& backend,
                                                          const CollectiveOp& op,
                                                          CollectiveAlgorithm algorithm);

// The group {size, stride} from NPU 0 on `network`'s topology. kInvalidArgument when the group
// does not fit the network; the algorithm's kUnimplemented when it does not apply.
absl::StatusOr<NetworkCollectiveOpEstimate> EstimateNetworkCollectiveOp(
    const NetworkSpec& network, const CollectiveOp& op, CollectiveAlgorithm algorithm,
    Congestion congestion, int64_t chunks, CollectiveLibrary library);

// kInvalidArgument when a group leaves the network; the network model's errors otherwise.
absl::StatusOr<ConcurrentCollectivesEstimate> EstimateConcurrentCollectives(
    const NetworkSpec& network, std::span<const ConcurrentCollective> collectives,
    Congestion congestion, CollectiveLibrary library);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_ESTIMATE_H_
