// gpu_probe: decides whether a `gpu`-labelled test can run here, by the measure runner's status
// code rather than by its (runtime-worded, possibly wrapped) message.
//   projector_gpu_probe                  exit 0 when a GPU runtime sees a usable device, else 77
//   projector_gpu_probe -- COMMAND ARGS  exit 77 without a usable device, else run COMMAND and
//                                        exit with its code
// ctest marks exit 77 as skipped (SKIP_RETURN_CODE 77), so a machine without a GPU, without a
// driver (CUDA toolkit installed, driver absent) or without a GPU runtime in the build skips.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/measure/measure_runner.h"

namespace {

constexpr int kSkipped = 77;

// 0 when a runtime compiled in opens a device and its libraries (MeasureOps with no ops
// initialises exactly that and measures nothing); kSkipped when the build has no runtime or the
// machine no usable device (kFailedPrecondition); 1 when the runtime fails otherwise.
int ProbeDevice() {
  const absl::StatusOr<projector::MeasureResult> result =
      projector::MeasureOps({}, projector::MeasureOptions{.warmup = 1, .repetitions = 1});
  if (result.ok()) return 0;
  const bool absent = result.status().code() == absl::StatusCode::kFailedPrecondition;
  std::fprintf(stderr, "gpu_probe: %s: %s\n", absent ? "skipped" : "error",
               std::string(result.status().message()).c_str());
  return absent ? kSkipped : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (const int probe = ProbeDevice(); probe != 0) return probe;
  if (argc < 3 || std::strcmp(argv[1], "--") != 0) return 0;
  std::vector<char*> command(argv + 2, argv + argc);
  command.push_back(nullptr);
  execvp(command[0], command.data());
  std::perror("gpu_probe: exec");
  return 1;
}
