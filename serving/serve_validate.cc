#include "serving/serve_validate.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/json_reader.h"
#include "core/statistics.h"
#include "core/status_macros.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"

namespace projector {
namespace {

// ShareGPT_V3 as the SGLang and vLLM serving benchmarks sample it (bench_serving /
// benchmark_serving: conversations' first turn and its answer, very short and very long pairs
// filtered). Mean output 194 tokens: the SGLang benchmark's own offline runs of 5,000 sampled
// requests report 194.3 output tokens per request (output tokens/s over requests/s, the same
// for SGLang and vLLM on A100 and H100). Mean input 1.11 times the output: a public vLLM
// benchmark_serving log of 500 ShareGPT_V3 prompts counts 117,316 input and 105,842 generated
// tokens. Both lengths heavy-tailed, lognormal with a coefficient of variation of 1 (an
// assumption: the filter keeps prompts within 1,024 tokens and pairs within 2,048).
constexpr double kShareGptOutputMean = 194.0;
constexpr double kShareGptInputOverOutput = 117316.0 / 105842.0;
constexpr double kShareGptSpread = 1.0;
constexpr int64_t kShareGptMaxInput = 1024;
constexpr int64_t kShareGptMaxOutput = 1024;

// vLLM 0.6: --max-num-seqs 256 and, with chunked prefill off below 32K of context, a token
// budget of max(max_model_len, 2048) per pass (vLLM engine arguments); the benchmark ran
// --max_model_len 4096 and the default --gpu-memory-utilization 0.9.
constexpr int64_t kVllm06MaxNumSeqs = 256;
constexpr int64_t kVllm06MaxModelLen = 4096;
// vLLM's host work between two passes (scheduling, input preparation, the sampled tokens' copy
// and output processing) leaves the GPU idle for about 4 ms per decode step on Llama-3-8B and
// one H100 (vLLM RFC #6854, "Multi-Step Scheduling", the profiles' ~4 ms bubbles; 5-13 ms
// across its runs); --num-scheduler-steps N pays it once per N passes. The benchmark ran N = 10.
constexpr double kVllmHostBubbleMs = 4.0;
constexpr double kVllmSchedulerSteps = 10.0;
// SGLang 0.3: prefill chunked at 8192 tokens (ServerArgs chunked_prefill_size), running
// requests bounded by the KV pool only, prefill and decode in separate passes (mixed chunks are
// opt-in, --enable-mixed-chunk), --mem-fraction-static 0.88 (the benchmark's setting). vLLM 0.6
// without chunked prefill also runs prefill-only and decode-only passes.
constexpr int64_t kSglangChunkedPrefill = 8192;
constexpr double kSglangMemFraction = 0.88;
// TensorRT-LLM 0.9 gptSessionBenchmark: one static batch, KV cache preallocated from 90% of
// the free memory (kv_cache_free_gpu_mem_fraction 0.9).
constexpr double kTrtllmMemFraction = 0.9;

struct CaseRun {
  ServeCaseSummary summary;
  ServeOptions options;
  std::vector<Request> requests;
  std::vector<std::pair<std::string, double>> measured;
};

absl::StatusOr<EngineConfig> EngineForCase(JsonObject& c, const std::string& engine,
                                           const std::string& kind, int64_t batch) {
  EngineConfig e;
  if (engine == "trtllm") {
    e.batching = kind == "static_batch" ? BatchingMode::kStatic : BatchingMode::kContinuous;
    e.max_num_seqs = std::max<int64_t>(batch, 1);
    e.kv.memory_utilization = kTrtllmMemFraction;
  } else if (engine == "vllm") {
    e.max_num_seqs = kVllm06MaxNumSeqs;
    e.chunked_prefill = false;
    e.mixed_batches = false;
    e.pass_overhead = Milliseconds(kVllmHostBubbleMs / kVllmSchedulerSteps);
    e.max_batched_tokens = std::max<int64_t>(kVllm06MaxModelLen, 2048);
  } else if (engine == "sglang") {
    e.max_num_seqs = int64_t{1} << 20;
    e.max_batched_tokens = kSglangChunkedPrefill;
    e.mixed_batches = false;
    e.kv.memory_utilization = kSglangMemFraction;
  } else {
    return c.FieldError("engine", absl::StrCat("'", engine,
                                               "' is not a modelled engine; "
                                               "accepted: trtllm, vllm, sglang"));
  }
  return e;
}

LengthSpec ShareGpt(double mean, int64_t max) {
  return LengthSpec{.distribution = LengthDistribution::kLognormal,
                    .mean = mean,
                    .spread = kShareGptSpread,
                    .max = max};
}

absl::StatusOr<CaseRun> ReadCase(const nlohmann::json& doc, const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject c, JsonObject::Make(doc, origin, ""));
  CaseRun run;
  PROJECTOR_ASSIGN_OR_RETURN(run.summary.id, c.String("id"));
  PROJECTOR_ASSIGN_OR_RETURN(run.summary.engine, c.String("engine"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string model_name, c.String("model"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string gpu_name, c.String("gpu"));
  absl::StatusOr<ModelSpec> model = ResolveModel(model_name);
  if (!model.ok()) return c.FieldError("model", std::string(model.status().message()));
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(gpu_name);
  if (!hw.ok()) return c.FieldError("gpu", std::string(hw.status().message()));
  Deployment& d = run.options.deployment;
  d.model = *std::move(model);
  d.hw = *std::move(hw);
  PROJECTOR_ASSIGN_OR_RETURN(d.tp, c.PositiveInt("tp"));
  PROJECTOR_ASSIGN_OR_RETURN(d.pp, c.PositiveInt("pp"));
  PROJECTOR_ASSIGN_OR_RETURN(run.options.replicas, c.IntOr("dp", 1));
  for (const auto& [key, target] : {std::pair<const char*, DType*>{"precision", &d.weight_dtype},
                                    std::pair<const char*, DType*>{"kv_precision", &d.kv_dtype}}) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::string text, c.String(key));
    absl::StatusOr<DType> dtype = ParseDType(text);
    if (!dtype.ok()) return c.FieldError(key, std::string(dtype.status().message()));
    *target = *dtype;
  }
  PROJECTOR_RETURN_IF_ERROR(ResolveServingKernels(d));

  PROJECTOR_ASSIGN_OR_RETURN(JsonObject w, c.Object("workload"));
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::string kind,
      w.Enum("kind", {"static_batch", "fixed_concurrency", "offline", "poisson_qps"}));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<int64_t> batch,
                             w.OptionalInt("batch_or_concurrency"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<double> qps, w.OptionalNumber("qps"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<int64_t> input, w.OptionalInt("input_len"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<int64_t> output, w.OptionalInt("output_len"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<int64_t> count, w.OptionalInt("num_requests"));
  PROJECTOR_ASSIGN_OR_RETURN(run.options.engine,
                             EngineForCase(c, run.summary.engine, kind, batch.value_or(1)));

  WorkloadSpec spec;
  spec.seed = 0;
  if (input && output) {
    spec.input = {.distribution = LengthDistribution::kFixed, .mean = static_cast<double>(*input)};
    spec.output = {.distribution = LengthDistribution::kFixed,
                   .mean = static_cast<double>(*output)};
  } else {
    spec.output = ShareGpt(kShareGptOutputMean, kShareGptMaxOutput);
    spec.input = ShareGpt(kShareGptOutputMean * kShareGptInputOverOutput, kShareGptMaxInput);
  }
  if (kind == "static_batch" || kind == "fixed_concurrency") {
    if (!batch) return w.FieldError("batch_or_concurrency", "required for this kind");
    spec.arrival = ArrivalKind::kAllAtOnce;
    spec.num_requests = count.value_or(*batch);
    if (kind == "fixed_concurrency") run.options.engine.concurrency = *batch;
    run.summary.workload = absl::StrFormat("%s %d, %d in / %d out", kind, *batch, input.value_or(0),
                                           output.value_or(0));
  } else {
    if (!count) return w.FieldError("num_requests", "required for this kind");
    spec.num_requests = *count;
    if (kind == "poisson_qps") {
      if (!qps) return w.FieldError("qps", "required for poisson_qps");
      spec.arrival = ArrivalKind::kPoisson;
      spec.qps = *qps;
    } else {
      spec.arrival = ArrivalKind::kAllAtOnce;
    }
    run.summary.workload =
        absl::StrFormat("%s%s, %d requests, ShareGPT lengths", kind,
                        qps ? absl::StrFormat(" %g req/s", *qps) : std::string(), *count);
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateWorkload(spec));
  run.requests = GenerateRequests(spec);
  run.summary.deployment = absl::StrFormat("%s %s TP%d PP%d %s", d.model.name, d.hw.gpu.name, d.tp,
                                           d.pp, DTypeName(d.weight_dtype));

  PROJECTOR_ASSIGN_OR_RETURN(JsonObject m, c.Object("measured"));
  const bool has_total = m.Has("output_tokens_per_s") && !m.json()["output_tokens_per_s"].is_null();
  for (const char* key :
       {"output_tokens_per_s", "output_tokens_per_s_per_gpu", "total_tokens_per_s",
        "requests_per_s", "ttft_ms_mean", "ttft_ms_p50", "ttft_ms_p99", "tpot_ms_mean",
        "tpot_ms_p50", "e2e_ms_mean", "e2e_ms_p50"}) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::optional<double> value, m.OptionalNumber(key));
    if (!value) continue;
    // The per-GPU throughput restates the total when both are published.
    if (std::string_view(key) == "output_tokens_per_s_per_gpu" && has_total) continue;
    run.measured.emplace_back(key, *value);
  }
  if (run.measured.empty()) {
    return m.FieldError("output_tokens_per_s", "the case publishes no figure the tool projects");
  }
  return run;
}

double Projected(const ServeMetrics& m, const std::string& metric) {
  if (metric == "output_tokens_per_s") return m.output_tokens_per_s;
  if (metric == "output_tokens_per_s_per_gpu") return m.output_tokens_per_s_per_gpu;
  if (metric == "total_tokens_per_s") return m.input_tokens_per_s + m.output_tokens_per_s;
  if (metric == "requests_per_s") return m.requests_per_s;
  if (metric == "ttft_ms_mean") return m.ttft_ms.mean;
  if (metric == "ttft_ms_p50") return m.ttft_ms.p50;
  if (metric == "ttft_ms_p99") return m.ttft_ms.p99;
  if (metric == "tpot_ms_mean") return m.tpot_ms.mean;
  if (metric == "tpot_ms_p50") return m.tpot_ms.p50;
  if (metric == "e2e_ms_mean") return m.e2e_ms.mean;
  return m.e2e_ms.p50;
}

}  // namespace

absl::StatusOr<ServeValidation> ValidateServingCases(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  ServeValidation v;
  v.cases_file = path;
  std::istringstream lines(text);
  std::string line;
  std::vector<double> errors;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string origin = absl::StrCat(path, ":", number);
    PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json doc, ParseJsonText(line, origin));
    PROJECTOR_ASSIGN_OR_RETURN(CaseRun run, ReadCase(doc, origin));
    absl::StatusOr<ServeResult> result = Serve(run.options, run.requests);
    if (!result.ok()) {
      return absl::Status(result.status().code(), absl::StrCat(origin, " (", run.summary.id,
                                                               "): ", result.status().message()));
    }
    for (const auto& [metric, measured] : run.measured) {
      ServeFigure f{.case_id = run.summary.id,
                    .metric = metric,
                    .measured = measured,
                    .projected = Projected(result->metrics, metric),
                    .error_pct = 0};
      f.error_pct = 100.0 * (f.projected - measured) / measured;
      errors.push_back(std::fabs(f.error_pct));
      if (std::fabs(f.error_pct) <= 20) ++v.within_20_pct;
      v.figures.push_back(std::move(f));
    }
    v.cases.push_back(std::move(run.summary));
  }
  if (v.cases.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no case; one JSON object per line"));
  }
  v.median_abs_error_pct = Median(std::move(errors));
  return v;
}

}  // namespace projector
