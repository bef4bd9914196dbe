#include "report/serve_report.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "core/number_format.h"
#include "serving/kv_cache.h"

namespace projector {
namespace {

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
// The timeline in the JSON keeps at most this many evenly spaced passes.
constexpr size_t kTimelinePoints = 200;

nlohmann::json StatsJson(const LatencyStats& s) {
  return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}};
}

std::string StatsRow(std::string_view name, const LatencyStats& s) {
  return absl::StrFormat("  %-22s %10.2f %10.2f %10.2f %10.2f\n", std::string(name), s.mean,
                         s.p50, s.p90, s.p99);
}

std::string DeploymentLine(const ServeJob& job) {
  const Deployment& d = job.options.deployment;
  return absl::StrFormat("%s on %s, TP%d PP%d x %d replica%s (%d GPUs), weights %s, KV %s",
                         d.model.name, d.hw.gpu.name, d.tp, d.pp, job.options.replicas,
                         job.options.replicas == 1 ? "" : "s",
                         d.NumGpus() * job.options.replicas, DTypeName(d.weight_dtype),
                         DTypeName(d.kv_dtype));
}

std::string EngineLine(const EngineConfig& e) {
  std::string line = absl::StrFormat(
      "%s batching, max %d requests and %d tokens per pass, chunked prefill %s",
      BatchingModeName(e.batching), e.max_num_seqs, e.max_batched_tokens,
      e.chunked_prefill ? "on" : "off");
  absl::StrAppendFormat(&line, ", host overhead %g us per pass + %g us per request",
                        ToMicroseconds(e.pass_overhead), ToMicroseconds(e.request_overhead));
  return line;
}

}  // namespace

std::string ServeText(const ServeJob& job, const ServeResult& r) {
  const ServeMetrics& m = r.metrics;
  std::string out = "Serving projection (medium level of detail: one analytical cost per pass)\n";
  absl::StrAppend(&out, "  deployment ", DeploymentLine(job), "\n");
  absl::StrAppend(&out, "  engine     ", EngineLine(job.options.engine), "\n");
  absl::StrAppend(&out, "  workload   ", job.workload, "\n");
  absl::StrAppend(&out, "  KV cache   ", DescribeKvCache(r.kv), "\n\n");
  absl::StrAppend(&out, "Latency (ms)                 mean        p50        p90        p99\n");
  absl::StrAppend(&out, StatsRow("TTFT", m.ttft_ms));
  absl::StrAppend(&out, StatsRow("TPOT", m.tpot_ms));
  absl::StrAppend(&out, StatsRow("end-to-end", m.e2e_ms));
  absl::StrAppend(&out, "\nThroughput\n");
  absl::StrAppendFormat(&out, "  completed requests     %s in %.2f s\n",
                        FormatCount(m.completed), m.duration_s);
  absl::StrAppendFormat(&out, "  requests/s             %.2f\n", m.requests_per_s);
  absl::StrAppendFormat(&out, "  input tokens/s         %.1f\n", m.input_tokens_per_s);
  absl::StrAppendFormat(&out, "  output tokens/s        %.1f (%.1f per GPU)\n",
                        m.output_tokens_per_s, m.output_tokens_per_s_per_gpu);
  absl::StrAppendFormat(&out, "  total tokens/s/GPU     %.1f\n", m.total_tokens_per_s_per_gpu);
  absl::StrAppend(&out, "\nEngine\n");
  absl::StrAppendFormat(&out, "  passes                 %s (%.1f requests, %.1f new tokens each)\n",
                        FormatCount(m.passes), m.mean_batch_sequences, m.mean_batch_tokens);
  absl::StrAppendFormat(&out, "  peak KV-cache use      %.1f%%\n", 100.0 * m.peak_kv_utilization);
  absl::StrAppendFormat(&out, "  preemptions            %s\n", FormatCount(m.preemptions));
  return out;
}

nlohmann::json ServeJson(const ServeJob& job, const ServeResult& r) {
  const ServeMetrics& m = r.metrics;
  const Deployment& d = job.options.deployment;
  const EngineConfig& e = job.options.engine;
  nlohmann::json timeline = nlohmann::json::array();
  const std::vector<PassSample>& passes = r.first_replica.passes;
  const size_t stride = std::max<size_t>(1, (passes.size() + kTimelinePoints - 1) / kTimelinePoints);
  for (size_t i = 0; i < passes.size(); i += stride) {
    const PassSample& p = passes[i];
    timeline.push_back({{"time_s", p.time_s},
                        {"running", p.running},
                        {"waiting", p.waiting},
                        {"batch_sequences", p.batch_sequences},
                        {"batch_tokens", p.batch_tokens},
                        {"kv_utilization", r.kv.blocks > 0
                                               ? static_cast<double>(p.kv_blocks_used) /
                                                     static_cast<double>(r.kv.blocks)
                                               : 0.0}});
  }
  return {
      {"level_of_detail", "medium"},
      {"deployment",
       {{"model", d.model.name},
        {"gpu", d.hw.gpu.name},
        {"tp", d.tp},
        {"pp", d.pp},
        {"replicas", job.options.replicas},
        {"num_gpus", r.gpus},
        {"precision", DTypeName(d.weight_dtype)},
        {"kv_precision", DTypeName(d.kv_dtype)}}},
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
      {"timeline", timeline},
  };
}

}  // namespace projector
