// The level-of-detail study (issue 25 point 5), as far as the high level goes: on the library
// scenarios, the analytical projection (medium) and the event replay of its step (high): wall
// time of each, events, and the step-time difference (0 where nothing contends; the NIC shared
// by DP reduces and pipeline sends where both cross nodes: docs/event_engine.md).
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_registry.h"
#include "benchmark/benchmark.h"
#include "network/hardware_network.h"
#include "benchmarks/scenario_from_flags.h"
#include "studies/lod_high.h"

namespace projector {
namespace {

Scenario FromFlags(const std::vector<std::pair<const char*, const char*>>& given) {
  return BenchmarkScenario("lod_benchmark", given);
}

// The scenario on its hardware profile's built-in network as a network file (`--network`): the
// DP reduces and the pipeline's activations run as flows on its links.
Scenario OnItsNetwork(Scenario s) {
  absl::StatusOr<NetworkSpec> network = NetworkFromHardware(s.hw, s.num_gpus);
  if (!network.ok()) {
    std::cerr << "lod_benchmark: " << network.status() << "\n";
    std::abort();
  }
  s.backends.network = std::make_shared<const NetworkSpec>(*std::move(network));
  return s;
}

void RunLod(benchmark::State& state, const Scenario& s) {
  absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
  if (!set.ok()) {
    state.SkipWithError("backends");
    return;
  }
  double medium = 0, high = 0, diff = 0;
  int64_t events = 0, runs = 0;
  for (auto _ : state) {
    absl::StatusOr<HighLodResult> r = ProjectAtHighLod(s, RefsOf(*set));
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    medium += r->medium_wall_s;
    high += r->high_wall_s;
    diff = r->DifferencePct();
    events = r->events;
    ++runs;
    // The two levels' step, exposed communication and TGS (the same every run).
    state.counters["step_ms_medium"] = ToMilliseconds(r->medium.step_time);
    state.counters["step_ms_high"] = ToMilliseconds(r->step_time);
    state.counters["exposed_ms_medium"] = ToMilliseconds(r->MediumExposedCommunication());
    state.counters["exposed_ms_high"] = ToMilliseconds(r->ExposedCommunication());
    state.counters["tgs_medium"] = r->medium.tokens_per_s_per_gpu;
    state.counters["tgs_high"] = r->TokensPerSPerGpu();
  }
  state.counters["medium_us"] = medium / static_cast<double>(runs) * 1e6;
  state.counters["high_us"] = high / static_cast<double>(runs) * 1e6;
  state.counters["events"] = static_cast<double>(events);
  state.counters["diff_pct"] = diff;
}

// Llama-3.1-8B on one 8-GPU node (DP 8).
void BM_Lod_Llama8bOneNode(benchmark::State& state) {
  RunLod(state, FromFlags({{"model", "llama3.1-8b"},
                           {"gpu-arch", "h100-sxm"},
                           {"num-gpus", "8"},
                           {"seq-len", "8192"},
                           {"global-batch", "64"}}));
}
BENCHMARK(BM_Lod_Llama8bOneNode)->Unit(benchmark::kMicrosecond);

// Llama-3.1-70B, TP8 on one node.
void BM_Lod_Llama70bTp8(benchmark::State& state) {
  RunLod(state, FromFlags({{"model", "llama3.1-70b"},
                           {"gpu-arch", "h100-sxm"},
                           {"num-gpus", "8"},
                           {"tp", "8"},
                           {"seq-len", "8192"},
                           {"global-batch", "32"}}));
}
BENCHMARK(BM_Lod_Llama70bTp8)->Unit(benchmark::kMicrosecond);

// Llama-3.1-70B, TP8 x PP4 across 4 nodes, interleaved.
void BM_Lod_Llama70bTp8Pp4(benchmark::State& state) {
  RunLod(state, FromFlags({{"model", "llama3.1-70b"},
                           {"gpu-arch", "h100-sxm"},
                           {"num-gpus", "32"},
                           {"tp", "8"},
                           {"pp", "4"},
                           {"vpp", "5"},
                           {"seq-len", "8192"},
                           {"global-batch", "64"}}));
}
BENCHMARK(BM_Lod_Llama70bTp8Pp4)->Unit(benchmark::kMicrosecond);

// Mixtral-8x7B with EP8 on 64 GPUs, PP2.
void BM_Lod_MixtralEp8(benchmark::State& state) {
  RunLod(state, FromFlags({{"model", "mixtral-8x7b"},
                           {"gpu-arch", "h100-sxm"},
                           {"num-gpus", "64"},
                           {"ep", "8"},
                           {"pp", "2"},
                           {"seq-len", "4096"},
                           {"global-batch", "256"}}));
}
BENCHMARK(BM_Lod_MixtralEp8)->Unit(benchmark::kMicrosecond);

// Llama-3.1-70B, TP8 x PP4 (VPP 5) x DP8 on 256 GPUs: a stage spans 8 nodes, so its DP reduces
// and the activations it sends share each rank's NIC (congestion aware), which medium does not
// model.
Scenario Llama70bInterleavedDp8() {
  return FromFlags({{"model", "llama3.1-70b"},
                    {"gpu-arch", "h100-sxm"},
                    {"num-gpus", "256"},
                    {"tp", "8"},
                    {"pp", "4"},
                    {"vpp", "5"},
                    {"seq-len", "8192"},
                    {"global-batch", "128"}});
}
void BM_Lod_Llama70bInterleavedDp8(benchmark::State& state) {
  RunLod(state, Llama70bInterleavedDp8());
}
BENCHMARK(BM_Lod_Llama70bInterleavedDp8)->Unit(benchmark::kMicrosecond);

// Qwen3-30B-A3B, EP16 x PP2 (VPP 2) on 64 GPUs: the EP All-to-All, the DP reduces and the
// pipeline's sends all leave the node and share each rank's NIC.
Scenario Qwen3MoeEp16() {
  return FromFlags({{"model", "qwen3-30b-a3b"},
                    {"gpu-arch", "h100-sxm"},
                    {"num-gpus", "64"},
                    {"ep", "16"},
                    {"pp", "2"},
                    {"vpp", "2"},
                    {"seq-len", "4096"},
                    {"global-batch", "256"}});
}
void BM_Lod_Qwen3MoeEp16(benchmark::State& state) { RunLod(state, Qwen3MoeEp16()); }
BENCHMARK(BM_Lod_Qwen3MoeEp16)->Unit(benchmark::kMicrosecond);

// The seed lab's 16-GPU sanity check (shared/reference/network_reference.md: STAGE's workload
// --dp 2 --tp 2 --pp 2 --sp 2 --activation_recompute 1 --dmodel 8192 --dff 28672 --head 64
// --seq 1024 --batch 512 --num_stacks 8 --din/--dout 32000): a Llama-70B-like block of 8
// layers with 64 heads of full attention and a 32,000-token vocabulary; STAGE's sp, the
// sequence split over extra GPUs, is context parallelism here. 256 micro-batches.
void BM_Lod_SeedLab16(benchmark::State& state) {
  Scenario s = FromFlags({{"model", "llama3.1-70b"},
                          {"gpu-arch", "h100-sxm"},
                          {"num-gpus", "16"},
                          {"tp", "2"},
                          {"pp", "2"},
                          {"cp", "2"},
                          {"recompute", "full"},
                          {"seq-len", "1024"},
                          {"global-batch", "512"}});
  s.model.num_layers = 8;
  s.model.num_kv_heads = 64;
  s.model.vocab_size = 32000;
  RunLod(state, s);
}
BENCHMARK(BM_Lod_SeedLab16)->Unit(benchmark::kMicrosecond);

// Llama-3.1-70B on 1,024 GPUs, TP8 PP8 DP16 (the 3D layout), 128 micro-batches.
Scenario Llama70b1024() {
  return FromFlags({{"model", "llama3.1-70b"},
                    {"gpu-arch", "h100-sxm"},
                    {"num-gpus", "1024"},
                    {"tp", "8"},
                    {"pp", "8"},
                    {"seq-len", "8192"},
                    {"global-batch", "2048"}});
}
void BM_Lod_Llama70b1024(benchmark::State& state) { RunLod(state, Llama70b1024()); }
BENCHMARK(BM_Lod_Llama70b1024)->Unit(benchmark::kMicrosecond);

// The same three layouts on their built-in network as a file: every DP reduce's steps and every
// activation transfer as flows on its links.
void BM_Lod_Llama70bInterleavedDp8OnNetwork(benchmark::State& state) {
  RunLod(state, OnItsNetwork(Llama70bInterleavedDp8()));
}
BENCHMARK(BM_Lod_Llama70bInterleavedDp8OnNetwork)->Unit(benchmark::kMicrosecond);

void BM_Lod_Qwen3MoeEp16OnNetwork(benchmark::State& state) {
  RunLod(state, OnItsNetwork(Qwen3MoeEp16()));
}
BENCHMARK(BM_Lod_Qwen3MoeEp16OnNetwork)->Unit(benchmark::kMicrosecond);

void BM_Lod_Llama70b1024OnNetwork(benchmark::State& state) {
  RunLod(state, OnItsNetwork(Llama70b1024()));
}
BENCHMARK(BM_Lod_Llama70b1024OnNetwork)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace projector
