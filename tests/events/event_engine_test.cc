#include "events/event_engine.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace projector::events {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

Seconds Us(double us) { return Microseconds(us); }

SimulationResult MustRun(const TaskGraph& g) {
  Simulator sim;
  SimulationResult r;
  EXPECT_THAT(sim.Run(g, r), IsOk());
  return r;
}

double StartUs(const SimulationResult& r, TaskId t) { return ToMicroseconds(r.tasks[t].start); }
double FinishUs(const SimulationResult& r, TaskId t) { return ToMicroseconds(r.tasks[t].finish); }

// Three tasks of 1, 2 and 3 µs on one stream run back to back: finishes 1, 3, 6.
TEST(EventEngineTest, OneStreamRunsItsTasksBackToBack) {
  TaskGraph g;
  const ResourceId s = g.AddResource(ResourceOrder::kInOrder);
  const TaskId a = g.AddTask(s, Us(1)), b = g.AddTask(s, Us(2)), c = g.AddTask(s, Us(3));
  const SimulationResult r = MustRun(g);
  EXPECT_DOUBLE_EQ(FinishUs(r, a), 1);
  EXPECT_DOUBLE_EQ(FinishUs(r, b), 3);
  EXPECT_DOUBLE_EQ(FinishUs(r, c), 6);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.makespan), 6);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.busy[s]), 6);
  EXPECT_EQ(r.events, 3);
}

// A cleared graph is empty and builds the next graph from id 0.
TEST(EventEngineTest, ClearEmptiesTheGraphForTheNext) {
  TaskGraph g;
  const ResourceId s = g.AddResource(ResourceOrder::kInOrder);
  g.AddDependency(g.AddTask(s, Us(1)), g.AddTask(s, Us(2)));
  g.Clear();
  EXPECT_EQ(g.num_resources(), 0u);
  EXPECT_EQ(g.num_tasks(), 0u);
  EXPECT_EQ(g.num_dependencies(), 0u);
  const ResourceId again = g.AddResource(ResourceOrder::kInOrder);
  EXPECT_EQ(again, 0u);
  EXPECT_EQ(g.AddTask(again, Us(5)), 0u);
  EXPECT_DOUBLE_EQ(ToMicroseconds(MustRun(g).makespan), 5);
}

// A compute stream and a communication stream: A (2 µs, compute) feeds B (3 µs, comm), which
// feeds C (1 µs, compute). D (4 µs, compute, independent) was issued between A and C, so the
// compute stream runs A 0-2, D 2-6, and C waits for both B (5) and D (6): 6-7.
TEST(EventEngineTest, InOrderStreamsWaitForTheirDependenciesAndTheirPredecessor) {
  TaskGraph g;
  const ResourceId compute = g.AddResource(ResourceOrder::kInOrder);
  const ResourceId comm = g.AddResource(ResourceOrder::kInOrder);
  const TaskId a = g.AddTask(compute, Us(2));
  const TaskId b = g.AddTask(comm, Us(3));
  const TaskId d = g.AddTask(compute, Us(4));
  const TaskId c = g.AddTask(compute, Us(1));
  g.AddDependency(a, b);
  g.AddDependency(b, c);
  const SimulationResult r = MustRun(g);
  EXPECT_DOUBLE_EQ(StartUs(r, b), 2);
  EXPECT_DOUBLE_EQ(FinishUs(r, b), 5);
  EXPECT_DOUBLE_EQ(StartUs(r, d), 2);
  EXPECT_DOUBLE_EQ(StartUs(r, c), 6);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.makespan), 7);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.busy[compute]), 7);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.busy[comm]), 3);
}

// Head-of-line blocking on a stream: X waits 10 µs for a task on another stream, and Y, issued
// after X with nothing to wait for, waits behind it (starts at 10 + 1 = 11). On a first-ready
// resource Y would run at once.
TEST(EventEngineTest, AnInOrderStreamHoldsBackTasksBehindABlockedOne) {
  for (ResourceOrder order : {ResourceOrder::kInOrder, ResourceOrder::kFirstReady}) {
    TaskGraph g;
    const ResourceId other = g.AddResource(ResourceOrder::kInOrder);
    const ResourceId s = g.AddResource(order);
    const TaskId w = g.AddTask(other, Us(10));
    const TaskId x = g.AddTask(s, Us(1));
    const TaskId y = g.AddTask(s, Us(2));
    g.AddDependency(w, x);
    const SimulationResult r = MustRun(g);
    if (order == ResourceOrder::kInOrder) {
      EXPECT_DOUBLE_EQ(StartUs(r, y), 11);
      EXPECT_DOUBLE_EQ(ToMicroseconds(r.makespan), 13);
    } else {
      EXPECT_DOUBLE_EQ(StartUs(r, y), 0);
      EXPECT_DOUBLE_EQ(StartUs(r, x), 10);
      EXPECT_DOUBLE_EQ(ToMicroseconds(r.makespan), 11);
    }
  }
}

// A first-ready link: transfers become ready at 3 (T1), 1 (T2) and, together, at 5 (T3 and T0;
// T0 has the lower id). Served in ready order, ties by id, one at a time, 2 µs each: T2 1-3,
// T1 3-5, T0 5-7, T3 7-9.
TEST(EventEngineTest, FirstReadyServesInReadyOrderWithTiesByTaskId) {
  TaskGraph g;
  const ResourceId link = g.AddResource(ResourceOrder::kFirstReady);
  std::vector<TaskId> gates;  // one per stream, finishing at 5, 3 and 1 µs
  for (double at : {5.0, 3.0, 1.0}) {
    gates.push_back(g.AddTask(g.AddResource(ResourceOrder::kInOrder), Us(at)));
  }
  const TaskId t0 = g.AddTask(link, Us(2));
  const TaskId t1 = g.AddTask(link, Us(2));
  const TaskId t2 = g.AddTask(link, Us(2));
  const TaskId t3 = g.AddTask(link, Us(2));
  g.AddDependency(gates[0], t0);  // ready at 5
  g.AddDependency(gates[1], t1);  // ready at 3
  g.AddDependency(gates[2], t2);  // ready at 1
  g.AddDependency(gates[0], t3);  // ready at 5
  const SimulationResult r = MustRun(g);
  EXPECT_DOUBLE_EQ(StartUs(r, t2), 1);
  EXPECT_DOUBLE_EQ(StartUs(r, t1), 3);
  EXPECT_DOUBLE_EQ(StartUs(r, t0), 5);
  EXPECT_DOUBLE_EQ(StartUs(r, t3), 7);
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.busy[link]), 8);
}

// GPipe on p stages, m micro-batches, forward f and backward b per stage: stage s runs F_0 ..
// F_{m-1} then B_0 .. B_{m-1} in order; F_i on s waits for F_i on s-1, B_i on s for B_i on s+1
// and its own F_i. The last stage's forwards end at (m + p - 1)·f, its backwards follow back to
// back, and each stage below finishes B_j one b later than the stage above, so stage 0's last
// backward ends at (m + p - 1)·f + (m + p - 1)·b = (m + p - 1)(f + b).
// A shared server splits its rate among the tasks running on it (processor sharing). Tasks of
// 1 and 3 µs started together: both at half rate until the short one is done, at 2 µs (1 µs of
// work each); the long one then runs alone its last 2 µs: 4 µs, the sum of the two. Three of
// 2 µs at once all finish at 6 µs. The server is busy whenever one runs.
TEST(EventEngineTest, ASharedServerSplitsItsRateAmongItsTasks) {
  TaskGraph g;
  const ResourceId nic = g.AddResource(ResourceOrder::kShared);
  const TaskId a = g.AddTask(nic, Us(1)), b = g.AddTask(nic, Us(3));
  SimulationResult r = MustRun(g);
  EXPECT_DOUBLE_EQ(StartUs(r, a), 0);
  EXPECT_DOUBLE_EQ(StartUs(r, b), 0);
  EXPECT_NEAR(FinishUs(r, a), 2, 1e-9);
  EXPECT_NEAR(FinishUs(r, b), 4, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r.busy[nic]), 4, 1e-9);
  EXPECT_EQ(r.events, 2);

  TaskGraph three;
  const ResourceId shared = three.AddResource(ResourceOrder::kShared);
  for (int i = 0; i < 3; ++i) three.AddTask(shared, Us(2));
  r = MustRun(three);
  for (TaskId t = 0; t < 3; ++t) EXPECT_NEAR(FinishUs(r, t), 6, 1e-9) << t;
  EXPECT_EQ(r.events, 3);
}

// A task that joins later takes its share from then on. A (2 µs) runs alone from 0; B (2 µs)
// becomes ready at 1 µs, after a 1 µs task on a stream. A has 1 µs of work left and does it at
// half rate: done at 3; B has done 1 µs by then and does its last 1 µs alone: done at 4. A zero
// task finishes where it starts, and a task after B starts at B's finish.
TEST(EventEngineTest, ASharedServerReSharesWhenATaskJoinsOrLeaves) {
  TaskGraph g;
  const ResourceId stream = g.AddResource(ResourceOrder::kInOrder);
  const ResourceId nic = g.AddResource(ResourceOrder::kShared);
  const TaskId first = g.AddTask(stream, Us(1));
  const TaskId a = g.AddTask(nic, Us(2)), b = g.AddTask(nic, Us(2));
  const TaskId zero = g.AddTask(nic, Us(0));
  const TaskId after = g.AddTask(stream, Us(1));
  g.AddDependency(first, b);
  g.AddDependency(first, zero);
  g.AddDependency(b, after);
  const SimulationResult r = MustRun(g);
  EXPECT_NEAR(FinishUs(r, a), 3, 1e-9);
  EXPECT_NEAR(StartUs(r, b), 1, 1e-9);
  EXPECT_NEAR(FinishUs(r, b), 4, 1e-9);
  EXPECT_NEAR(StartUs(r, zero), 1, 1e-9);
  EXPECT_NEAR(FinishUs(r, zero), 1, 1e-9);
  EXPECT_NEAR(StartUs(r, after), 4, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r.makespan), 5, 1e-9);
  EXPECT_EQ(r.events, 5);
}

// Late in a long step the clock's resolution is coarser than a short task's work: at 10,000 s
// a double steps by about 2e-12 s, so a 1e-13 s task shared with another finishes "now" by the
// clock, with work left by the arithmetic. The event queued for it still finishes it (every
// valid event finishes a task), and the run ends.
TEST(EventEngineTest, ASharedTaskShorterThanTheClocksResolutionStillFinishes) {
  TaskGraph g;
  const ResourceId stream = g.AddResource(ResourceOrder::kInOrder);
  const ResourceId nic = g.AddResource(ResourceOrder::kShared);
  const TaskId before = g.AddTask(stream, Seconds(1e4));
  const TaskId tiny = g.AddTask(nic, Seconds(1e-13));
  const TaskId long_one = g.AddTask(nic, Seconds(1));
  g.AddDependency(before, tiny);
  g.AddDependency(before, long_one);
  const SimulationResult r = MustRun(g);
  EXPECT_EQ(r.events, 3);
  EXPECT_NEAR(r.tasks[tiny].finish.value(), 1e4, 1e-9);
  EXPECT_NEAR(r.tasks[long_one].finish.value(), 1e4 + 1, 1e-9);
}

TEST(EventEngineTest, GPipeMakespanIsTheClosedForm) {
  for (const auto& [p, m] : {std::pair{4, 8}, std::pair{8, 32}, std::pair{1, 5}}) {
    const double f = 3, b = 5;
    TaskGraph g;
    std::vector<ResourceId> stage(p);
    for (int s = 0; s < p; ++s) stage[s] = g.AddResource(ResourceOrder::kInOrder);
    std::vector<std::vector<TaskId>> fwd(p), bwd(p);
    for (int s = 0; s < p; ++s) {
      for (int i = 0; i < m; ++i) fwd[s].push_back(g.AddTask(stage[s], Us(f)));
      for (int i = 0; i < m; ++i) bwd[s].push_back(g.AddTask(stage[s], Us(b)));
    }
    for (int s = 0; s < p; ++s) {
      for (int i = 0; i < m; ++i) {
        if (s > 0) g.AddDependency(fwd[s - 1][i], fwd[s][i]);
        if (s + 1 < p) g.AddDependency(bwd[s + 1][i], bwd[s][i]);
        g.AddDependency(fwd[s][i], bwd[s][i]);
      }
    }
    const SimulationResult r = MustRun(g);
    EXPECT_NEAR(ToMicroseconds(r.makespan), (m + p - 1) * (f + b), 1e-9) << p << " " << m;
    EXPECT_EQ(r.events, 2 * p * m);
    for (int s = 0; s < p; ++s) EXPECT_NEAR(ToMicroseconds(r.busy[stage[s]]), m * (f + b), 1e-9);
  }
}

// An unbounded resource (a delay) runs every ready task at once at full speed: 1, 2 and 3 µs
// started together end at 1, 2 and 3; its busy time is their sum.
TEST(EventEngineTest, AnUnboundedResourceRunsEveryTaskAtOnce) {
  TaskGraph g;
  const ResourceId delay = g.AddResource(ResourceOrder::kUnbounded);
  for (int i = 1; i <= 3; ++i) g.AddTask(delay, Us(i));
  const SimulationResult r = MustRun(g);
  for (TaskId t = 0; t < 3; ++t) {
    EXPECT_DOUBLE_EQ(StartUs(r, t), 0);
    EXPECT_DOUBLE_EQ(FinishUs(r, t), t + 1.0);
  }
  EXPECT_DOUBLE_EQ(ToMicroseconds(r.busy[delay]), 6);
}

// A flow over two links beside a task on one of them: X (2 µs alone) crosses links A and B at
// their full rate, Y (1 µs) crosses B. B is the bottleneck: filled at speed 1/2 for both (A,
// alone with X, would allow 1). Y's 1 µs of work at 1/2 ends at 2 µs; X has done 1 µs by then
// and runs its last 1 µs alone: 3 µs. A is busy while X runs (0-3), B while either does.
TEST(EventEngineTest, AFlowOverTwoLinksRunsAtItsBottlenecksShare) {
  TaskGraph g;
  const ResourceId a = g.AddResource(ResourceOrder::kShared);
  const ResourceId b = g.AddResource(ResourceOrder::kShared);
  const LinkShare both[] = {{.link = a, .share = 1}, {.link = b, .share = 1}};
  const TaskId x = g.AddFlow(both, Us(2));
  const TaskId y = g.AddTask(b, Us(1));
  const SimulationResult r = MustRun(g);
  EXPECT_NEAR(FinishUs(r, y), 2, 1e-9);
  EXPECT_NEAR(FinishUs(r, x), 3, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r.busy[a]), 3, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r.busy[b]), 3, 1e-9);
  // A carried X's 2 µs, busy 3: two-thirds used; B carried both, 3 µs: full while busy.
  EXPECT_NEAR(ToMicroseconds(r.carried[a]), 2, 1e-9);
  EXPECT_NEAR(ToMicroseconds(r.carried[b]), 3, 1e-9);
  EXPECT_EQ(g.resource(x), a);
  EXPECT_EQ(r.events, 2);
}

// Max-min fairness (progressive filling): X on link A; Y on A and B; Z and W on B. Speeds rise
// together: B (three flows) fills at 1/3 before A (two) at 1/2, so Y, Z, W keep 1/3; A then has
// 2/3 left, all X's. Y, Z, W (1 µs each) end at 3 µs; X (4 µs) has done 2 by then and ends
// alone at 5. Without Y, X would run at full speed and the B flows at 1/2 (end at 2 and 4).
TEST(EventEngineTest, FlowsShareLinksMaxMinFairly) {
  TaskGraph g;
  const ResourceId a = g.AddResource(ResourceOrder::kShared);
  const ResourceId b = g.AddResource(ResourceOrder::kShared);
  const LinkShare both[] = {{.link = a, .share = 1}, {.link = b, .share = 1}};
  const TaskId x = g.AddTask(a, Us(4));
  const TaskId y = g.AddFlow(both, Us(1));
  const TaskId z = g.AddTask(b, Us(1)), w = g.AddTask(b, Us(1));
  const SimulationResult r = MustRun(g);
  for (TaskId t : {y, z, w}) EXPECT_NEAR(FinishUs(r, t), 3, 1e-9) << t;
  EXPECT_NEAR(FinishUs(r, x), 5, 1e-9);
}

// A flow that takes part of a link (share 0.5: it is bound elsewhere, or by latency) leaves room
// for another: two of 0.5 run together at full speed (2 µs each end at 2). A third of share 1
// (1 µs) makes the link ask for 2: all three at 1/2. The third ends at 2 µs; the others have
// done 1 of their 2 µs and end at 3 alone.
TEST(EventEngineTest, AFlowTakesItsShareOfALink) {
  TaskGraph g;
  const ResourceId a = g.AddResource(ResourceOrder::kShared);
  const LinkShare half[] = {{.link = a, .share = 0.5}};
  const TaskId x = g.AddFlow(half, Us(2)), y = g.AddFlow(half, Us(2));
  SimulationResult r = MustRun(g);
  EXPECT_NEAR(FinishUs(r, x), 2, 1e-9);
  EXPECT_NEAR(FinishUs(r, y), 2, 1e-9);
  const TaskId z = g.AddTask(a, Us(1));
  r = MustRun(g);
  EXPECT_NEAR(FinishUs(r, z), 2, 1e-9);
  EXPECT_NEAR(FinishUs(r, x), 3, 1e-9);
  EXPECT_NEAR(FinishUs(r, y), 3, 1e-9);
}

// Random flows over random links: the same result twice, no flow faster than alone, and no
// link carrying more than its capacity: the work its flows brought (duration · share) fits in
// the time it was busy.
TEST(EventEngineTest, RandomFlowsNeverExceedALinksCapacity) {
  std::mt19937 rng(25);
  for (int trial = 0; trial < 20; ++trial) {
    TaskGraph g;
    const int links = 1 + static_cast<int>(rng() % 8);
    for (int l = 0; l < links; ++l) g.AddResource(ResourceOrder::kShared);
    const ResourceId stream = g.AddResource(ResourceOrder::kInOrder);
    const int tasks = 1 + static_cast<int>(rng() % 150);
    std::vector<LinkShare> shares;
    for (int t = 0; t < tasks; ++t) {
      if (rng() % 4 == 0) {
        g.AddTask(stream, Us(static_cast<double>(rng() % 3)));
        continue;
      }
      shares.clear();
      for (int l = 0; l < links; ++l) {
        if (rng() % 2 == 0 || (l + 1 == links && shares.empty())) {
          shares.push_back({.link = static_cast<ResourceId>(l),
                            .share = 0.1 + 0.9 * static_cast<double>(rng() % 10) / 9.0});
        }
      }
      g.AddFlow(shares, Us(static_cast<double>(rng() % 5)));
    }
    for (int e = 0; e < tasks; ++e) {
      TaskId x = static_cast<TaskId>(rng() % tasks), y = static_cast<TaskId>(rng() % tasks);
      if (x != y) g.AddDependency(std::min(x, y), std::max(x, y));
    }
    Simulator sim;
    SimulationResult first, second;
    ASSERT_THAT(sim.Run(g, first), IsOk());
    ASSERT_THAT(sim.Run(g, second), IsOk());
    std::vector<double> carried(static_cast<size_t>(links), 0.0);
    for (TaskId t = 0; t < static_cast<TaskId>(tasks); ++t) {
      EXPECT_EQ(first.tasks[t].finish, second.tasks[t].finish);
      EXPECT_GE((first.tasks[t].finish - first.tasks[t].start).value(),
                g.duration(t).value() * (1 - 1e-12))
          << "task " << t;
      for (const LinkShare& s : g.shares(t)) carried[s.link] += g.duration(t).value() * s.share;
    }
    for (int l = 0; l < links; ++l) {
      EXPECT_LE(carried[static_cast<size_t>(l)], first.busy[l].value() * (1 + 1e-9) + 1e-18)
          << "link " << l;
      EXPECT_NEAR(first.carried[l].value(), carried[static_cast<size_t>(l)], 1e-15) << "link " << l;
    }
  }
}

// Invariants on random graphs: no two tasks of a resource overlap, no task starts before a
// dependency finishes, the busy time is the sum of durations, and two runs (one reusing the
// simulator's buffers) agree exactly.
// Random graphs: the same result twice, every dependency kept, an exclusive resource never
// runs two tasks at once, and every resource conserves work: busy exactly the sum of its tasks'
// durations (a shared server runs at full rate whenever one task runs; no shared task finishes
// sooner than alone).
TEST(EventEngineTest, RandomGraphsKeepExclusivityAndDependenciesDeterministically) {
  std::mt19937 rng(19);
  for (int trial = 0; trial < 20; ++trial) {
    TaskGraph g;
    const int resources = 1 + static_cast<int>(rng() % 6);
    for (int r = 0; r < resources; ++r) {
      const auto kind = rng() % 3;
      g.AddResource(kind == 0   ? ResourceOrder::kInOrder
                    : kind == 1 ? ResourceOrder::kFirstReady
                                : ResourceOrder::kShared);
    }
    const int tasks = 1 + static_cast<int>(rng() % 200);
    for (int t = 0; t < tasks; ++t) {
      g.AddTask(static_cast<ResourceId>(rng() % resources),
                Us(static_cast<double>(rng() % 5)));  // zero durations included
    }
    for (int e = 0; e < 2 * tasks; ++e) {
      TaskId x = static_cast<TaskId>(rng() % tasks), y = static_cast<TaskId>(rng() % tasks);
      if (x == y) continue;
      // Edges from lower to higher ids: acyclic, and never a later task of an in-order stream
      // gating an earlier one.
      g.AddDependency(std::min(x, y), std::max(x, y));
    }
    Simulator sim;
    SimulationResult first, second;
    ASSERT_THAT(sim.Run(g, first), IsOk());
    ASSERT_THAT(sim.Run(g, second), IsOk());
    EXPECT_EQ(first.events, tasks);
    for (TaskId t = 0; t < static_cast<TaskId>(tasks); ++t) {
      EXPECT_EQ(first.tasks[t].start, second.tasks[t].start);
      EXPECT_EQ(first.tasks[t].finish, second.tasks[t].finish);
    }
    for (const auto& [before, after] : g.dependencies()) {
      EXPECT_GE(first.tasks[after].start.value(), first.tasks[before].finish.value());
    }
    for (ResourceId r = 0; r < static_cast<ResourceId>(resources); ++r) {
      std::vector<TaskTimes> on;
      double sum = 0;
      for (TaskId t = 0; t < static_cast<TaskId>(tasks); ++t) {
        if (g.resource(t) != r) continue;
        on.push_back(first.tasks[t]);
        sum += g.duration(t).value();
      }
      EXPECT_NEAR(first.busy[r].value(), sum, 1e-12 * std::max(sum, 1e-6)) << "resource " << r;
      if (g.order(r) == ResourceOrder::kShared) {
        for (TaskId t = 0; t < static_cast<TaskId>(tasks); ++t) {
          if (g.resource(t) != r) continue;
          EXPECT_GE((first.tasks[t].finish - first.tasks[t].start).value(),
                    g.duration(t).value() * (1 - 1e-12))
              << "task " << t;
        }
        continue;
      }
      // By start, a zero-length task before a long one starting at the same instant.
      std::sort(on.begin(), on.end(), [](const TaskTimes& a, const TaskTimes& b) {
        return a.start != b.start ? a.start < b.start : a.finish < b.finish;
      });
      for (size_t i = 1; i < on.size(); ++i) {
        EXPECT_GE(on[i].start.value(), on[i - 1].finish.value()) << "resource " << r;
      }
    }
  }
}

TEST(EventEngineTest, AnEmptyGraphTakesNoTime) {
  TaskGraph g;
  g.AddResource(ResourceOrder::kInOrder);
  const SimulationResult r = MustRun(g);
  EXPECT_EQ(r.makespan.value(), 0.0);
  EXPECT_EQ(r.events, 0);
}

TEST(EventEngineTest, BadGraphsAreRefusedWithTheTaskNamed) {
  Simulator sim;
  SimulationResult r;
  {
    TaskGraph g;
    const ResourceId s = g.AddResource(ResourceOrder::kFirstReady);
    const TaskId a = g.AddTask(s, Us(1)), b = g.AddTask(s, Us(1));
    g.AddDependency(a, b);
    g.AddDependency(b, a);
    EXPECT_THAT(sim.Run(g, r), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("task 0 (resource 0) never ran")));
  }
  {
    // An in-order stream whose first task waits on its second: a deadlock, not a hang.
    TaskGraph g;
    const ResourceId s = g.AddResource(ResourceOrder::kInOrder);
    const TaskId a = g.AddTask(s, Us(1)), b = g.AddTask(s, Us(1));
    g.AddDependency(b, a);
    EXPECT_THAT(sim.Run(g, r), StatusIs(absl::StatusCode::kFailedPrecondition,
                                        HasSubstr("waits on a later task")));
  }
  {
    TaskGraph g;
    g.AddResource(ResourceOrder::kInOrder);
    g.AddTask(3, Us(1));
    EXPECT_THAT(sim.Run(g, r), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("task 0: resource 3 does not exist")));
  }
  {
    TaskGraph g;
    const ResourceId s = g.AddResource(ResourceOrder::kInOrder);
    g.AddTask(s, Us(-1));
    EXPECT_THAT(sim.Run(g, r), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("duration must be finite and >= 0")));
  }
  {
    TaskGraph g;
    const ResourceId s = g.AddResource(ResourceOrder::kInOrder);
    g.AddTask(s, Us(1));
    g.AddDependency(0, 7);
    EXPECT_THAT(sim.Run(g, r), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("dependency 0 -> 7: no such task")));
  }
  // Flows: no link, a link that is not shared, a share outside (0, 1], a link twice.
  const struct {
    std::vector<LinkShare> shares;
    const char* message;
  } bad_flows[] = {
      {{}, "task 0: a flow needs at least one shared resource"},
      {{{.link = 1, .share = 1}}, "task 0: resource 1 is not a shared resource"},
      {{{.link = 0, .share = 0}}, "the share of resource 0 must be in (0, 1], got 0"},
      {{{.link = 0, .share = 1.5}}, "must be in (0, 1], got 1.5"},
      {{{.link = 0, .share = 1}, {.link = 0, .share = 0.5}}, "task 0: resource 0 listed twice"},
  };
  for (const auto& bad : bad_flows) {
    TaskGraph g;
    g.AddResource(ResourceOrder::kShared);
    g.AddResource(ResourceOrder::kInOrder);
    g.AddFlow(bad.shares, Us(1));
    EXPECT_THAT(sim.Run(g, r),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(bad.message)));
  }
}

}  // namespace
}  // namespace projector::events
