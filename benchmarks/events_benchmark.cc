// Speed of the discrete-event engine (events/): events per second on one core.
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "events/event_engine.h"

namespace projector::events {
namespace {

// GPipe on 8 stages with `m` micro-batches (forward, then backward, per stage in order): 16·m
// tasks, 3 dependencies each; the compute and communication of a real step look like this.
TaskGraph GPipe(int p, int m) {
  TaskGraph g;
  g.Reserve(static_cast<size_t>(2 * p * m), static_cast<size_t>(3 * p * m));
  std::vector<ResourceId> stage(p);
  for (int s = 0; s < p; ++s) stage[s] = g.AddResource(ResourceOrder::kInOrder);
  std::vector<TaskId> fwd(static_cast<size_t>(p * m)), bwd(static_cast<size_t>(p * m));
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < m; ++i) fwd[s * m + i] = g.AddTask(stage[s], Microseconds(3));
    for (int i = 0; i < m; ++i) bwd[s * m + i] = g.AddTask(stage[s], Microseconds(5));
  }
  for (int s = 0; s < p; ++s) {
    for (int i = 0; i < m; ++i) {
      if (s > 0) g.AddDependency(fwd[(s - 1) * m + i], fwd[s * m + i]);
      if (s + 1 < p) g.AddDependency(bwd[(s + 1) * m + i], bwd[s * m + i]);
      g.AddDependency(fwd[s * m + i], bwd[s * m + i]);
    }
  }
  return g;
}

// A random layered graph on 64 resources (half streams, half first-ready links): `n` tasks,
// 4 dependencies each on earlier tasks.
TaskGraph RandomDag(int n) {
  std::mt19937 rng(7);
  TaskGraph g;
  g.Reserve(static_cast<size_t>(n), static_cast<size_t>(4 * n));
  for (int r = 0; r < 64; ++r) {
    g.AddResource(r % 2 ? ResourceOrder::kInOrder : ResourceOrder::kFirstReady);
  }
  for (int t = 0; t < n; ++t) {
    g.AddTask(static_cast<ResourceId>(rng() % 64),
              Microseconds(1.0 + static_cast<double>(rng() % 10)));
    for (int e = 0; e < 4 && t > 0; ++e) {
      g.AddDependency(static_cast<TaskId>(rng() % t), static_cast<TaskId>(t));
    }
  }
  return g;
}

// Flows: `n` tasks on 256 shared links, each a flow over 4 of them (a collective step's
// transfers, share 1 or 1/2), 2 dependencies each on earlier tasks, so that some dozens run at
// once and every start or finish re-shares the links of its component.
TaskGraph RandomFlows(int n) {
  std::mt19937 rng(11);
  TaskGraph g;
  g.Reserve(static_cast<size_t>(n), static_cast<size_t>(2 * n));
  constexpr int kLinks = 256;
  for (int r = 0; r < kLinks; ++r) g.AddResource(ResourceOrder::kShared);
  std::vector<LinkShare> shares;
  for (int t = 0; t < n; ++t) {
    shares.clear();
    const int first = static_cast<int>(rng() % kLinks);
    for (int k = 0; k < 4; ++k) {
      shares.push_back({.link = static_cast<ResourceId>((first + k * 61) % kLinks),
                        .share = rng() % 2 ? 1.0 : 0.5});
    }
    g.AddFlow(shares, Microseconds(1.0 + static_cast<double>(rng() % 10)));
    for (int e = 0; e < 2 && t > 64; ++e) {
      g.AddDependency(static_cast<TaskId>(t - 1 - static_cast<int>(rng() % 64)),
                      static_cast<TaskId>(t));
    }
  }
  return g;
}

void RunGraph(benchmark::State& state, const TaskGraph& g) {
  Simulator sim;
  SimulationResult result;
  int64_t events = 0;
  for (auto _ : state) {
    if (!sim.Run(g, result).ok()) state.SkipWithError("simulation failed");
    events += result.events;
    benchmark::DoNotOptimize(result.makespan);
  }
  state.SetItemsProcessed(events);
  state.counters["events_per_run"] = static_cast<double>(result.events);
}

void BM_Events_GPipe8x8192(benchmark::State& state) { RunGraph(state, GPipe(8, 8192)); }
BENCHMARK(BM_Events_GPipe8x8192)->Unit(benchmark::kMillisecond);

// 64 Ki tasks (the working set fits the caches) and 1 Mi tasks (it does not: every dependency a
// random access).
void BM_Events_RandomDag64K(benchmark::State& state) { RunGraph(state, RandomDag(1 << 16)); }
BENCHMARK(BM_Events_RandomDag64K)->Unit(benchmark::kMillisecond);

void BM_Events_RandomDag1M(benchmark::State& state) { RunGraph(state, RandomDag(1 << 20)); }
BENCHMARK(BM_Events_RandomDag1M)->Unit(benchmark::kMillisecond);

void BM_Events_RandomFlows64K(benchmark::State& state) { RunGraph(state, RandomFlows(1 << 16)); }
BENCHMARK(BM_Events_RandomFlows64K)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector::events
