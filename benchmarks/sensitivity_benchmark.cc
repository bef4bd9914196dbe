// `--sensitivity` (RunSettingSensitivity): every run setting that applies switched alone and the
// step re-projected, each on backends built for the changed scenario. On DeepSeek-V3 on 1,024
// H100 (the public file's Megatron-Bridge layout: TP2 PP8 VPP4 EP64, fp8, DeepEP) and on
// Llama-3.1-8B on 8 H100 (DP 8, bf16: three settings).
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "benchmarks/scenario_from_flags.h"
#include "studies/sensitivity.h"

namespace projector {
namespace {

Scenario FromFlags(const std::vector<std::pair<const char*, const char*>>& given) {
  return BenchmarkScenario("sensitivity_benchmark", given);
}

void RunSensitivity(benchmark::State& state, const Scenario& s) {
  size_t settings = 0;
  for (auto _ : state) {
    absl::StatusOr<std::vector<SettingChange>> changes = RunSettingSensitivity(s);
    if (!changes.ok()) {
      state.SkipWithError("sensitivity");
      return;
    }
    settings = changes->size();
    benchmark::DoNotOptimize(changes->data());
  }
  state.counters["settings"] = static_cast<double>(settings);
}

void BM_Sensitivity_DeepSeekV3On1024H100(benchmark::State& state) {
  static const Scenario s = FromFlags({{"model", "deepseek-v3"},
                                       {"gpu-arch", "h100-sxm"},
                                       {"num-gpus", "1024"},
                                       {"tp", "2"},
                                       {"sequence-parallel", "true"},
                                       {"pp", "8"},
                                       {"vpp", "4"},
                                       {"first-stage-layers", "7"},
                                       {"last-stage-layers", "6"},
                                       {"ep", "64"},
                                       {"deepep", "true"},
                                       {"precision", "fp8"},
                                       {"seq-len", "4096"},
                                       {"global-batch", "8192"}});
  RunSensitivity(state, s);
}
BENCHMARK(BM_Sensitivity_DeepSeekV3On1024H100)->Unit(benchmark::kMillisecond);

void BM_Sensitivity_Llama8bOn8H100(benchmark::State& state) {
  static const Scenario s = FromFlags({{"model", "llama3.1-8b"},
                                       {"gpu-arch", "h100-sxm"},
                                       {"num-gpus", "8"},
                                       {"seq-len", "8192"},
                                       {"global-batch", "64"}});
  RunSensitivity(state, s);
}
BENCHMARK(BM_Sensitivity_Llama8bOn8H100)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector
