// Serving at the medium level of detail (issue 26 point 8): the whole `project serve` study,
// workload generation, pass costs (memoised by token count, cold every iteration) and the
// engine, on the case (10,000 requests of a 70B model on 8 GPUs) and on the seed's
// scenarios A (an 80-layer model on one GPU) and B/C (TP4, TP4 x PP2).
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/flag_values.h"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "serving/slo_search.h"

namespace projector {
namespace {

ServeJob Job(std::vector<std::pair<const char*, const char*>> given,
             const std::vector<std::pair<const char*, const char*>>& more = {}) {
  FlagValues flags;
  SetServeFlagDefaults(flags);
  for (const auto& [name, value] : given) flags.Add(name, value);
  for (const auto& [name, value] : more) flags.Add(name, value);
  absl::StatusOr<ServeJob> job = ServeJobFromFlags(flags);
  if (!job.ok()) {
    std::cerr << "serving_benchmark: " << job.status() << "\n";
    std::abort();
  }
  return *std::move(job);
}

// Lognormal lengths (coefficient of variation 1) with means of 1,024 prompt and 256 output
// tokens.
const std::vector<std::pair<const char*, const char*>> kLognormal1024In256Out = {
    {"input-len", "1024"},  {"input-dist", "lognormal"},  {"input-spread", "1"},
    {"output-len", "256"},  {"output-dist", "lognormal"}, {"output-spread", "1"}};

void RunServe(benchmark::State& state, const ServeJob& job) {
  int64_t passes = 0;
  for (auto _ : state) {
    absl::StatusOr<ServeResult> r = Serve(job.options, job.requests);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    passes = r->metrics.passes;
    benchmark::DoNotOptimize(r->metrics.ttft_ms.mean);
  }
  state.counters["passes"] = static_cast<double>(passes);
  state.counters["requests"] = static_cast<double>(job.requests.size());
}

// Llama-3.1-70B, TP8 on 8 H100, 10,000 requests arriving at 10 req/s, lognormal lengths.
void BM_Serve_Llama70bTp8_10kRequests(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h100-sxm"},
                                   {"tp", "8"},
                                   {"qps", "10"},
                                   {"num-requests", "10000"}},
                                  kLognormal1024In256Out);
  RunServe(state, job);
}
BENCHMARK(BM_Serve_Llama70bTp8_10kRequests)->Unit(benchmark::kMillisecond);

// DeepSeek-V3 fp8 on 8 H200 with data-parallel attention (8 ranks in lock-step) and DeepEP,
// 10,000 requests at 20 req/s, lognormal lengths: 8 engines priced pass by pass together.
void BM_Serve_DeepSeekV3DpAttention8_10kRequests(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "deepseek-v3"},
                                   {"gpu-arch", "h200-sxm"},
                                   {"tp", "8"},
                                   {"precision", "fp8"},
                                   {"expert-parallel", "true"},
                                   {"dp-attention", "8"},
                                   {"deepep", "true"},
                                   {"qps", "20"},
                                   {"num-requests", "10000"}},
                                  kLognormal1024In256Out);
  RunServe(state, job);
}
BENCHMARK(BM_Serve_DeepSeekV3DpAttention8_10kRequests)->Unit(benchmark::kMillisecond);

// Scenario A: an 80-layer model on one GPU (Llama-3.1-70B in fp8 on an H200), 2,000 requests.
void BM_Serve_ScenarioA_80LayersOneGpu(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h200-sxm"},
                                   {"precision", "fp8"},
                                   {"qps", "2"},
                                   {"num-requests", "2000"},
                                   {"input-len", "512"},
                                   {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioA_80LayersOneGpu)->Unit(benchmark::kMillisecond);

// Scenario B: TP4 (Llama-3.1-70B on 4 H100).
void BM_Serve_ScenarioB_Tp4(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h100-sxm"},
                                   {"tp", "4"},
                                   {"qps", "4"},
                                   {"num-requests", "2000"},
                                   {"input-len", "512"},
                                   {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioB_Tp4)->Unit(benchmark::kMillisecond);

// Scenario C: TP4 x PP2 (Llama-3.1-70B on 8 H100).
void BM_Serve_ScenarioC_Tp4Pp2(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h100-sxm"},
                                   {"tp", "4"},
                                   {"pp", "2"},
                                   {"qps", "8"},
                                   {"num-requests", "2000"},
                                   {"input-len", "512"},
                                   {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioC_Tp4Pp2)->Unit(benchmark::kMillisecond);

// The SLO search (issue 26 point 8: under 10 s): the highest rate at which Llama-3.1-70B TP8 on
// 8 H100 keeps p90 TTFT <= 500 ms and p90 TPOT <= 50 ms, 1,000 requests per probe.
void BM_SloSearch_Llama70bTp8(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h100-sxm"},
                                   {"tp", "8"},
                                   {"qps", "1"},
                                   {"num-requests", "1000"},
                                   {"input-len", "1024"},
                                   {"output-len", "256"}});
  const SloTarget slo{.ttft_ms = 500, .tpot_ms = 50, .percentile = 90};
  int64_t probes = 0;
  for (auto _ : state) {
    absl::StatusOr<SloSearchResult> r = MaxQpsUnderSlo(job.options, job.spec, slo);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    probes = static_cast<int64_t>(r->probes.size());
    benchmark::DoNotOptimize(r->max_qps);
  }
  state.counters["probes"] = static_cast<double>(probes);
}
BENCHMARK(BM_SloSearch_Llama70bTp8)->Unit(benchmark::kMillisecond);

// The layout search over 8 H100 for the same target (10 layouts, a bisection each).
void BM_SloLayoutSearch_Llama70bOn8(benchmark::State& state) {
  static const ServeJob job = Job({{"model", "llama3.1-70b"},
                                   {"gpu-arch", "h100-sxm"},
                                   {"qps", "1"},
                                   {"num-requests", "1000"},
                                   {"input-len", "1024"},
                                   {"output-len", "256"}});
  const SloTarget slo{.ttft_ms = 500, .tpot_ms = 50, .percentile = 90};
  for (auto _ : state) {
    absl::StatusOr<std::vector<ServingLayout>> r =
        SearchServingLayouts(job.options, job.spec, slo, 8);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(r->front().output_tokens_per_s_per_gpu);
  }
}
BENCHMARK(BM_SloLayoutSearch_Llama70bOn8)->Unit(benchmark::kMillisecond);

// The seed's level-of-detail study (issue 26 point 6): scenarios A (an 80-layer model on one
// GPU), B (TP4) and C (TP4 x PP2), 500 requests each, at the medium level (one cost per pass) and
// the high level (every pass as events per layer and collective step). Counters: passes,
// events, and at the high level the differences from the medium level's metrics (%).
ServeJob LodJob(const char* gpu, const char* tp, const char* pp, const char* precision,
                const char* qps, LevelOfDetail lod) {
  ServeJob job = Job({{"model", "llama3.1-70b"},
                      {"gpu-arch", gpu},
                      {"tp", tp},
                      {"pp", pp},
                      {"precision", precision},
                      {"qps", qps},
                      {"num-requests", "500"},
                      {"input-len", "512"},
                      {"output-len", "128"}});
  job.options.engine.lod = lod;
  return job;
}

double DiffPct(double high, double medium) {
  return medium != 0 ? 100.0 * (high - medium) / medium : 0.0;
}

void RunLod(benchmark::State& state, const ServeJob& job) {
  ServeJob medium_job = job;
  medium_job.options.engine.lod = LevelOfDetail::kMedium;
  const absl::StatusOr<ServeResult> medium = Serve(medium_job.options, medium_job.requests);
  absl::StatusOr<ServeResult> r;
  for (auto _ : state) {
    r = Serve(job.options, job.requests);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
  }
  if (!medium.ok()) {
    state.SkipWithError("medium");
    return;
  }
  state.counters["passes"] = static_cast<double>(r->metrics.passes);
  state.counters["events"] = static_cast<double>(r->metrics.events);
  state.counters["ttft_diff_pct"] = DiffPct(r->metrics.ttft_ms.mean, medium->metrics.ttft_ms.mean);
  state.counters["tpot_diff_pct"] = DiffPct(r->metrics.tpot_ms.mean, medium->metrics.tpot_ms.mean);
  state.counters["e2e_diff_pct"] = DiffPct(r->metrics.e2e_ms.mean, medium->metrics.e2e_ms.mean);
  state.counters["tput_diff_pct"] =
      DiffPct(r->metrics.output_tokens_per_s, medium->metrics.output_tokens_per_s);
}

void BM_Lod_ScenarioA(benchmark::State& state) {
  const LevelOfDetail lod = state.range(0) == 0 ? LevelOfDetail::kMedium : LevelOfDetail::kHigh;
  RunLod(state, LodJob("h200-sxm", "1", "1", "fp8", "2", lod));
}
BENCHMARK(BM_Lod_ScenarioA)->Arg(0)->Arg(1)->ArgName("high")->Unit(benchmark::kMillisecond);

void BM_Lod_ScenarioB(benchmark::State& state) {
  const LevelOfDetail lod = state.range(0) == 0 ? LevelOfDetail::kMedium : LevelOfDetail::kHigh;
  RunLod(state, LodJob("h100-sxm", "4", "1", "bf16", "4", lod));
}
BENCHMARK(BM_Lod_ScenarioB)->Arg(0)->Arg(1)->ArgName("high")->Unit(benchmark::kMillisecond);

void BM_Lod_ScenarioC(benchmark::State& state) {
  const LevelOfDetail lod = state.range(0) == 0 ? LevelOfDetail::kMedium : LevelOfDetail::kHigh;
  RunLod(state, LodJob("h100-sxm", "4", "2", "bf16", "8", lod));
}
BENCHMARK(BM_Lod_ScenarioC)->Arg(0)->Arg(1)->ArgName("high")->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector
