// Roofline model of memory-bound kernels (norms, element-wise ops, permutations, optimizer
// updates): launch overheads plus the larger of HBM streaming time and vector-FLOP time.
// Part of the simulate backends; immutable, estimates memoised by op.
#ifndef PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_MEMORY_BACKEND_H_
#define PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_MEMORY_BACKEND_H_

#include <array>
#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "backends/memory_backend.h"
#include "backends/simulate/memo_cache.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"

namespace projector {

// time = launches · kernel_launch_overhead
//        + max(bytes / (hbm_bandwidth · hbm_efficiency), flops / vector FP32 rate at the clock,
//              atomic_adds / the profile's rate of the op's atomic kernel).
// bound = memory (also for the atomic term: the adds are read-modify-writes in the memory
// system), or compute when the vector-FLOP term is larger, or latency when there is no work at
// all. clock_scaled_time is the vector-FLOP term when it is the larger one, else zero. An
// atomic kernel the profile has no rate for is timed by its bytes.
class RooflineMemoryBackend final : public MemoryBackend {
 public:
  explicit RooflineMemoryBackend(const HardwareProfile& hw);
  // kInvalidArgument for negative bytes or flops, or launches < 1.
  absl::StatusOr<MemoryEstimate> Estimate(const MemoryOp& op) const override;
  std::string_view name() const override { return "roofline"; }

 private:
  BytesPerSecond hbm_bandwidth_;  // already times hbm_efficiency
  FlopsPerSecond vector_rate_;    // zero when the profile gives no vector rate
  Seconds launch_overhead_;
  // GpuSpec::AtomicAddRate of each AtomicAddKernel, by its index (kNone: none).
  std::array<std::optional<double>, 3> atomic_rates_;
  MemoCache<MemoryOp, MemoryEstimate> cache_;
};

std::unique_ptr<MemoryBackend> MakeRooflineMemoryBackend(const HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_SIMULATE_ROOFLINE_MEMORY_BACKEND_H_
