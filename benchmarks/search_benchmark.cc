// Speed of the layout search (DESIGN.md budget: >= 100,000 candidate layouts per minute on 2
// cores for a 70B dense model). Reports candidates_per_minute = layouts projected / wall time,
// using every core, as `project search` runs it; the per-layout rate is measured without the
// bound pruning and the split exploration (every layout projected to the end), the whole
// searches of the two cases as `project search` runs them (wall time per search).
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>

#include "backends/backend_registry.h"
#include "benchmark/benchmark.h"
#include "projection/projection.h"
#include "studies/search.h"

namespace projector {
namespace {

// Llama-3.1-70B on 64 H100 (8 nodes), seq 8192, global batch 128: the default search space.
Scenario Llama70bOn64() {
  Scenario s;
  s.name = "bench";
  s.model = *ResolveModel("llama3.1-70b");
  s.hw = *ResolveHardwareProfile("h100-sxm");
  s.num_gpus = 64;
  s.parallel.dp = 64;
  s.training.seq_len = 8192;
  s.training.global_batch = 128;
  return s;
}

void ReportRate(benchmark::State& state, int64_t evaluated, double seconds) {
  state.counters["candidates_evaluated"] = static_cast<double>(evaluated);
  state.counters["candidates_per_minute"] =
      seconds > 0 ? static_cast<double>(evaluated) / seconds * 60.0 : 0.0;
  state.counters["threads"] = static_cast<double>(std::thread::hardware_concurrency());
}

// The whole search as the CLI runs it: backends built once per search (cold memo caches),
// enumeration, all cores, ranking.
void BM_Search_Llama70bDense(benchmark::State& state) {
  Scenario base = Llama70bOn64();
  SearchOptions options;
  options.space = DefaultSearchSpace(base);
  options.memory_limit = std::nullopt;
  options.prune = false;
  options.explore_splits = false;
  int64_t evaluated = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto result = SearchLayouts(base, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    evaluated += result->candidates_evaluated;
    seconds += result->elapsed_s;
    benchmark::DoNotOptimize(result->ranked.data());
  }
  ReportRate(state, evaluated, seconds);
}
BENCHMARK(BM_Search_Llama70bDense)->Unit(benchmark::kMillisecond)->UseRealTime();

// Same space with backends shared across iterations (warm memo caches): the steady-state cost
// per candidate, i.e. ValidateScenario + Project.
void BM_Search_Llama70bDenseWarmBackends(benchmark::State& state) {
  Scenario base = Llama70bOn64();
  auto set = MakeBackendSet(base.backends, base.hw);
  if (!set.ok()) {
    state.SkipWithError(std::string(set.status().message()).c_str());
    return;
  }
  BackendRefs refs{.gemm = *set->gemm,
                   .attention = *set->attention,
                   .memory = *set->memory,
                   .collective = *set->collective};
  LayoutEvaluator evaluate = ProjectionEvaluator(refs);
  SearchOptions options;
  options.space = DefaultSearchSpace(base);
  options.memory_limit = std::nullopt;
  options.prune = false;
  options.explore_splits = false;
  int64_t evaluated = 0;
  double seconds = 0;
  for (auto _ : state) {
    auto result = SearchLayouts(base, options, evaluate);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    evaluated += result->candidates_evaluated;
    seconds += result->elapsed_s;
    benchmark::DoNotOptimize(result->ranked.data());
  }
  ReportRate(state, evaluated, seconds);
}
BENCHMARK(BM_Search_Llama70bDenseWarmBackends)->Unit(benchmark::kMillisecond)->UseRealTime();

// A whole default search as `project search` runs it (bound pruning, every pipeline split):
// Llama-3.1-405B on 16,384 H100, seq 8192, global batch 2048 (issue 23: under 2 s).
Scenario Llama405bOn16384() {
  Scenario s = Llama70bOn64();
  s.model = *ResolveModel("llama3.1-405b");
  s.num_gpus = 16384;
  s.parallel.dp = 16384;
  s.training.global_batch = 2048;
  return s;
}

// DeepSeek-V3 on 2,048 H800, seq 4096, global batch 15360, fp8, the EP All-to-All overlapped
// as DeepSeek's DualPipe runs it (--moe-a2a-overlap).
Scenario DeepSeekV3On2048() {
  Scenario s = Llama70bOn64();
  s.model = *ResolveModel("deepseek-v3");
  s.hw = *ResolveHardwareProfile("h800-sxm");
  s.num_gpus = 2048;
  s.parallel.dp = 2048;
  s.training.seq_len = 4096;
  s.training.global_batch = 15360;
  s.training.precision = DType::kFp8;
  s.training.moe_a2a_overlap = true;
  return s;
}

void RunWholeSearch(benchmark::State& state, const Scenario& base) {
  SearchOptions options;
  options.space = DefaultSearchSpace(base);
  options.memory_limit = DefaultMemoryLimit(base.hw);
  for (auto _ : state) {
    auto result = SearchLayouts(base, options);
    if (!result.ok()) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      return;
    }
    state.counters["candidates_enumerated"] = static_cast<double>(result->candidates_enumerated);
    state.counters["candidates_evaluated"] = static_cast<double>(result->candidates_evaluated);
    benchmark::DoNotOptimize(result->ranked.data());
  }
}

void BM_Search_Llama405bOn16384(benchmark::State& state) {
  RunWholeSearch(state, Llama405bOn16384());
}
BENCHMARK(BM_Search_Llama405bOn16384)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Search_DeepSeekV3On2048Slow(benchmark::State& state) {
  RunWholeSearch(state, DeepSeekV3On2048());
}
BENCHMARK(BM_Search_DeepSeekV3On2048Slow)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

// Enumeration and constraint checks alone (no projection).
void BM_Search_EnumerateLlama70b(benchmark::State& state) {
  Scenario base = Llama70bOn64();
  SearchSpace space = DefaultSearchSpace(base);
  for (auto _ : state) {
    std::array<int64_t, kNumSearchConstraints> removed{};
    auto candidates = EnumerateCandidates(base, space, &removed);
    benchmark::DoNotOptimize(candidates.data());
  }
  state.counters["enumerated"] = static_cast<double>(space.Size());
}
BENCHMARK(BM_Search_EnumerateLlama70b)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector
