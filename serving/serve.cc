#include "serving/serve.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/statistics.h"
#include "core/status_macros.h"
#include "scenario/scenario.h"

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

PassBreakdown Sum(const PassBreakdown& a, const PassBreakdown& b) {
  return PassBreakdown{.linear = a.linear + b.linear,
                       .prefill_attention = a.prefill_attention + b.prefill_attention,
                       .decode_attention = a.decode_attention + b.decode_attention,
                       .tp_comm = a.tp_comm + b.tp_comm,
                       .head = a.head + b.head,
                       .pp_send = a.pp_send + b.pp_send};
}

absl::StatusOr<PassBreakdown> AllStages(PassCostModel& cost, const BatchPass& pass) {
  PassBreakdown total;
  for (int64_t s = 0; s < cost.deployment().pp; ++s) {
    PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown b, cost.Breakdown(pass, s));
    total = Sum(total, b);
  }
  return total;
}

absl::StatusOr<std::vector<PassAnatomy>> Anatomy(PassCostModel& cost,
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
  PROJECTOR_ASSIGN_OR_RETURN(PassBreakdown p, AllStages(cost, prefill));
  out.push_back({absl::StrCat("prefill of ", mean_prompt, " tokens"), p});
  BatchPass decode;
  decode.decode_sequences = batch;
  decode.decode_kv_tokens = batch * context;
  decode.emitting = batch;
  PROJECTOR_ASSIGN_OR_RETURN(PassBreakdown d, AllStages(cost, decode));
  out.push_back({absl::StrCat("decode of ", batch, " requests at ", context, " tokens"), d});
  return out;
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
  result.metrics = MeasureRuns(runs, result.gpus);
  result.metrics.prefix_caching = options.engine.prefix_caching;
  result.kv = runs.front().kv;
  result.first_replica = std::move(runs.front());
  PROJECTOR_ASSIGN_OR_RETURN(result.anatomy, Anatomy(*cost, requests, result.metrics));
  result.priced_token_counts = cost->PricedTokenCounts();
  return result;
}

}  // namespace projector
