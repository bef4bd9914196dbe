#include "backends/simulate/roofline_gemm_backend.h"

#include <algorithm>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "backends/simulate/gpu_model_constants.h"
#include "backends/simulate/shape_checks.h"

namespace projector {

RooflineGemmBackend::RooflineGemmBackend(const HardwareProfile& hw)
    : gpu_name_(hw.gpu.name),
      hbm_bandwidth_(hw.gpu.hbm_bandwidth * hw.gpu.hbm_efficiency),
      launch_overhead_(hw.gpu.kernel_launch_overhead) {
  const GpuSpec& gpu = hw.gpu;
  const double per_clock =
      static_cast<double>(gpu.compute_units) * gpu_model::RunningClock(gpu).value();
  for (DType dtype : kAllDTypes) {
    double flops_per_clock = gpu.matrix_flops_per_clock_per_cu[static_cast<size_t>(DTypeIndex(dtype))];
    // FP32 GEMMs without an FP32 matrix path run on the vector units (SIMT SGEMM).
    if (dtype == DType::kFp32 && flops_per_clock <= 0) {
      flops_per_clock = gpu.vector_fp32_flops_per_clock_per_cu;
    }
    matrix_rate_[static_cast<size_t>(DTypeIndex(dtype))] =
        FlopsPerSecond(flops_per_clock * per_clock * gpu.GemmEfficiency(dtype));
  }
  fp8_block_scaled_ratio_ = gpu.GemmEfficiency(DType::kFp8, true) / gpu.GemmEfficiency(DType::kFp8);
}

absl::StatusOr<GemmEstimate> RooflineGemmBackend::Estimate(const GemmShape& shape) const {
  if (std::optional<GemmEstimate> hit = cache_.Find(shape)) return *hit;
  if (absl::Status status = shape_checks::ValidateGemmShape(shape); !status.ok()) return status;
  FlopsPerSecond rate = matrix_rate_[static_cast<size_t>(DTypeIndex(shape.dtype))];
  if (shape.block_scaled && shape.dtype == DType::kFp8) rate = rate * fp8_block_scaled_ratio_;
  if (absl::Status status = shape_checks::CheckMatrixRate(gpu_name_, shape.dtype, rate.value());
      !status.ok()) {
    return status;
  }
  const double m = static_cast<double>(shape.m);
  const double n = static_cast<double>(shape.n);
  const double k = static_cast<double>(shape.k);
  const Bytes bytes((m * k + k * n) * BytesPerElement(shape.dtype) +
                    m * n * gpu_model::OutputBytesPerElement(shape.dtype));
  const Seconds compute_time = GemmFlops(shape) / rate;
  const Seconds memory_time = bytes * static_cast<double>(shape.batch) / hbm_bandwidth_;

  GemmEstimate estimate;
  estimate.time = std::max(compute_time, memory_time) +
                  launch_overhead_ * static_cast<double>(shape.kernels);
  estimate.bound = compute_time >= memory_time ? Bound::kCompute : Bound::kMemory;
  estimate.clock_scaled_time = compute_time >= memory_time ? compute_time : Seconds(0);
  estimate.waves = 1;
  cache_.Insert(shape, estimate);
  return estimate;
}

std::unique_ptr<GemmBackend> MakeRooflineGemmBackend(const HardwareProfile& hw) {
  return std::make_unique<RooflineGemmBackend>(hw);
}

}  // namespace projector
