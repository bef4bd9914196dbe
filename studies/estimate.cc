#include "studies/estimate.h"

#include "core/status_macros.h"

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

}  // namespace projector
