// The measure runner of a build without a GPU runtime: every call explains how to build one in.
#include "absl/status/status.h"
#include "backends/measure/measure_runner.h"

namespace projector {

std::string MeasureRuntimeName() { return ""; }

absl::StatusOr<MeasureResult> MeasureOps(const std::vector<ProfiledOp>& /*requests*/,
                                         const MeasureOptions& /*options*/) {
  return absl::FailedPreconditionError(
      "--profiling-mode measure: built without a GPU runtime; install the CUDA toolkit (with "
      "cuBLAS) or hipcc and reconfigure with -DPROJECTOR_ENABLE_CUDA=ON (or "
      "-DPROJECTOR_ENABLE_HIP=ON), then rebuild the projector target");
}

}  // namespace projector
