#include "serving/serve.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/statistics.h"
#include "core/status_macros.h"
#include "scenario/scenario.h"
#include "serving/dp_attention.h"

namespace projector {

ServeMetrics MeasureRuns(std::span<const ReplicaRun> runs, int64_t gpus) {
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
            std::max(m.peak_kv_utilization,
                     static_cast<double>(p.kv_blocks_used) / static_cast<double>(run.kv.blocks));
      }
    }
    m.passes += static_cast<int64_t>(run.passes.size());
    m.events += run.events;
    m.preemptions += run.preemptions;
    m.prefix_cache.query_tokens += run.prefix_cache.query_tokens;
    m.prefix_cache.hit_tokens += run.prefix_cache.hit_tokens;
    m.prefix_cache.evictions += run.prefix_cache.evictions;
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

namespace {

absl::StatusOr<PassBreakdown> AllStages(PassCostModel& cost, const BatchPass& pass) {
  PassBreakdown total;
  for (int64_t s = 0; s < cost.deployment().pp; ++s) {
    PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown b, cost.Breakdown(pass, s));
    total += b;
  }
  return total;
}

// `price(pass, every_rank)`: the pass's breakdown on the deployment, on one rank (the others
// idle) or on every rank of a DP-attention group.
using PricePass = absl::FunctionRef<absl::StatusOr<PassBreakdown>(const BatchPass&, bool)>;

absl::StatusOr<std::vector<PassAnatomy>> Anatomy(PricePass price,
                                                 std::span<const Request> requests,
                                                 const ServeMetrics& m) {
  double prompt = 0, output = 0;
  for (const Request& r : requests) {
    prompt += static_cast<double>(r.prompt_tokens);
    output += static_cast<double>(r.output_tokens);
  }
  const double n = static_cast<double>(requests.size());
  const int64_t mean_prompt = std::max<int64_t>(1, std::llround(prompt / n));
  const int64_t context = std::max<int64_t>(1, std::llround(prompt / n + output / (2 * n)));
  const int64_t batch = std::max<int64_t>(1, std::llround(m.mean_batch_sequences));
  std::vector<PassAnatomy> out;
  BatchPass prefill;
  prefill.prefills.push_back({.new_tokens = mean_prompt, .context = 0});
  prefill.emitting = 1;
  PROJECTOR_ASSIGN_OR_RETURN(PassBreakdown p, price(prefill, false));
  out.push_back({absl::StrCat("prefill of ", mean_prompt, " tokens"), p});
  BatchPass decode;
  decode.decode_sequences = batch;
  decode.decode_kv_tokens = batch * context;
  decode.emitting = batch;
  PROJECTOR_ASSIGN_OR_RETURN(PassBreakdown d, price(decode, true));
  out.push_back({absl::StrCat("decode of ", batch, " requests at ", context, " tokens"), d});
  return out;
}

// The metrics of the replicas' runs on the deployment's GPUs; replica 0's run for the timeline.
ServeResult ResultOf(const ServeOptions& options, std::vector<ReplicaRun> runs) {
  ServeResult result;
  result.gpus = options.deployment.NumGpus() * options.replicas;
  result.metrics = MeasureRuns(runs, result.gpus);
  result.metrics.prefix_caching = options.engine.prefix_caching;
  result.kv = runs.front().kv;
  result.first_replica = std::move(runs.front());
  return result;
}

// Replicas of a DP-attention group: every attention rank's run counts as a replica's for the
// metrics (its requests, its passes); the timeline is rank 0's of replica 0.
absl::StatusOr<ServeResult> ServeDpAttention(const ServeOptions& options,
                                             std::span<const Request> requests) {
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<DpAttentionCost> cost,
                             DpAttentionCost::Make(options.deployment));
  std::vector<ReplicaRun> runs;
  for (const std::vector<Request>& share : DealRoundRobin(requests, options.replicas)) {
    if (share.empty()) continue;
    PROJECTOR_ASSIGN_OR_RETURN(std::vector<ReplicaRun> ranks,
                               RunDpAttention(*cost, options.engine, share));
    for (ReplicaRun& run : ranks) runs.push_back(std::move(run));
  }
  ServeResult result = ResultOf(options, std::move(runs));
  std::vector<BatchPass> passes(static_cast<size_t>(cost->ranks()));
  auto price = [&](const BatchPass& pass, bool every_rank) {
    for (size_t r = 0; r < passes.size(); ++r) {
      if (r == 0 || every_rank) {
        passes[r] = pass;
      } else {
        passes[r].Clear();
      }
    }
    return cost->Breakdown(passes);
  };
  PROJECTOR_ASSIGN_OR_RETURN(result.anatomy, Anatomy(price, requests, result.metrics));
  result.priced_token_counts = cost->rank().PricedTokenCounts();
  return result;
}

}  // namespace

absl::Status ResolveServingKernels(Deployment& d) {
  PROJECTOR_ASSIGN_OR_RETURN(Scenario scenario, DefaultScenario());
  scenario.model = d.model;
  scenario.hw = d.hw;
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(scenario, "--gpu-arch"));
  d.hw = std::move(scenario.hw);
  return absl::OkStatus();
}

LatencyStats Summarize(std::vector<double>& values) {
  LatencyStats s;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  s.count = static_cast<int64_t>(values.size());
  s.mean = sum / static_cast<double>(values.size());
  s.p50 = PercentileOfSorted(values, 0.50);
  s.p90 = PercentileOfSorted(values, 0.90);
  s.p99 = PercentileOfSorted(values, 0.99);
  return s;
}

absl::StatusOr<ServeResult> Serve(const ServeOptions& options, std::span<const Request> requests) {
  if (options.replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas: must be >= 1, got ", options.replicas));
  }
  if (requests.empty()) return absl::InvalidArgumentError("the workload has no requests");
  if (options.deployment.dp_attention > 1) return ServeDpAttention(options, requests);
  PROJECTOR_ASSIGN_OR_RETURN(std::unique_ptr<PassCostModel> cost,
                             PassCostModel::Make(options.deployment));
  std::vector<ReplicaRun> runs;
  for (const std::vector<Request>& share : DealRoundRobin(requests, options.replicas)) {
    if (share.empty()) continue;
    PROJECTOR_ASSIGN_OR_RETURN(ReplicaRun run, RunReplica(*cost, options.engine, share));
    runs.push_back(std::move(run));
  }
  ServeResult result = ResultOf(options, std::move(runs));
  PROJECTOR_ASSIGN_OR_RETURN(
      result.anatomy,
      Anatomy([&](const BatchPass& pass, bool) { return AllStages(*cost, pass); }, requests,
              result.metrics));
  result.priced_token_counts = cost->PricedTokenCounts();
  return result;
}

}  // namespace projector
