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

ServeJob Job(std::vector<std::pair<const char*, const char*>> given) {
  FlagValues flags;
  SetServeFlagDefaults(flags);
  for (const auto& [name, value] : given) flags.Add(name, value);
  absl::StatusOr<ServeJob> job = ServeJobFromFlags(flags);
  if (!job.ok()) {
    std::cerr << "serving_benchmark: " << job.status() << "\n";
    std::abort();
  }
  return *std::move(job);
}

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
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"}, {"tp", "8"}, {"qps", "10"},
           {"num-requests", "10000"}, {"input-len", "1024"}, {"input-dist", "lognormal"},
           {"input-spread", "1"}, {"output-len", "256"}, {"output-dist", "lognormal"},
           {"output-spread", "1"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_Llama70bTp8_10kRequests)->Unit(benchmark::kMillisecond);

// Scenario A: an 80-layer model on one GPU (Llama-3.1-70B in fp8 on an H200), 2,000 requests.
void BM_Serve_ScenarioA_80LayersOneGpu(benchmark::State& state) {
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h200-sxm"}, {"precision", "fp8"},
           {"qps", "2"}, {"num-requests", "2000"}, {"input-len", "512"}, {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioA_80LayersOneGpu)->Unit(benchmark::kMillisecond);

// Scenario B: TP4 (Llama-3.1-70B on 4 H100).
void BM_Serve_ScenarioB_Tp4(benchmark::State& state) {
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"}, {"tp", "4"}, {"qps", "4"},
           {"num-requests", "2000"}, {"input-len", "512"}, {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioB_Tp4)->Unit(benchmark::kMillisecond);

// Scenario C: TP4 x PP2 (Llama-3.1-70B on 8 H100).
void BM_Serve_ScenarioC_Tp4Pp2(benchmark::State& state) {
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"}, {"tp", "4"}, {"pp", "2"},
           {"qps", "8"}, {"num-requests", "2000"}, {"input-len", "512"}, {"output-len", "128"}});
  RunServe(state, job);
}
BENCHMARK(BM_Serve_ScenarioC_Tp4Pp2)->Unit(benchmark::kMillisecond);

// The SLO search (issue 26 point 8: under 10 s): the highest rate at which Llama-3.1-70B TP8 on
// 8 H100 keeps p90 TTFT <= 500 ms and p90 TPOT <= 50 ms, 1,000 requests per probe.
void BM_SloSearch_Llama70bTp8(benchmark::State& state) {
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"}, {"tp", "8"}, {"qps", "1"},
           {"num-requests", "1000"}, {"input-len", "1024"}, {"output-len", "256"}});
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
  static const ServeJob job =
      Job({{"model", "llama3.1-70b"}, {"gpu-arch", "h100-sxm"}, {"qps", "1"},
           {"num-requests", "1000"}, {"input-len", "1024"}, {"output-len", "256"}});
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

}  // namespace
}  // namespace projector
