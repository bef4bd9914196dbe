// MeasureOps of every build: tries the runtimes compiled in (CUDA, then HIP) and uses the first
// that sees a device; a build with none explains how to build one in.
#include "backends/measure/measure_runner.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/measure/measure_common.h"

namespace projector {
namespace {

struct Runtime {
  std::string (*name)();
  absl::StatusOr<MeasureResult> (*measure)(const std::vector<ProfiledOp>&, const MeasureOptions&);
};

std::vector<Runtime> CompiledRuntimes() {
  std::vector<Runtime> runtimes;
#ifdef PROJECTOR_MEASURE_CUDA
  runtimes.push_back({&CudaRuntimeName, &MeasureOpsCuda});
#endif
#ifdef PROJECTOR_MEASURE_HIP
  runtimes.push_back({&HipRuntimeName, &MeasureOpsHip});
#endif
  return runtimes;
}

}  // namespace

std::string MeasureRuntimeName() {
  std::vector<std::string> names;
  for (const Runtime& r : CompiledRuntimes()) names.push_back(r.name());
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<MeasureResult> MeasureOps(const std::vector<ProfiledOp>& requests,
                                         const MeasureOptions& options) {
  const std::vector<Runtime> runtimes = CompiledRuntimes();
  if (runtimes.empty()) {
    return absl::FailedPreconditionError(
        "--profiling-mode measure: built without a GPU runtime; install the CUDA toolkit (with "
        "cuBLAS) or hipcc and libamdhip64-dev (apt-get install hipcc libamdhip64-dev), "
        "reconfigure with -DPROJECTOR_ENABLE_CUDA=ON or -DPROJECTOR_ENABLE_HIP=ON, then rebuild "
        "the projector target");
  }
  // A runtime without a device (an AMD build on an NVIDIA machine) hands over to the next.
  std::vector<std::string> missing;
  for (const Runtime& r : runtimes) {
    absl::StatusOr<MeasureResult> result = r.measure(requests, options);
    if (result.ok() || result.status().code() != absl::StatusCode::kFailedPrecondition) {
      return result;
    }
    missing.emplace_back(result.status().message());
  }
  if (missing.size() == 1) return absl::FailedPreconditionError(missing.front());
  return absl::FailedPreconditionError(absl::StrJoin(missing, "\n"));
}

}  // namespace projector
