#include "serving/serve.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const size_t low = static_cast<size_t>(std::floor(rank));
  const size_t high = std::min(low + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(low);
  return sorted[low] + (sorted[high] - sorted[low]) * frac;
}

// The metrics over every replica's requests and passes.
ServeMetrics Measure(std::span<const ReplicaRun> runs, int64_t gpus) {
  std::vector<double> ttft, tpot, e2e;
  ServeMetrics m;
  double input_tokens = 0, output_tokens = 0, batch_sequences = 0, batch_tokens = 0;
  for (const ReplicaRun& run : runs) {
    for (const RequestRecord& r : run.requests) {
      ttft.push_back(1e3 * (r.first_token_s - r.arrival_s));
      e2e.push_back(1e3 * (r.finish_s - r.arrival_s));
      if (r.output_tokens > 1) {
        tpot.push_back(1e3 * (r.finish_s - r.first_token_s) /
                       static_cast<double>(r.output_tokens - 1));
      }
      input_tokens += static_cast<double>(r.prompt_tokens);
      output_tokens += static_cast<double>(r.output_tokens);
      m.duration_s = std::max(m.duration_s, r.finish_s);
      ++m.completed;
    }
    for (const PassSample& p : run.passes) {
      batch_sequences += p.batch_sequences;
      batch_tokens += p.batch_tokens;
      if (run.kv.blocks > 0) {
        m.peak_kv_utilization =
            std::max(m.peak_kv_utilization, static_cast<double>(p.kv_blocks_used) /
                                                static_cast<double>(run.kv.blocks));
      }
    }
    m.passes += static_cast<int64_t>(run.passes.size());
    m.preemptions += run.preemptions;
  }
  m.ttft_ms = Summarize(ttft);
  m.tpot_ms = Summarize(tpot);
  m.e2e_ms = Summarize(e2e);
  if (m.duration_s > 0) {
    m.requests_per_s = static_cast<double>(m.completed) / m.duration_s;
    m.input_tokens_per_s = input_tokens / m.duration_s;
    m.output_tokens_per_s = output_tokens / m.duration_s;
    m.output_tokens_per_s_per_gpu = m.output_tokens_per_s / static_cast<double>(gpus);
    m.total_tokens_per_s_per_gpu =
        (input_tokens + output_tokens) / m.duration_s / static_cast<double>(gpus);
  }
  if (m.passes > 0) {
    m.mean_batch_sequences = batch_sequences / static_cast<double>(m.passes);
    m.mean_batch_tokens = batch_tokens / static_cast<double>(m.passes);
  }
  return m;
}

}  // namespace

LatencyStats Summarize(std::vector<double>& values) {
  LatencyStats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.count = static_cast<int64_t>(values.size());
  s.mean = sum / static_cast<double>(values.size());
  s.p50 = Percentile(values, 0.50);
  s.p90 = Percentile(values, 0.90);
  s.p99 = Percentile(values, 0.99);
  return s;
}

absl::StatusOr<ServeResult> Serve(const ServeOptions& options, std::span<const Request> requests) {
  if (options.replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas: must be >= 1, got ", options.replicas));
  }
  if (requests.empty()) return absl::InvalidArgumentError("the workload has no requests");
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> cost,
                             PassCostModel::Make(options.deployment));
  // Round-robin dispatch: request i to replica i mod R, each replica's share in arrival order.
  const size_t replicas = static_cast<size_t>(options.replicas);
  std::vector<std::vector<Request>> shares(replicas);
  for (size_t i = 0; i < requests.size(); ++i) shares[i % replicas].push_back(requests[i]);
  std::vector<ReplicaRun> runs;
  runs.reserve(replicas);
  for (const std::vector<Request>& share : shares) {
    if (share.empty()) continue;
    PROJECTOR_ASSIGN_OR_RETURN(ReplicaRun run, RunReplica(*cost, options.engine, share));
    runs.push_back(std::move(run));
  }
  ServeResult result;
  result.gpus = options.deployment.NumGpus() * options.replicas;
  result.metrics = Measure(runs, result.gpus);
  result.kv = runs.front().kv;
  result.first_replica = std::move(runs.front());
  result.priced_token_counts = cost->PricedTokenCounts();
  return result;
}

}  // namespace projector
