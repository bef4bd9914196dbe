// Measure runner: times GEMMs, attention and memory-bound kernels on the local GPU with device
// events (warm-up, repeated runs, median/min/max) and returns them as profile ops. Target
// projector::measure; the runtimes it holds depend on what CMake found: CUDA (cuBLASLt, when the
// CUDA toolkit is found) and/or HIP (its own kernels, when hipcc is found). A build with neither
// reports how to build one in.
#ifndef PROJECTOR_BACKENDS_MEASURE_MEASURE_RUNNER_H_
#define PROJECTOR_BACKENDS_MEASURE_MEASURE_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/profile/profile_file.h"

namespace projector {

struct MeasureOptions {
  int64_t warmup = 5;        // untimed runs before timing
  int64_t repetitions = 20;  // timed runs; median/min/max over them
  int64_t device = 0;        // GPU index
};

struct MeasureResult {
  std::vector<ProfiledOp> ops;         // measured (time filled in)
  std::vector<std::string> skipped;    // ops not measured, with the reason
  std::string tool;                    // "project measure (CUDA 13.0 (cuBLASLt))"
  std::string device;                  // device name reported by the runtime
};

// The runtimes compiled in, "CUDA 13.0 (cuBLASLt), HIP 5.2.0 (HIP kernels)", or "" when the
// build has none.
std::string MeasureRuntimeName();

// Times each of `requests` (their `time` is ignored) on the GPU, with the first compiled-in
// runtime that sees a device. GEMMs: cuBLASLt (CUDA) or a tiled HIP GEMM kernel; attention: a
// composition of strided-batched GEMMs (QK^T, PV; backward: the five GEMMs of flash attention
// backward) plus one read+write pass over the score matrix standing in for the softmax, with
// the time halved for causal masks; memory ops: device-to-device copies of the same traffic.
// Collectives are not measured (one GPU) and land in `skipped`, as do ops whose dtype the
// runtime does not cover. kFailedPrecondition when the build has no GPU runtime ("built without
// a GPU runtime; ...") or no device is present; kInvalidArgument for bad options; kInternal for
// a runtime failure.
absl::StatusOr<MeasureResult> MeasureOps(const std::vector<ProfiledOp>& requests,
                                         const MeasureOptions& options);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_MEASURE_MEASURE_RUNNER_H_
