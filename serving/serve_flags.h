// The flags of `project serve`: the deployment (model, GPU, TP, PP, replicas, precisions), the
// engine (batching, limits, KV cache, host overheads) and the workload (arrivals, lengths,
// seed, or a trace file), read into the options and requests Serve takes.
#ifndef PROJECTOR_SERVING_SERVE_FLAGS_H_
#define PROJECTOR_SERVING_SERVE_FLAGS_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "serving/serve.h"
#include "serving/workload.h"

namespace projector {

std::span<const FlagSpec> ServeDeploymentFlags();
std::span<const FlagSpec> ServeEngineFlags();
std::span<const FlagSpec> ServeWorkloadFlags();

// Sets the declared defaults of the three groups on flags built by a program rather than parsed
// from a command line (the parser registers them itself).
void SetServeFlagDefaults(FlagValues& flags);

struct ServeJob {
  ServeOptions options;
  std::vector<Request> requests;
  // "poisson at 4 req/s, 1,000 requests, input fixed 512, output fixed 128, seed 0" or
  // "trace FILE (1,000 requests)".
  std::string workload;
  WorkloadSpec spec;  // the synthetic workload (unused for a trace)
  bool from_trace = false;
};

// The job the flags describe. FlagError naming the flag for a bad or missing value: no --qps,
// --concurrency or --trace (and not static batching), --qps <= 0, an output length of 0, an
// unknown model or GPU, a precision the GPU has no rate for.
absl::StatusOr<ServeJob> ServeJobFromFlags(const FlagValues& flags);

}  // namespace projector

#endif  // PROJECTOR_SERVING_SERVE_FLAGS_H_
