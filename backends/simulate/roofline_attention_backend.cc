#include "backends/simulate/roofline_attention_backend.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "backends/simulate/gpu_model_constants.h"
#include "backends/simulate/shape_checks.h"

namespace projector {

namespace {

// Flash-attention backward runs three kernels: preprocess (dPsum = rowsum(dO∘O), zero dQ
// accumulator), the main kernel, and the dQ conversion (FA2/FA3 flash_bwd_launch_template.h).
constexpr double kBackwardLaunches = 3;

}  // namespace

RooflineAttentionBackend::RooflineAttentionBackend(const HardwareProfile& hw)
    : gpu_name_(hw.gpu.name),
      fwd_efficiency_(hw.gpu.attention_fwd_efficiency),
      bwd_efficiency_(hw.gpu.attention_bwd_efficiency),
      hbm_bandwidth_(hw.gpu.hbm_bandwidth * hw.gpu.hbm_efficiency),
      launch_overhead_(hw.gpu.kernel_launch_overhead) {
  const double per_clock =
      static_cast<double>(hw.gpu.compute_units) * gpu_model::RunningClock(hw.gpu).value();
  for (DType dtype : kAllDTypes) {
    const size_t i = static_cast<size_t>(DTypeIndex(dtype));
    peak_flops_per_s_[i] = hw.gpu.matrix_flops_per_clock_per_cu[i] * per_clock;
  }
}

absl::StatusOr<AttentionEstimate> RooflineAttentionBackend::Estimate(const AttentionShape& shape,
                                                                     AttentionPass pass) const {
  const std::pair<AttentionShape, AttentionPass> key(shape, pass);
  if (std::optional<AttentionEstimate> hit = cache_.Find(key)) return *hit;
  if (absl::Status s = shape_checks::ValidateAttentionShape(shape); !s.ok()) return s;
  const double peak = peak_flops_per_s_[static_cast<size_t>(DTypeIndex(shape.dtype))];
  if (absl::Status s = shape_checks::CheckMatrixRate(gpu_name_, shape.dtype, peak); !s.ok()) {
    return s;
  }
  const bool backward = pass == AttentionPass::kBackward;
  const double eb = BytesPerElement(shape.dtype);
  const double batch = static_cast<double>(shape.batch);
  const double q = batch * static_cast<double>(shape.num_q_heads * shape.seq_q * shape.qk_head_dim);
  const double o = batch * static_cast<double>(shape.num_q_heads * shape.seq_q * shape.v_head_dim);
  const double kv = batch * static_cast<double>(shape.num_kv_heads * shape.seq_kv *
                                                (shape.qk_head_dim + shape.v_head_dim));
  const Bytes bytes((backward ? 2.0 * (q + kv) + 2.0 * o : q + kv + o) * eb);

  const double efficiency = backward ? bwd_efficiency_ : fwd_efficiency_;
  const Seconds compute = AttentionFlops(shape, pass) / FlopsPerSecond(peak * efficiency);
  const Seconds memory = bytes / hbm_bandwidth_;
  AttentionEstimate estimate;
  estimate.time = std::max(compute, memory) +
                  launch_overhead_ * (backward ? kBackwardLaunches : 1.0);
  estimate.bound = compute >= memory ? Bound::kCompute : Bound::kMemory;
  estimate.clock_scaled_time = compute >= memory ? compute : Seconds(0);
  estimate.waves = 1;
  cache_.Insert(key, estimate);
  return estimate;
}

std::unique_ptr<AttentionBackend> MakeRooflineAttentionBackend(const HardwareProfile& hw) {
  return std::make_unique<RooflineAttentionBackend>(hw);
}

}  // namespace projector
