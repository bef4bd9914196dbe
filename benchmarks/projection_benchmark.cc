// Speed of one full projection (profile each layer kind, compose, simulate the pipeline
// schedule, DP/optimizer, memory) after the backend caches are warm: Llama-3.1-405B on 16,384
// H100s (TP8 PP16 VPP interleaved, and the same with the zero-bubble ZB-H1 schedule at VPP 1)
// and DeepSeek-V3 with EP on 2,048 H100s.
#include <cstdlib>
#include <iostream>

#include "backends/backend_registry.h"
#include "benchmark/benchmark.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {
namespace {

Scenario Llama405bScenario() {
  Scenario s;
  s.name = "llama3.1-405b-16k";
  auto model = ResolveModel("llama3.1-405b");
  auto hw = ResolveHardwareProfile("h100-sxm");
  if (!model.ok() || !hw.ok()) {
    std::cerr << "projection_benchmark: " << model.status() << " / " << hw.status() << "\n";
    std::abort();
  }
  s.model = *model;
  s.hw = *hw;
  s.parallel.tp = 8;
  s.parallel.pp = 16;
  s.parallel.vpp = 4;
  s.parallel.dp = 128;
  s.parallel.sequence_parallel = true;
  s.parallel.distributed_optimizer = true;
  s.num_gpus = 16384;
  s.training.seq_len = 8192;
  s.training.micro_batch = 1;
  s.training.global_batch = 2048;  // 16 micro-batches per pipeline
  return s;
}

Scenario DeepSeekV3Scenario() {
  Scenario s;
  s.name = "deepseek-v3-2k";
  auto model = ResolveModel("deepseek-v3");
  auto hw = ResolveHardwareProfile("h100-sxm");
  if (!model.ok() || !hw.ok()) {
    std::cerr << "projection_benchmark: " << model.status() << " / " << hw.status() << "\n";
    std::abort();
  }
  s.model = *model;
  s.hw = *hw;
  s.parallel.tp = 1;
  s.parallel.pp = 16;
  s.parallel.ep = 64;
  s.parallel.dp = 128;
  s.parallel.distributed_optimizer = true;
  s.num_gpus = 2048;
  s.training.seq_len = 4096;
  s.training.micro_batch = 1;
  s.training.global_batch = 4096;  // 32 micro-batches per pipeline
  return s;
}

void RunProjection(benchmark::State& state, const Scenario& scenario) {
  auto set = MakeBackendSet(scenario.backends, scenario.hw);
  if (!set.ok()) {
    state.SkipWithError(std::string(set.status().message()).c_str());
    return;
  }
  BackendRefs refs{.gemm = *set->gemm, .attention = *set->attention, .memory = *set->memory,
                   .collective = *set->collective};
  auto warm = Project(scenario, refs);  // fills the backends' memo caches
  if (!warm.ok()) {
    state.SkipWithError(std::string(warm.status().message()).c_str());
    return;
  }
  for (auto _ : state) {
    auto p = Project(scenario, refs);
    benchmark::DoNotOptimize(p);
  }
  state.counters["tgs"] = warm->tokens_per_s_per_gpu;
  state.counters["step_s"] = warm->step_time.value();
}

void BM_Project_Llama405b_16kGpus_Interleaved(benchmark::State& state) {
  static const Scenario scenario = Llama405bScenario();
  RunProjection(state, scenario);
}
BENCHMARK(BM_Project_Llama405b_16kGpus_Interleaved)->Unit(benchmark::kMicrosecond);

void BM_Project_Llama405b_16kGpus_ZeroBubble(benchmark::State& state) {
  static const Scenario scenario = [] {
    Scenario s = Llama405bScenario();
    s.parallel.vpp = 1;
    s.parallel.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
    return s;
  }();
  RunProjection(state, scenario);
}
BENCHMARK(BM_Project_Llama405b_16kGpus_ZeroBubble)->Unit(benchmark::kMicrosecond);

void BM_Project_DeepSeekV3_Ep64(benchmark::State& state) {
  static const Scenario scenario = DeepSeekV3Scenario();
  RunProjection(state, scenario);
}
BENCHMARK(BM_Project_DeepSeekV3_Ep64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace projector
