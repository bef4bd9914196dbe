// `project serve`'s study: a workload through R replicas of a deployment (requests dealt round
// robin, as a load balancer would), and the metrics a serving benchmark reports (vLLM's
// benchmark_serving definitions): time to first token (TTFT: sent to first token), time per
// output token (TPOT: (E2E − TTFT)/(output − 1), requests with more than one output token),
// end-to-end latency (E2E), each with mean and percentiles; throughput over the benchmark's
// duration (time 0 to the last token).
#ifndef PROJECTOR_SERVING_SERVE_H_
#define PROJECTOR_SERVING_SERVE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "serving/engine.h"
#include "serving/pass_cost.h"
#include "serving/workload.h"

namespace projector {

struct LatencyStats {
  int64_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p99 = 0;
};

// Mean and percentiles (linear interpolation between closest ranks, numpy's default) of
// `values`, which it sorts; all zero when empty.
LatencyStats Summarize(std::vector<double>& values);

struct ServeMetrics {
  LatencyStats ttft_ms;
  LatencyStats tpot_ms;
  LatencyStats e2e_ms;
  int64_t completed = 0;
  double duration_s = 0;
  double requests_per_s = 0;
  double input_tokens_per_s = 0;
  double output_tokens_per_s = 0;
  double output_tokens_per_s_per_gpu = 0;
  double total_tokens_per_s_per_gpu = 0;
  int64_t preemptions = 0;
  int64_t passes = 0;
  int64_t events = 0;               // simulated at the high level of detail
  double mean_batch_sequences = 0;  // requests per pass
  double mean_batch_tokens = 0;     // new tokens per pass
  double peak_kv_utilization = 0;   // blocks in use over blocks held, at the fullest pass
  bool prefix_caching = false;
  PrefixCacheStats prefix_cache;  // summed over the replicas
};

// The metrics of replica runs whose GPUs number `gpus` in all.
ServeMetrics MeasureRuns(std::span<const ReplicaRun> runs, int64_t gpus);

struct ServeOptions {
  Deployment deployment;
  EngineConfig engine;
  int64_t replicas = 1;
};

// Where the time of two typical passes goes (stage 0 .. pp-1 summed): a lone prefill of the
// mean prompt, and a decode-only pass of the mean running batch at the mean context.
struct PassAnatomy {
  std::string label;  // "prefill of 1,024 tokens", "decode of 64 requests at 1,152 tokens"
  PassBreakdown time;
};

struct ServeResult {
  ServeMetrics metrics;
  std::vector<PassAnatomy> anatomy;
  KvCacheSizing kv;
  // Replica 0's run (its passes are the timeline the report draws).
  ReplicaRun first_replica;
  int64_t gpus = 0;
  int64_t priced_token_counts = 0;
};

// Puts into d.hw the efficiencies of the flash-attention kernel the GPU's profile runs by
// default (scenario/scenario.h ResolveKernels), as a training projection on it would.
absl::Status ResolveServingKernels(Deployment& d);

// kInvalidArgument for replicas < 1 or an empty workload; the errors of PassCostModel::Make and
// RunReplica otherwise.
absl::StatusOr<ServeResult> Serve(const ServeOptions& options, std::span<const Request> requests);

}  // namespace projector

#endif  // PROJECTOR_SERVING_SERVE_H_
