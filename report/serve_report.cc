#include "report/serve_report.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "core/number_format.h"
#include "serving/kv_cache.h"

namespace projector {
namespace {

constexpr double kGib = Gibibytes(1).value();  // core/units.h
// The timeline in the JSON keeps at most this many evenly spaced passes.
constexpr size_t kTimelinePoints = 200;

nlohmann::json StatsJson(const LatencyStats& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

std::string StatsRow(std::string_view name, const LatencyStats& s) {
  return absl::StrFormat("  %-22s %10.2f %10.2f %10.2f %10.2f\n", std::string(name), s.mean, s.p50,
                         s.p90, s.p99);
}

// How the MoE's tokens travel under DeepEP, by mode.
std::string DeepEpWords(DeepEpMode mode) {
  switch (mode) {
    case DeepEpMode::kAuto:
      return "DeepEP all-to-all: normal kernels for passes with a prefill, low-latency for "
             "decode-only passes";
    case DeepEpMode::kNormal:
      return "DeepEP's normal all-to-all";
    case DeepEpMode::kLowLatency:
      return "DeepEP's low-latency all-to-all";
  }
  return "DeepEP";
}

std::string DeploymentLine(const ServeJob& job) {
  const Deployment& d = job.options.deployment;
  const std::string dp_attention =
      d.dp_attention > 1
          ? absl::StrFormat(" (attention DP%d x TP%d, KV cache per rank, MoE by %s%s)",
                            d.dp_attention, d.tp / d.dp_attention,
                            d.deepep ? DeepEpWords(d.deepep_mode) : "gather and scatter",
                            d.two_batch_overlap ? "; two-batch overlap" : "")
          : "";
  return absl::StrFormat("%s on %s, TP%d PP%d%s%s x %d replica%s (%d GPUs), weights %s, KV %s",
                         d.model.name, d.hw.gpu.name, d.tp, d.pp, dp_attention,
                         d.expert_parallel ? " (experts spread over TP)" : "", job.options.replicas,
                         job.options.replicas == 1 ? "" : "s", d.NumGpus() * job.options.replicas,
                         DTypeName(d.weight_dtype), DTypeName(d.kv_dtype));
}

std::string EngineLine(const EngineConfig& e) {
  std::string line =
      absl::StrFormat("%s batching, max %d requests and %d tokens per pass, chunked prefill %s",
                      BatchingModeName(e.batching), e.max_num_seqs, e.max_batched_tokens,
                      e.chunked_prefill ? "on" : "off");
  absl::StrAppendFormat(&line, ", host overhead %g us per pass + %g us per request",
                        ToMicroseconds(e.pass_overhead), ToMicroseconds(e.request_overhead));
  if (e.prefix_caching) line += ", prefix caching on";
  if (e.slow_gpu.gpu >= 0) {
    absl::StrAppendFormat(&line, ", GPU %d of each replica %gx slower", e.slow_gpu.gpu,
                          e.slow_gpu.factor);
  }
  return line;
}

}  // namespace

std::string ServeText(const ServeJob& job, const ServeResult& r) {
  const ServeMetrics& m = r.metrics;
  std::string out = job.options.engine.lod == LevelOfDetail::kHigh
                        ? absl::StrFormat(
                              "Serving projection (high level of detail: every pass replayed as "
                              "events per layer and collective step, %s events)\n",
                              FormatCount(m.events))
                        : std::string(
                              "Serving projection (medium level of detail: one analytical cost per "
                              "pass)\n");
  absl::StrAppend(&out, "  deployment ", DeploymentLine(job), "\n");
  absl::StrAppend(&out, "  engine     ", EngineLine(job.options.engine), "\n");
  absl::StrAppend(&out, "  workload   ", job.workload, "\n");
  absl::StrAppend(&out, "  KV cache   ", DescribeKvCache(r.kv), "\n\n");
  absl::StrAppend(&out, "Latency (ms)                 mean        p50        p90        p99\n");
  absl::StrAppend(&out, StatsRow("TTFT", m.ttft_ms));
  absl::StrAppend(&out, StatsRow("TPOT", m.tpot_ms));
  absl::StrAppend(&out, StatsRow("end-to-end", m.e2e_ms));
  absl::StrAppend(&out, "\nThroughput\n");
  absl::StrAppendFormat(&out, "  completed requests     %s in %.2f s\n", FormatCount(m.completed),
                        m.duration_s);
  absl::StrAppendFormat(&out, "  requests/s             %.2f\n", m.requests_per_s);
  absl::StrAppendFormat(&out, "  input tokens/s         %.1f\n", m.input_tokens_per_s);
  absl::StrAppendFormat(&out, "  output tokens/s        %.1f (%.1f per GPU)\n",
                        m.output_tokens_per_s, m.output_tokens_per_s_per_gpu);
  absl::StrAppendFormat(&out, "  total tokens/s/GPU     %.1f\n", m.total_tokens_per_s_per_gpu);
  absl::StrAppendFormat(&out, "\n%-42s %8s %13s %12s %9s %12s %9s %9s\n",
                        "Pass anatomy (ms, all stages)", "linear", "prefill-attn", "decode-attn",
                        "TP comm", "head+embed", "PP send", "total");
  for (const PassAnatomy& a : r.anatomy) {
    const PassBreakdown& b = a.time;
    absl::StrAppendFormat(&out, "  %-40s %8.3f %13.3f %12.3f %9.3f %12.3f %9.3f %9.3f\n", a.label,
                          ToMilliseconds(b.linear), ToMilliseconds(b.prefill_attention),
                          ToMilliseconds(b.decode_attention), ToMilliseconds(b.tp_comm),
                          ToMilliseconds(b.head), ToMilliseconds(b.pp_send),
                          ToMilliseconds(b.Total()));
  }
  absl::StrAppend(&out, "\nEngine\n");
  absl::StrAppendFormat(&out, "  passes                 %s (%.1f requests, %.1f new tokens each)\n",
                        FormatCount(m.passes), m.mean_batch_sequences, m.mean_batch_tokens);
  absl::StrAppendFormat(&out, "  peak KV-cache use      %.1f%%\n", 100.0 * m.peak_kv_utilization);
  absl::StrAppendFormat(&out, "  preemptions            %s\n", FormatCount(m.preemptions));
  if (m.prefix_caching) {
    absl::StrAppendFormat(
        &out, "  prefix cache           %.1f%% hit: %s of %s prompt tokens looked up, %s evicted\n",
        100.0 * m.prefix_cache.HitRate(), FormatCount(m.prefix_cache.hit_tokens),
        FormatCount(m.prefix_cache.query_tokens),
        m.prefix_cache.evictions == 1
            ? std::string("1 prefix")
            : absl::StrCat(FormatCount(m.prefix_cache.evictions), " prefixes"));
  }
  return out;
}

nlohmann::json ServeJson(const ServeJob& job, const ServeResult& r) {
  const ServeMetrics& m = r.metrics;
  const Deployment& d = job.options.deployment;
  const EngineConfig& e = job.options.engine;
  nlohmann::json timeline = nlohmann::json::array();
  const std::vector<PassSample>& passes = r.first_replica.passes;
  const size_t stride =
      std::max<size_t>(1, (passes.size() + kTimelinePoints - 1) / kTimelinePoints);
  for (size_t i = 0; i < passes.size(); i += stride) {
    const PassSample& p = passes[i];
    timeline.push_back({{"time_s", p.time_s},
                        {"running", p.running},
                        {"waiting", p.waiting},
                        {"batch_sequences", p.batch_sequences},
                        {"batch_tokens", p.batch_tokens},
                        {"preemptions", p.preemptions},
                        {"kv_utilization", r.kv.blocks > 0 ? static_cast<double>(p.kv_blocks_used) /
                                                                 static_cast<double>(r.kv.blocks)
                                                           : 0.0}});
  }
  return {
      {"level_of_detail", LevelOfDetailName(e.lod)},
      {"events", m.events},
      {"deployment",
       {{"model", d.model.name},
        {"gpu", d.hw.gpu.name},
        {"tp", d.tp},
        {"pp", d.pp},
        {"replicas", job.options.replicas},
        {"num_gpus", r.gpus},
        {"precision", DTypeName(d.weight_dtype)},
        {"kv_precision", DTypeName(d.kv_dtype)},
        {"expert_parallel", d.expert_parallel},
        {"dp_attention", d.dp_attention},
        {"deepep", d.deepep},
        {"deepep_mode", d.deepep ? nlohmann::json(DeepEpModeName(d.deepep_mode)) : nullptr},
        {"two_batch_overlap", d.two_batch_overlap}}},
      {"engine",
       {{"batching", BatchingModeName(e.batching)},
        {"max_num_seqs", e.max_num_seqs},
        {"max_batched_tokens", e.max_batched_tokens},
        {"chunked_prefill", e.chunked_prefill},
        {"gpu_memory_utilization", e.kv.memory_utilization},
        {"block_size", e.kv.block_size},
        {"concurrency", e.concurrency},
        {"pass_overhead_us", ToMicroseconds(e.pass_overhead)},
        {"request_overhead_us", ToMicroseconds(e.request_overhead)}}},
      {"workload", job.workload},
      {"kv_cache",
       {{"blocks", r.kv.blocks},
        {"block_size", r.kv.block_size},
        {"tokens", r.kv.Tokens()},
        {"hbm_gib", r.kv.hbm.value() / kGib},
        {"weights_gib", r.kv.weights.value() / kGib},
        {"activations_gib", r.kv.activations.value() / kGib},
        {"runtime_gib", r.kv.runtime.value() / kGib},
        {"deepep_buffers_gib", r.kv.deepep_buffers.value() / kGib},
        {"cache_gib", r.kv.per_block.value() * static_cast<double>(r.kv.blocks) / kGib}}},
      {"ttft_ms", StatsJson(m.ttft_ms)},
      {"tpot_ms", StatsJson(m.tpot_ms)},
      {"e2e_ms", StatsJson(m.e2e_ms)},
      {"completed", m.completed},
      {"duration_s", m.duration_s},
      {"requests_per_s", m.requests_per_s},
      {"input_tokens_per_s", m.input_tokens_per_s},
      {"output_tokens_per_s", m.output_tokens_per_s},
      {"output_tokens_per_s_per_gpu", m.output_tokens_per_s_per_gpu},
      {"total_tokens_per_s_per_gpu", m.total_tokens_per_s_per_gpu},
      {"passes", m.passes},
      {"mean_batch_sequences", m.mean_batch_sequences},
      {"mean_batch_tokens", m.mean_batch_tokens},
      {"peak_kv_utilization", m.peak_kv_utilization},
      {"preemptions", m.preemptions},
      {"prefix_cache", m.prefix_caching
                           ? nlohmann::json{{"query_tokens", m.prefix_cache.query_tokens},
                                            {"hit_tokens", m.prefix_cache.hit_tokens},
                                            {"hit_rate", m.prefix_cache.HitRate()},
                                            {"evictions", m.prefix_cache.evictions}}
                           : nlohmann::json(nullptr)},
      {"timeline", timeline},
  };
}

std::string ServeValidationText(const ServeValidation& v) {
  std::string out = absl::StrCat("Serving validation: ", v.cases_file, " (", v.cases.size(),
                                 " cases, ", v.figures.size(), " published figures)\n\n");
  absl::StrAppendFormat(&out, "  %-52s %-7s %-42s %-32s\n", "case", "engine", "deployment",
                        "workload");
  for (const ServeCaseSummary& c : v.cases) {
    absl::StrAppendFormat(&out, "  %-52s %-7s %-42s %-32s\n", c.id, c.engine, c.deployment,
                          c.workload);
  }
  absl::StrAppendFormat(&out, "\n  %-52s %-28s %12s %12s %8s\n", "case", "figure", "measured",
                        "projected", "error");
  for (const ServeFigure& f : v.figures) {
    absl::StrAppendFormat(&out, "  %-52s %-28s %12.2f %12.2f %+7.1f%%\n", f.case_id, f.metric,
                          f.measured, f.projected, f.error_pct);
  }
  absl::StrAppendFormat(&out, "\nmedian |error| %.1f%%, %d of %d figures within 20%%\n",
                        v.median_abs_error_pct, v.within_20_pct, v.figures.size());
  return out;
}

nlohmann::json ServeValidationJson(const ServeValidation& v) {
  nlohmann::json figures = nlohmann::json::array();
  for (const ServeFigure& f : v.figures) {
    figures.push_back({{"case", f.case_id},
                       {"metric", f.metric},
                       {"measured", f.measured},
                       {"projected", f.projected},
                       {"error_pct", f.error_pct}});
  }
  nlohmann::json cases = nlohmann::json::array();
  for (const ServeCaseSummary& c : v.cases) {
    cases.push_back({{"id", c.id},
                     {"engine", c.engine},
                     {"deployment", c.deployment},
                     {"workload", c.workload}});
  }
  return {{"cases_file", v.cases_file},
          {"cases", cases},
          {"figures", figures},
          {"median_abs_error_pct", v.median_abs_error_pct},
          {"within_20_pct", v.within_20_pct}};
}

namespace {

std::string TargetPhrase(const SloTarget& slo) {
  return absl::StrFormat("p%d TTFT <= %g ms and p%d TPOT <= %g ms", slo.percentile, slo.ttft_ms,
                         slo.percentile, slo.tpot_ms);
}

std::string ResultLine(const SloTarget& slo, const SloSearchResult& r) {
  if (!r.found) return r.why_not;
  const ServeMetrics& m = r.at_max;
  return absl::StrFormat(
      "%.3g req/s meets the target: p%d TTFT %.1f ms, p%d TPOT %.2f ms; %.1f output tokens/s "
      "(%.1f per GPU)%s",
      r.max_qps, slo.percentile, SloTtft(m, slo), slo.percentile, SloTpot(m, slo),
      m.output_tokens_per_s, m.output_tokens_per_s_per_gpu,
      r.max_qps >= r.capacity_qps ? " (at the deployment's capacity: the target does not bind)"
                                  : "");
}

nlohmann::json SloResultJson(const SloTarget& slo, const SloSearchResult& r) {
  nlohmann::json probes = nlohmann::json::array();
  for (const SloProbe& p : r.probes) {
    probes.push_back(
        {{"qps", p.qps}, {"ttft_ms", p.ttft_ms}, {"tpot_ms", p.tpot_ms}, {"meets", p.meets}});
  }
  nlohmann::json out = {{"found", r.found},
                        {"max_qps", r.max_qps},
                        {"capacity_qps", r.capacity_qps},
                        {"probes", probes}};
  if (r.found) {
    out["ttft_ms"] = SloTtft(r.at_max, slo);
    out["tpot_ms"] = SloTpot(r.at_max, slo);
    out["output_tokens_per_s"] = r.at_max.output_tokens_per_s;
    out["output_tokens_per_s_per_gpu"] = r.at_max.output_tokens_per_s_per_gpu;
  } else {
    out["why_not"] = r.why_not;
  }
  return out;
}

nlohmann::json TargetJson(const SloTarget& slo) {
  return {{"ttft_ms", slo.ttft_ms}, {"tpot_ms", slo.tpot_ms}, {"percentile", slo.percentile}};
}

}  // namespace

std::string PoolsLine(const DisaggregatedOptions& pools) {
  auto pool = [](const PoolConfig& p) {
    return absl::StrFormat("TP%d x %d on %s", p.deployment.tp, p.replicas,
                           p.deployment.hw.gpu.name);
  };
  return absl::StrCat("prefill pool ", pool(pools.prefill), ", decode pool ", pool(pools.decode));
}

std::string SloSearchText(const ServeJob& job, const SloTarget& slo, const SloSearchResult& r,
                          const DisaggregatedOptions* pools) {
  std::string out = absl::StrCat("Highest arrival rate under ", TargetPhrase(slo), "\n");
  absl::StrAppend(&out, "  deployment ", pools != nullptr ? PoolsLine(*pools) : DeploymentLine(job),
                  "\n");
  absl::StrAppend(&out, "  engine     ", EngineLine(job.options.engine), "\n");
  absl::StrAppend(&out, "  workload   ", job.workload, "\n");
  absl::StrAppendFormat(&out, "  capacity   %.3g req/s with every request at once\n\n",
                        r.capacity_qps);
  absl::StrAppendFormat(&out, "  %12s %14s %14s  %s\n", "req/s",
                        absl::StrFormat("p%d TTFT ms", slo.percentile),
                        absl::StrFormat("p%d TPOT ms", slo.percentile), "meets");
  for (const SloProbe& p : r.probes) {
    absl::StrAppendFormat(&out, "  %12.4g %14.1f %14.2f  %s\n", p.qps, p.ttft_ms, p.tpot_ms,
                          p.meets ? "yes" : "no");
  }
  absl::StrAppend(&out, "\n", ResultLine(slo, r), "\n");
  return out;
}

nlohmann::json SloSearchJson(const ServeJob& job, const SloTarget& slo, const SloSearchResult& r,
                             const DisaggregatedOptions* pools) {
  nlohmann::json out = SloResultJson(slo, r);
  out["target"] = TargetJson(slo);
  out["workload"] = job.workload;
  out["deployment"] = pools != nullptr ? PoolsLine(*pools) : DeploymentLine(job);
  return out;
}

std::string PoolSplitText(const ServeJob& job, const SloRequest& slo,
                          const DisaggregatedOptions& pools, const std::vector<PoolSplit>& splits) {
  const Deployment& d = job.options.deployment;
  std::string out = absl::StrFormat(
      "Prefill/decode splits of %d GPUs for %s under %s\n  prefill replicas TP%d on %s, decode "
      "replicas TP%d on %s\n",
      slo.num_gpus, d.model.name, TargetPhrase(slo.target), pools.prefill.deployment.tp,
      pools.prefill.deployment.hw.gpu.name, pools.decode.deployment.tp,
      pools.decode.deployment.hw.gpu.name);
  absl::StrAppend(&out, "  workload   ", job.workload, "\n\n");
  absl::StrAppendFormat(&out, "  %4s %8s %8s %12s %14s %14s %16s\n", "rank", "prefill", "decode",
                        "max req/s", absl::StrFormat("p%d TTFT ms", slo.target.percentile),
                        absl::StrFormat("p%d TPOT ms", slo.target.percentile), "out tok/s/GPU");
  int rank = 0;
  for (const PoolSplit& p : splits) {
    if (!p.fits) {
      absl::StrAppendFormat(&out, "  %4s %8d %8d  not evaluated: %s\n", "-", p.prefill_replicas,
                            p.decode_replicas, p.problem);
    } else if (!p.result.found) {
      absl::StrAppendFormat(&out, "  %4s %8d %8d  no rate meets the target\n", "-",
                            p.prefill_replicas, p.decode_replicas);
    } else {
      absl::StrAppendFormat(&out, "  %4d %8d %8d %12.4g %14.1f %14.2f %16.1f\n", ++rank,
                            p.prefill_replicas, p.decode_replicas, p.result.max_qps,
                            SloTtft(p.result.at_max, slo.target),
                            SloTpot(p.result.at_max, slo.target), p.output_tokens_per_s_per_gpu);
    }
  }
  if (rank == 0) absl::StrAppend(&out, "\nNo split meets the target.\n");
  return out;
}

nlohmann::json PoolSplitJson(const ServeJob& job, const SloRequest& slo,
                             const DisaggregatedOptions& pools,
                             const std::vector<PoolSplit>& splits) {
  nlohmann::json rows = nlohmann::json::array();
  for (const PoolSplit& p : splits) {
    nlohmann::json row = {{"prefill_replicas", p.prefill_replicas},
                          {"decode_replicas", p.decode_replicas},
                          {"fits", p.fits}};
    if (!p.fits) {
      row["problem"] = p.problem;
    } else {
      row["result"] = SloResultJson(slo.target, p.result);
      row["output_tokens_per_s_per_gpu"] = p.output_tokens_per_s_per_gpu;
    }
    rows.push_back(row);
  }
  return {{"num_gpus", slo.num_gpus},
          {"prefill_tp", pools.prefill.deployment.tp},
          {"decode_tp", pools.decode.deployment.tp},
          {"target", TargetJson(slo.target)},
          {"workload", job.workload},
          {"splits", rows}};
}

std::string LayoutSearchText(const ServeJob& job, const SloRequest& slo,
                             const std::vector<ServingLayout>& layouts) {
  const Deployment& d = job.options.deployment;
  std::string out = absl::StrFormat("Serving layouts of %d x %s for %s under %s\n", slo.num_gpus,
                                    d.hw.gpu.name, d.model.name, TargetPhrase(slo.target));
  absl::StrAppend(&out, "  workload   ", job.workload, "\n\n");
  absl::StrAppendFormat(&out, "  %4s %4s %4s %7s %6s %8s %12s %14s %14s %16s\n", "rank", "TP",
                        "PP", "attn DP", "DeepEP", "replicas", "max req/s",
                        absl::StrFormat("p%d TTFT ms", slo.target.percentile),
                        absl::StrFormat("p%d TPOT ms", slo.target.percentile), "out tok/s/GPU");
  int rank = 0;
  for (const ServingLayout& l : layouts) {
    const std::string head =
        absl::StrFormat("%4d %4d %7d %6s %8d", l.tp, l.pp, l.dp_attention,
                        l.deepep ? "auto" : "-", l.replicas);
    if (!l.fits) {
      absl::StrAppendFormat(&out, "  %4s %s  not evaluated: %s\n", "-", head, l.problem);
    } else if (!l.result.found) {
      absl::StrAppendFormat(&out, "  %4s %s  no rate meets the target\n", "-", head);
    } else {
      absl::StrAppendFormat(&out, "  %4d %s %12.4g %14.1f %14.2f %16.1f\n", ++rank, head,
                            l.result.max_qps, SloTtft(l.result.at_max, slo.target),
                            SloTpot(l.result.at_max, slo.target), l.output_tokens_per_s_per_gpu);
    }
  }
  if (rank == 0) absl::StrAppend(&out, "\nNo layout meets the target.\n");
  return out;
}

nlohmann::json LayoutSearchJson(const ServeJob& job, const SloRequest& slo,
                                const std::vector<ServingLayout>& layouts) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ServingLayout& l : layouts) {
    nlohmann::json row = {{"tp", l.tp},
                          {"pp", l.pp},
                          {"dp_attention", l.dp_attention},
                          {"deepep", l.deepep},
                          {"replicas", l.replicas},
                          {"fits", l.fits}};
    if (!l.fits) {
      row["problem"] = l.problem;
    } else {
      row["result"] = SloResultJson(slo.target, l.result);
      row["output_tokens_per_s_per_gpu"] = l.output_tokens_per_s_per_gpu;
    }
    rows.push_back(row);
  }
  return {{"num_gpus", slo.num_gpus},
          {"target", TargetJson(slo.target)},
          {"workload", job.workload},
          {"layouts", rows}};
}

namespace {

int64_t MeanPrompt(const ServeJob& job) {
  double sum = 0;
  for (const Request& r : job.requests) sum += static_cast<double>(r.prompt_tokens);
  return job.requests.empty() ? 0 : std::llround(sum / static_cast<double>(job.requests.size()));
}

std::string PoolLine(const PoolConfig& pool, const KvCacheSizing& kv) {
  const Deployment& d = pool.deployment;
  const std::string deepep =
      d.deepep ? absl::StrCat(", DeepEP ", std::string(DeepEpModeName(d.deepep_mode)),
                              d.two_batch_overlap ? ", two-batch overlap" : "")
               : "";
  const std::string dp_attention =
      d.dp_attention > 1 ? absl::StrFormat(" (attention DP%d x TP%d%s)", d.dp_attention,
                                           d.tp / d.dp_attention, deepep)
                         : "";
  return absl::StrFormat("TP%d%s x %d replica%s on %s (%d GPUs), KV cache %s tokens per %s",
                         d.tp, dp_attention, pool.replicas, pool.replicas == 1 ? "" : "s",
                         d.hw.gpu.name, d.NumGpus() * pool.replicas, FormatCount(kv.Tokens()),
                         d.dp_attention > 1 ? "attention rank" : "replica");
}

nlohmann::json MetricsJson(const ServeMetrics& m, int64_t gpus) {
  return {{"num_gpus", gpus},
          {"ttft_ms", StatsJson(m.ttft_ms)},
          {"tpot_ms", StatsJson(m.tpot_ms)},
          {"e2e_ms", StatsJson(m.e2e_ms)},
          {"requests_per_s", m.requests_per_s},
          {"output_tokens_per_s", m.output_tokens_per_s},
          {"output_tokens_per_s_per_gpu", m.output_tokens_per_s_per_gpu},
          {"completed", m.completed},
          {"preemptions", m.preemptions}};
}

}  // namespace

std::string DisaggregatedText(const ServeJob& job, const DisaggregatedOptions& pools,
                              const ServeResult& aggregated, const DisaggregatedResult& split) {
  const Deployment& d = job.options.deployment;
  std::string out = absl::StrCat("Disaggregated against aggregated serving of ", d.model.name,
                                 " (medium level of detail)\n");
  absl::StrAppend(&out, "  workload      ", job.workload, "\n");
  absl::StrAppend(&out, "  aggregated    ", DeploymentLine(job), "\n");
  absl::StrAppend(&out, "  prefill pool  ", PoolLine(pools.prefill, split.prefill_kv), "\n");
  absl::StrAppend(&out, "  decode pool   ", PoolLine(pools.decode, split.decode_kv), "\n");
  absl::StrAppendFormat(&out,
                        "  KV transfer   %.2f ms mean, %.2f ms p99 per request (%.1f MB for the "
                        "mean prompt), over the prefill GPUs' NICs\n\n",
                        split.transfer_ms.mean, split.transfer_ms.p99,
                        KvTransferBytes(pools.decode.deployment, MeanPrompt(job)).value() / 1e6);
  const ServeMetrics& a = aggregated.metrics;
  const ServeMetrics& b = split.metrics;
  absl::StrAppendFormat(&out, "  %-28s %16s %16s\n", "", "aggregated", "disaggregated");
  auto row = [&out](std::string_view name, double x, double y, int digits) {
    absl::StrAppendFormat(&out, "  %-28s %16.*f %16.*f\n", std::string(name), digits, x, digits, y);
  };
  row("GPUs", static_cast<double>(aggregated.gpus), static_cast<double>(split.gpus), 0);
  row("TTFT p50 (ms)", a.ttft_ms.p50, b.ttft_ms.p50, 1);
  row("TTFT p90 (ms)", a.ttft_ms.p90, b.ttft_ms.p90, 1);
  row("TTFT p99 (ms)", a.ttft_ms.p99, b.ttft_ms.p99, 1);
  row("TPOT p50 (ms)", a.tpot_ms.p50, b.tpot_ms.p50, 2);
  row("TPOT p90 (ms)", a.tpot_ms.p90, b.tpot_ms.p90, 2);
  row("TPOT p99 (ms)", a.tpot_ms.p99, b.tpot_ms.p99, 2);
  row("end-to-end p50 (ms)", a.e2e_ms.p50, b.e2e_ms.p50, 0);
  row("end-to-end p99 (ms)", a.e2e_ms.p99, b.e2e_ms.p99, 0);
  row("requests/s", a.requests_per_s, b.requests_per_s, 2);
  row("output tokens/s per GPU", a.output_tokens_per_s_per_gpu, b.output_tokens_per_s_per_gpu, 1);
  row("preemptions", static_cast<double>(a.preemptions), static_cast<double>(b.preemptions), 0);
  if (a.prefix_caching) {
    // Disaggregated, the prompts meet the cache in the prefill pool.
    row("prefix cache hit (%)", 100.0 * a.prefix_cache.HitRate(),
        100.0 * split.prefill_pool.prefix_cache.HitRate(), 1);
  }
  return out;
}

nlohmann::json DisaggregatedJson(const ServeJob& job, const DisaggregatedOptions& pools,
                                 const ServeResult& aggregated, const DisaggregatedResult& split) {
  auto pool_json = [](const PoolConfig& p, const KvCacheSizing& kv, const ServeMetrics& m) {
    return nlohmann::json{
        {"tp", p.deployment.tp},
        {"dp_attention", p.deployment.dp_attention},
        {"deepep", p.deployment.deepep},
        {"deepep_mode", p.deployment.deepep
                            ? nlohmann::json(DeepEpModeName(p.deployment.deepep_mode))
                            : nullptr},
        {"two_batch_overlap", p.deployment.two_batch_overlap},
        {"replicas", p.replicas},
        {"gpu", p.deployment.hw.gpu.name},
        {"kv_cache_tokens", kv.Tokens()},
        {"passes", m.passes},
        {"mean_batch_sequences", m.mean_batch_sequences},
        {"peak_kv_utilization", m.peak_kv_utilization},
        {"prefix_cache_hit_rate",
         m.prefix_caching ? nlohmann::json(m.prefix_cache.HitRate()) : nlohmann::json(nullptr)}};
  };
  return {{"workload", job.workload},
          {"aggregated", MetricsJson(aggregated.metrics, aggregated.gpus)},
          {"disaggregated", MetricsJson(split.metrics, split.gpus)},
          {"prefill_pool", pool_json(pools.prefill, split.prefill_kv, split.prefill_pool)},
          {"decode_pool", pool_json(pools.decode, split.decode_kv, split.decode_pool)},
          {"kv_transfer_ms", StatsJson(split.transfer_ms)}};
}

}  // namespace projector
