// `project network validate --cases FILE`: measured collective bus bandwidths (nccl-tests and
// rccl-tests results, calibration/network_public.jsonl) against the network model on the GPU
// profile's built-in network with NCCL's costs: one row per case, the error, and the median.
#ifndef PROJECTOR_STUDIES_NETWORK_VALIDATE_H_
#define PROJECTOR_STUDIES_NETWORK_VALIDATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_shapes.h"

namespace projector {

struct NetworkCaseResult {
  std::string id;
  std::string gpu;
  int64_t nodes = 1;
  int64_t ranks_per_node = 1;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  std::string requested_algorithm;  // as the case states it; "auto" when it does not
  double bytes = 0;
  double measured_busbw_gbps = 0;
  double projected_busbw_gbps = 0;
  std::string algorithm;  // what the model ran, with its protocol ("nvls/Simple")
  double error_pct = 0;   // (projected - measured) / measured
};

struct NetworkValidation {
  std::string cases_file;
  std::vector<NetworkCaseResult> cases;
  double median_abs_error_pct = 0;
  int64_t within_10_pct = 0;
};

// Reads one JSON object per line (fields: id, gpu, gpus_per_node (ranks used per node),
// num_nodes, collective (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast),
// algorithm (null, ring, tree, nvls), message_bytes, measured.busbw_gbps). kInvalidArgument
// naming file:line and field for a bad case; kNotFound for a missing file.
absl::StatusOr<NetworkValidation> ValidateNetworkCases(const std::string& path);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_NETWORK_VALIDATE_H_
