// The work team (issue 29 point 5): a design-space sweep's points per second through a team of
// MPI ranks (one lane each), at the medium and the high level of detail, and the coordinator's
// cost per task with nothing to evaluate (the hand-out and gather of one task: what bounds a team
// of many ranks on small tasks). Alone it runs on one lane of this process; under
//   mpirun -np N build/benchmarks/team_benchmark
// rank 0 runs the benchmarks and the other ranks serve them (no flags then: every rank must run
// the same studies, so each benchmark has a fixed number of iterations).
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/work_team.h"
#include "scenario/scenario_flags.h"
#include "studies/search.h"
#include "studies/sweep.h"
#ifdef PROJECTOR_MPI
#include "cli/mpi_team.h"
#endif

namespace projector {
namespace {

WorkTeam* g_team = &Solo();
#ifdef PROJECTOR_MPI
MpiTeam* g_mpi = nullptr;
#endif
constexpr int kIterations = 2;

// Llama-3.1-8B on 16 H100, seq 4096, global batch 64: 2,385 layouts at the medium level of detail
// (TP 1-8, PP 1-2 and the default rest), 288 at the high (TP 2-4, PP 1-2, no VPP or recompute).
struct SweepCase {
  std::vector<SweepGpu> gpus;
  SweepOptions options;
};

SweepCase MakeSweep(bool high) {
  FlagValues flags;
  for (const auto& [name, value] :
       std::vector<std::pair<const char*, const char*>>{{"model", "llama3.1-8b"},
                                                        {"gpu-arch", "h100-sxm"},
                                                        {"num-gpus", "16"},
                                                        {"seq-len", "4096"},
                                                        {"global-batch", "64"}}) {
    flags.Add(name, value);
  }
  absl::StatusOr<Scenario> base = ScenarioFromFlags(flags, ScenarioUse::kSearchBase);
  if (!base.ok()) {
    std::cerr << "team_benchmark: " << base.status() << "\n";
    std::abort();
  }
  SearchSpace space = DefaultSearchSpace(*base);
  space.tp = high ? std::vector<int64_t>{2, 4} : std::vector<int64_t>{1, 2, 4, 8};
  space.pp = {1, 2};
  if (high) {
    space.vpp = {1};
    space.recompute = {Recompute::kNone};
  }
  SweepCase c;
  c.gpus = {SweepGpu{.base = *base,
                     .candidates = EnumerateCandidates(*base, space),
                     .memory_limit = DefaultMemoryLimit(base->hw)}};
  c.options.networks = {SweepNetwork{.label = "builtin", .spec = nullptr}};
  c.options.high_lod = high;
  c.options.threads = 1;
  c.options.team = g_team;
  return c;
}

// The coordinator's gathered chunks and the wall time they took it, so far (0 alone).
std::pair<int64_t, double> GatherTotals() {
#ifdef PROJECTOR_MPI
  if (g_mpi != nullptr) return {g_mpi->GatheredChunks(), g_mpi->GatherSeconds()};
#endif
  return {0, 0.0};
}

// Rates over the benchmark's tasks, and the coordinator's cost per chunk gathered from another
// rank since `before` (GatherTotals at the start).
void SetRates(benchmark::State& state, int64_t tasks, std::pair<int64_t, double> before) {
  const auto [chunks, seconds] = GatherTotals();
  state.counters["gathered_chunks"] = static_cast<double>(chunks - before.first);
  state.counters["gather_us_per_chunk"] =
      chunks > before.first
          ? (seconds - before.second) / static_cast<double>(chunks - before.first) * 1e6
          : 0.0;
  const double ranks = g_team->size();
  state.counters["ranks"] = ranks;
  state.counters["tasks_per_s"] =
      benchmark::Counter(static_cast<double>(tasks), benchmark::Counter::kIsRate);
  state.counters["tasks_per_s_per_rank"] =
      benchmark::Counter(static_cast<double>(tasks) / ranks, benchmark::Counter::kIsRate);
}

void RunSweepOnTeam(benchmark::State& state, bool high) {
  const SweepCase c = MakeSweep(high);
  int64_t points = 0;
  const auto before = GatherTotals();
  for (auto _ : state) {
    StudyScope study(*g_team);
    absl::StatusOr<SweepSummary> s =
        RunSweep(c.gpus, c.options, {}, [](std::string_view) { return absl::OkStatus(); });
    if (!s.ok()) {
      state.SkipWithError(std::string(s.status().message()).c_str());
      return;
    }
    points += s->evaluated;
  }
  SetRates(state, points, before);
}

void BM_Team_SweepMedium(benchmark::State& state) { RunSweepOnTeam(state, false); }
BENCHMARK(BM_Team_SweepMedium)
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_Team_SweepHigh(benchmark::State& state) { RunSweepOnTeam(state, true); }
BENCHMARK(BM_Team_SweepHigh)->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime();

// 20,000 tasks of nothing, one per chunk: the coordinator's hand-out and gather per task. With
// other ranks the coordinator runs no lane of its own, so every task crosses MPI: a request out,
// a reply back.
constexpr int64_t kEmptyTasks = 20000;
ItemHooks EmptyItems() {
  ItemHooks items;
  items.evaluate = [](int64_t) { return std::string(); };
  items.collect = [](int64_t, std::string_view) { return absl::OkStatus(); };
  return items;
}

void BM_Team_EmptyTasks(benchmark::State& state) {
  const ItemHooks items = EmptyItems();
  const auto before = GatherTotals();
  for (auto _ : state) {
    if (absl::Status s = EvaluateItems(*g_team, 0, kEmptyTasks, items); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return;
    }
  }
  SetRates(state, kEmptyTasks * static_cast<int64_t>(state.iterations()), before);
}
BENCHMARK(BM_Team_EmptyTasks)
    ->Iterations(kIterations)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

#ifdef PROJECTOR_MPI
// A serving rank: the same studies in the same order, served.
void ServeEveryBenchmark() {
  for (bool high : {false, true}) {
    const SweepCase c = MakeSweep(high);
    for (int i = 0; i < kIterations; ++i) (void)ServeSweep(c.gpus, c.options);
  }
  const ItemHooks items = EmptyItems();
  for (int i = 0; i < kIterations; ++i) (void)EvaluateItems(*g_team, 1, kEmptyTasks, items);
}
#endif

}  // namespace
}  // namespace projector

int main(int argc, char** argv) {
#ifdef PROJECTOR_MPI
  if (projector::LaunchedByMpi()) {
    projector::MpiTeam team(argc, argv, std::cerr);
    projector::g_team = &team;
    projector::g_mpi = &team;
    if (!team.coordinator()) {
      projector::ServeEveryBenchmark();
      return 0;
    }
    if (team.size() > 1 && argc > 1) {
      std::cerr << "team_benchmark: under mpirun every rank runs every benchmark; give no flags\n";
      std::abort();
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
  }
#endif
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
