// The flags of `project serve`: the deployment (model, GPU, TP, PP, replicas, precisions), the
// engine (batching, limits, KV cache, host overheads) and the workload (arrivals, lengths,
// seed, or a trace file), read into the options and requests Serve takes.
#ifndef PROJECTOR_SERVING_SERVE_FLAGS_H_
#define PROJECTOR_SERVING_SERVE_FLAGS_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "serving/disaggregated.h"
#include "serving/serve.h"
#include "serving/slo_search.h"
#include "serving/workload.h"

namespace projector {

std::span<const FlagSpec> ServeDeploymentFlags();
std::span<const FlagSpec> ServeEngineFlags();
std::span<const FlagSpec> ServeWorkloadFlags();
// --slo-ttft, --slo-tpot, --slo-percentile, --max-qps, --search-layouts, --num-gpus.
std::span<const FlagSpec> ServeSloFlags();
// --disaggregate and the pools' --prefill-* and --decode-* flags.
std::span<const FlagSpec> ServeDisaggregationFlags();

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

// What the latency-target flags ask for: nothing, the highest rate under the target
// (--max-qps), or that for every layout of --num-gpus GPUs (--search-layouts).
enum class SloMode { kNone, kMaxQps, kSearchLayouts };
struct SloRequest {
  SloMode mode = SloMode::kNone;
  SloTarget target;
  int64_t num_gpus = 0;
  int threads = 0;  // --threads: simulations at once on each rank; 0 = its share of the cores
};
// FlagError naming the flag: a target without --max-qps or --search-layouts, or one of those
// without both targets, a percentile other than 50/90/99, --search-layouts without --num-gpus.
absl::StatusOr<SloRequest> SloFromFlags(const FlagValues& flags);

// The job the flags describe. Under a latency-target search (`rate_searched`) the rate is the
// search's: --qps, --concurrency and --trace are refused and the arrivals are Poisson. FlagError
// naming the flag for a bad or missing value: no --qps,
// --concurrency or --trace (and not static batching), --qps <= 0, an output length of 0, an
// unknown model or GPU, a precision the GPU has no rate for.
absl::StatusOr<ServeJob> ServeJobFromFlags(const FlagValues& flags, bool rate_searched = false);

// The prefill and decode pools --disaggregate asks for, over the job's deployment (each pool
// its own TP, replicas and GPU; PP 1) and engine; nullopt without --disaggregate. FlagError for
// a pool flag without --disaggregate, a bad TP or GPU, or with static batching.
absl::StatusOr<std::optional<DisaggregatedOptions>> DisaggregationFromFlags(const FlagValues& flags,
                                                                            const ServeJob& job);

}  // namespace projector

#endif  // PROJECTOR_SERVING_SERVE_FLAGS_H_
