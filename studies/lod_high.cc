#include "studies/lod_high.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "events/event_engine.h"

namespace projector {

double HighLodResult::DifferencePct() const {
  const double medium_s = medium.step_time.value();
  return medium_s > 0 ? (step_time.value() - medium_s) / medium_s * 100.0 : 0.0;
}

double HighLodResult::StragglerSlowdownPct() const {
  const double base = step_time_without_straggler.value();
  return slow_rank && base > 0 ? (step_time.value() - base) / base * 100.0 : 0.0;
}

double HighLodResult::Speedup() const {
  return medium_wall_s > 0 ? high_wall_s / medium_wall_s : 0.0;
}

namespace {

using events::ResourceId;
using events::ResourceOrder;
using events::TaskGraph;
using events::TaskId;

double WallSeconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

bool IsPass(TimelineKind k) {
  return k == TimelineKind::kForward || k == TimelineKind::kBackward ||
         k == TimelineKind::kWeightGrad;
}

// The pass tasks of a step by (kind, micro-batch, virtual stage), the virtual stage of
// (rank, chunk) being chunk · pp + rank (pipeline_schedule.h).
class PassIndex {
 public:
  PassIndex(int64_t micro_batches, int64_t stages)
      : m_(micro_batches), v_(stages), ids_(static_cast<size_t>(3 * m_ * v_), kNone) {}
  static constexpr TaskId kNone = ~TaskId{0};
  TaskId& at(TimelineKind k, int64_t mb, int64_t stage) {
    return ids_[static_cast<size_t>((static_cast<int64_t>(k) * m_ + mb) * v_ + stage)];
  }

 private:
  int64_t m_, v_;
  std::vector<TaskId> ids_;
};

ReplayedTask Described(ReplayedTask::What what, const TimelineEvent& e) {
  ReplayedTask t;
  t.resource = e.rank;  // the rank's stream, whose id is the rank
  t.what = what;
  t.pass = e.kind;
  t.rank = e.rank;
  t.chunk = e.chunk;
  t.micro_batch = e.micro_batch;
  return t;
}

struct StepGraph {
  TaskGraph graph;
  std::vector<std::string> resource_names;  // by ResourceId
  std::vector<ReplayedTask> what;           // by TaskId (times filled after the run)
  std::vector<TaskId> last_pass;            // per rank
};

// The producer of pass (k, mb, stage) on another virtual stage: the previous stage's forward,
// the next stage's backward; none for the first forward, the last backward, and a W.
bool ProducerStage(TimelineKind k, int64_t stage, int64_t stages, int64_t& producer) {
  if (k == TimelineKind::kForward && stage > 0) {
    producer = stage - 1;
    return true;
  }
  if (k == TimelineKind::kBackward && stage + 1 < stages) {
    producer = stage + 1;
    return true;
  }
  return false;
}

// `slow_stage` (-1: none) runs its passes `factor` times as long.
absl::StatusOr<StepGraph> BuildStepGraph(const Projection& medium, int64_t pp, int64_t vpp,
                                         int64_t slow_stage, double factor) {
  const int64_t m = medium.micro_batches, stages = pp * vpp;
  StepGraph out;
  TaskGraph& g = out.graph;
  // Each rank's passes in the schedule's order (the medium replay's start times), then its tail.
  std::vector<std::vector<const TimelineEvent*>> passes(static_cast<size_t>(pp));
  std::vector<Seconds> tail(static_cast<size_t>(pp), Seconds(0));
  for (const TimelineEvent& e : medium.timeline) {
    if (e.rank < 0 || e.rank >= pp) continue;
    if (IsPass(e.kind)) {
      passes[static_cast<size_t>(e.rank)].push_back(&e);
    } else if (e.kind == TimelineKind::kGradSync || e.kind == TimelineKind::kOptimizer) {
      tail[static_cast<size_t>(e.rank)] += e.end - e.start;
    }
  }
  std::vector<ResourceId> stream(static_cast<size_t>(pp));
  for (int64_t r = 0; r < pp; ++r) {
    stream[r] = g.AddResource(ResourceOrder::kInOrder);
    out.resource_names.push_back(absl::StrCat("rank ", r, " stream"));
  }
  // Overlapped transfers: one link per ordered pair of ranks that exchange activations (the
  // ring of stages wraps from the last rank to the first for interleaving), first come first
  // served; made when first used.
  std::vector<ResourceId> link_of(static_cast<size_t>(pp * pp), PassIndex::kNone);
  auto link = [&](int64_t from, int64_t to) {
    ResourceId& id = link_of[static_cast<size_t>(from * pp + to)];
    if (id == PassIndex::kNone) {
      id = g.AddResource(ResourceOrder::kFirstReady);
      out.resource_names.push_back(absl::StrCat("link rank ", from, " → rank ", to));
    }
    return id;
  };
  PassIndex index(m, stages);
  PassIndex receive(m, stages);  // the rendezvous receive before a pass, or kNone
  const bool transfers = medium.p2p_transfer.value() > 0;
  out.last_pass.assign(static_cast<size_t>(pp), PassIndex::kNone);
  for (int64_t r = 0; r < pp; ++r) {
    auto& list = passes[static_cast<size_t>(r)];
    std::stable_sort(list.begin(), list.end(), [](const TimelineEvent* a, const TimelineEvent* b) {
      return a->start < b->start;
    });
    for (const TimelineEvent* e : list) {
      const int64_t stage = static_cast<int64_t>(e->chunk) * pp + r;
      if (e->micro_batch < 0 || e->micro_batch >= m || stage >= stages) {
        return absl::InternalError(absl::StrFormat(
            "timeline pass of rank %d, chunk %d, micro-batch %d is outside the step", e->rank,
            e->chunk, e->micro_batch));
      }
      int64_t producer = 0;
      if (transfers && !medium.p2p_overlapped && ProducerStage(e->kind, stage, stages, producer) &&
          producer % pp != r) {
        receive.at(e->kind, e->micro_batch, stage) = g.AddTask(stream[r], medium.p2p_transfer);
        out.what.push_back(Described(ReplayedTask::What::kReceive, *e));
      }
      const Seconds pass = (e->end - e->start) * (r == slow_stage ? factor : 1.0);
      const TaskId t = g.AddTask(stream[r], pass);
      out.what.push_back(Described(ReplayedTask::What::kPass, *e));
      index.at(e->kind, e->micro_batch, stage) = t;
      out.last_pass[r] = t;
    }
    if (tail[r].value() > 0) {
      g.AddTask(stream[r], tail[r]);
      ReplayedTask tail_task;
      tail_task.what = ReplayedTask::What::kTail;
      tail_task.rank = static_cast<int32_t>(r);
      tail_task.resource = static_cast<int32_t>(stream[r]);
      out.what.push_back(tail_task);
    }
  }
  // Dependencies: a pass on its producer (through the transfer between ranks), a backward on
  // its own forward, a weight-gradient pass on its backward.
  for (const TimelineEvent& e : medium.timeline) {
    if (!IsPass(e.kind) || e.rank < 0 || e.rank >= pp) continue;
    const int64_t r = e.rank, stage = static_cast<int64_t>(e.chunk) * pp + r;
    const TaskId t = index.at(e.kind, e.micro_batch, stage);
    if (e.kind == TimelineKind::kBackward) {
      g.AddDependency(index.at(TimelineKind::kForward, e.micro_batch, stage), t);
    }
    if (e.kind == TimelineKind::kWeightGrad) {
      g.AddDependency(index.at(TimelineKind::kBackward, e.micro_batch, stage), t);
    }
    int64_t producer = 0;
    if (!ProducerStage(e.kind, stage, stages, producer)) continue;
    const TaskId from = index.at(e.kind, e.micro_batch, producer);
    if (from == PassIndex::kNone) {
      return absl::InternalError("timeline lacks the producer of a pass");
    }
    const int64_t from_rank = producer % pp;
    if (!transfers || from_rank == r) {
      g.AddDependency(from, t);
    } else if (medium.p2p_overlapped) {
      const ResourceId on = link(from_rank, r);
      const TaskId move = g.AddTask(on, medium.p2p_transfer);
      ReplayedTask transfer = Described(ReplayedTask::What::kTransfer, e);
      transfer.rank = static_cast<int32_t>(from_rank);
      transfer.to_rank = e.rank;
      transfer.resource = static_cast<int32_t>(on);
      out.what.push_back(transfer);
      g.AddDependency(from, move);
      g.AddDependency(move, t);
    } else {
      const TaskId recv = receive.at(e.kind, e.micro_batch, stage);
      g.AddDependency(from, recv);
      g.AddDependency(recv, t);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<HighLodResult> ProjectAtHighLod(const Scenario& scenario,
                                               const BackendRefs& backends,
                                               ProjectionOptions options,
                                               std::optional<SlowRank> slow_rank) {
  if (slow_rank && (slow_rank->rank < 0 || slow_rank->rank >= scenario.num_gpus)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--slow-rank: rank %d does not exist; the ranks are 0 to %d",
                        slow_rank->rank, scenario.num_gpus - 1));
  }
  if (slow_rank && !(slow_rank->factor > 0 && std::isfinite(slow_rank->factor))) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--slow-rank: the factor must be a finite number > 0 (2 = twice as slow), got %g",
        slow_rank->factor));
  }
  const double passes = ReplayedPasses(scenario);
  if (passes > kMaxTimelinePasses) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--lod high: the step replays %.0f passes (pp·vpp·micro-batches·passes per micro-batch), "
        "more than the %d the event replay takes; project fewer micro-batches (a smaller global "
        "batch) or --lod medium",
        passes, kMaxTimelinePasses));
  }
  HighLodResult out;
  const auto medium_start = std::chrono::steady_clock::now();
  options.keep_timeline = true;
  PROJECTOR_ASSIGN_OR_RETURN(out.medium, Project(scenario, backends, options));
  out.medium_wall_s = WallSeconds(medium_start);

  const auto high_start = std::chrono::steady_clock::now();
  const int64_t pp = scenario.parallel.pp, vpp = scenario.parallel.vpp;
  events::Simulator sim;
  events::SimulationResult run;
  int64_t slow_stage = -1;
  double factor = 1;
  if (slow_rank) {
    // Global rank r sits on pipeline stage r / (tp·cp·dp) (the layout's rank order).
    slow_stage = slow_rank->rank / scenario.parallel.PpGroup().stride % pp;
    factor = slow_rank->factor;
    PROJECTOR_ASSIGN_OR_RETURN(StepGraph plain, BuildStepGraph(out.medium, pp, vpp, -1, 1.0));
    PROJECTOR_RETURN_IF_ERROR(sim.Run(plain.graph, run));
    out.step_time_without_straggler = run.makespan;
    out.slow_rank = slow_rank;
    out.slow_stage = slow_stage;
  }
  PROJECTOR_ASSIGN_OR_RETURN(StepGraph step,
                             BuildStepGraph(out.medium, pp, vpp, slow_stage, factor));
  PROJECTOR_RETURN_IF_ERROR(sim.Run(step.graph, run));
  out.high_wall_s = WallSeconds(high_start);
  out.step_time = run.makespan;
  for (TaskId t : step.last_pass) {
    if (t != PassIndex::kNone) out.pipeline_time = std::max(out.pipeline_time, run.tasks[t].finish);
  }
  out.tasks = static_cast<int64_t>(step.graph.num_tasks());
  out.resources = static_cast<int64_t>(step.graph.num_resources());
  out.pipeline_ranks = pp;
  out.gpus_per_rank = scenario.parallel.PpGroup().stride;
  out.events = run.events;
  out.timeline = std::move(step.what);
  for (ResourceId id = 0; id < step.graph.num_resources(); ++id) {
    out.resource_use.push_back({.name = step.resource_names[id], .busy = run.busy[id]});
  }
  for (TaskId t = 0; t < out.timeline.size(); ++t) {
    out.timeline[t].start = run.tasks[t].start;
    out.timeline[t].end = run.tasks[t].finish;
  }
  return out;
}

}  // namespace projector
