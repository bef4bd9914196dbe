// One op on its own (`project estimate gemm|attention|collective`): the backend's estimate of a
// GEMM, an attention pass or a collective on one GPU profile, with the rate it achieves.
#ifndef PROJECTOR_STUDIES_ESTIMATE_H_
#define PROJECTOR_STUDIES_ESTIMATE_H_

#include <string>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"
#include "core/op_shapes.h"
#include "hw_profiles/hardware_profile.h"

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

}  // namespace projector

#endif  // PROJECTOR_STUDIES_ESTIMATE_H_
