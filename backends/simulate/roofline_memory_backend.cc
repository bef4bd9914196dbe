#include "backends/simulate/roofline_memory_backend.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "backends/simulate/gpu_model_constants.h"

namespace projector {

static_assert(static_cast<int>(AtomicAddKernel::kIndexAdd) == 2,
              "atomic_rates_ holds one rate per AtomicAddKernel, by index");

RooflineMemoryBackend::RooflineMemoryBackend(const HardwareProfile& hw)
    : hbm_bandwidth_(hw.gpu.hbm_bandwidth * hw.gpu.hbm_efficiency),
      vector_rate_(FlopsPerSecond(hw.gpu.vector_fp32_flops_per_clock_per_cu *
                                  static_cast<double>(hw.gpu.compute_units) *
                                  gpu_model::RunningClock(hw.gpu).value())),
      launch_overhead_(hw.gpu.kernel_launch_overhead),
      atomic_rates_{hw.gpu.AtomicAddRate(AtomicAddKernel::kNone),
                    hw.gpu.AtomicAddRate(AtomicAddKernel::kScatterAdd),
                    hw.gpu.AtomicAddRate(AtomicAddKernel::kIndexAdd)} {}

absl::StatusOr<MemoryEstimate> RooflineMemoryBackend::Estimate(const MemoryOp& op) const {
  if (std::optional<MemoryEstimate> hit = cache_.Find(op)) return *hit;
  if (op.bytes.value() < 0 || op.flops.value() < 0 || op.launches < 1 || op.atomic_adds < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "memory op must have bytes >= 0, flops >= 0, atomic adds >= 0 and launches >= 1; got "
        "bytes=%g flops=%g atomic_adds=%g launches=%d",
        op.bytes.value(), op.flops.value(), op.atomic_adds, op.launches));
  }
  const Seconds launch = launch_overhead_ * static_cast<double>(op.launches);
  const Seconds memory_time =
      hbm_bandwidth_.value() > 0 ? op.bytes / hbm_bandwidth_ : Seconds(0);
  const Seconds vector_time = vector_rate_.value() > 0 ? op.flops / vector_rate_ : Seconds(0);
  const std::optional<double>& atomic_rate =
      atomic_rates_[static_cast<size_t>(op.atomic_kernel)];
  const Seconds atomic_time = Seconds(atomic_rate ? op.atomic_adds / *atomic_rate : 0.0);
  const Seconds data_time = std::max(memory_time, atomic_time);

  MemoryEstimate estimate;
  estimate.time = launch + std::max(data_time, vector_time);
  if (vector_time > data_time) {
    estimate.bound = Bound::kCompute;
    estimate.clock_scaled_time = vector_time;
  } else if (data_time.value() > 0) {
    estimate.bound = Bound::kMemory;
  } else {
    estimate.bound = Bound::kLatency;
  }
  cache_.Insert(op, estimate);
  return estimate;
}

std::unique_ptr<MemoryBackend> MakeRooflineMemoryBackend(const HardwareProfile& hw) {
  return std::make_unique<RooflineMemoryBackend>(hw);
}

}  // namespace projector
