// Roofline flash-attention model: max(matmul FLOPs at the achievable attention rate, HBM bytes of
// Q, K, V, O (and dO, dQ, dK, dV backward)) plus launches. Ignores tiles, softmax and causal
// scheduling; TileAttentionBackend models those. Part of the simulate backends; immutable,
// estimates memoised by shape and pass.
#ifndef PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_ATTENTION_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_ATTENTION_BACKEND_H_

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "backends/attention_backend.h"
#include "backends/simulate/memo_cache.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// compute = AttentionFlops(shape, pass) / (peak matrix rate at the sustained clock ·
//           attention_fwd_efficiency or attention_bwd_efficiency);
// memory  = bytes / (hbm_bandwidth · hbm_efficiency), forward Q + K + V + O, backward
//           2·(Q + K + V) + O + dO (K, V counted per KV head);
// time = max(compute, memory) + launch (backward: + 2 launches for its pre/post kernels).
class RooflineAttentionBackend final : public AttentionBackend {
 public:
  explicit RooflineAttentionBackend(const HardwareProfile& hw);
  // kInvalidArgument for non-positive sizes or num_q_heads not a multiple of num_kv_heads;
  // kUnimplemented "<gpu> has no <dtype> matrix rate".
  absl::StatusOr<AttentionEstimate> Estimate(const AttentionShape& shape,
                                             AttentionPass pass) const override;
  std::string_view name() const override { return "roofline"; }

 private:
  std::string gpu_name_;
  std::array<double, kNumDTypes> peak_flops_per_s_{};  // units · rate · clock
  double fwd_efficiency_ = 1;
  double bwd_efficiency_ = 1;
  BytesPerSecond hbm_bandwidth_;  // times hbm_efficiency
  Seconds launch_overhead_;
  MemoCache<std::pair<AttentionShape, AttentionPass>, AttentionEstimate> cache_;
};

std::unique_ptr<AttentionBackend> MakeRooflineAttentionBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_ATTENTION_BACKEND_H_
