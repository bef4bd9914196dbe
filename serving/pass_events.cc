#include "serving/pass_events.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "core/status_macros.h"

namespace projector {
namespace {

using events::ResourceId;
using events::ResourceOrder;
using events::TaskGraph;
using events::kNoTask;
using events::TaskId;

// Builds one stage's graph: `tp` compute streams (resources 0 .. tp-1) and the ring links from
// each rank to the next (tp .. 2tp-1).
class StageBuilder {
 public:
  // A new graph of tp in-order compute streams and tp first-ready links; with `fresh` false a
  // second chain of work on the graph another builder made (two-batch overlap's second
  // micro-batch), its tasks in order with the first's on each compute stream.
  StageBuilder(TaskGraph& graph, std::vector<TaskId>& last, std::vector<TaskId>& inbox, int64_t tp,
               int64_t slow_rank, double slow_factor, bool fresh = true)
      : graph_(graph),
        last_(last),
        inbox_(inbox),
        tp_(static_cast<size_t>(tp)),
        slow_rank_(slow_rank),
        slow_factor_(slow_factor) {
    if (fresh) {
      graph_.Clear();
      for (size_t r = 0; r < 2 * tp_; ++r) {
        graph_.AddResource(r < tp_ ? ResourceOrder::kInOrder : ResourceOrder::kFirstReady);
      }
    }
    last_.assign(tp_, kNoTask);
    inbox_.assign(tp_, kNoTask);
  }

  // A task of `duration` on every rank's stream, after the rank's last ring step when an
  // all-reduce came before it.
  void Compute(Seconds duration) {
    ComputeEach([duration](size_t) { return duration; });
  }
  // The same with `duration(rank)` on each rank.
  template <typename Duration>
  void ComputeEach(Duration duration) {
    for (size_t r = 0; r < tp_; ++r) {
      const Seconds d = duration(r);
      const bool slow = static_cast<int64_t>(r) == slow_rank_;
      const TaskId t = graph_.AddTask(static_cast<ResourceId>(r), slow ? d * slow_factor_ : d);
      if (inbox_[r] != kNoTask) graph_.AddDependency(inbox_[r], t);
      last_[r] = t;
    }
    std::fill(inbox_.begin(), inbox_.end(), kNoTask);
  }

  // A ring all-reduce of `total` (its medium-level time): 2(tp - 1) steps of total/steps, each
  // a transfer from every rank to the next. The first step waits for both ends' compute; each
  // later step forwards what the sender received in the step before.
  void AllReduce(Seconds total) {
    if (tp_ < 2) return;
    RingSteps(total / static_cast<double>(2 * (tp_ - 1)), 2 * (tp_ - 1));
  }
  // One half of such a ring, tp - 1 steps of `step`: the all-gather (or the reduce-scatter).
  void HalfRing(Seconds step) {
    if (tp_ < 2) return;
    RingSteps(step, tp_ - 1);
  }
  // An all-to-all of `duration`: every rank's transfer waits for every rank's compute.
  void AllToAll(Seconds duration) {
    scratch_.resize(tp_);
    for (size_t r = 0; r < tp_; ++r) {
      const TaskId t = graph_.AddTask(static_cast<ResourceId>(tp_ + r), duration);
      for (size_t from = 0; from < tp_; ++from) graph_.AddDependency(last_[from], t);
      scratch_[r] = t;
    }
    inbox_.swap(scratch_);
  }

 private:
  void RingSteps(Seconds step, size_t steps) {
    std::vector<TaskId>& received = scratch_;
    received.assign(tp_, kNoTask);
    for (size_t k = 0; k < steps; ++k) {
      for (size_t r = 0; r < tp_; ++r) {
        const size_t next = (r + 1) % tp_;
        const TaskId t = graph_.AddTask(static_cast<ResourceId>(tp_ + r), step);
        if (k == 0) {
          graph_.AddDependency(last_[r], t);
          graph_.AddDependency(last_[next], t);
        } else {
          graph_.AddDependency(inbox_[r], t);
        }
        received[next] = t;
      }
      inbox_.swap(received);
    }
  }

  TaskGraph& graph_;
  std::vector<TaskId>& last_;
  std::vector<TaskId>& inbox_;
  std::vector<TaskId> scratch_;
  const size_t tp_;
  const int64_t slow_rank_;  // -1: none on this stage
  const double slow_factor_;
};

}  // namespace

absl::StatusOr<Seconds> EventPassTimer::SimulateStage(const BatchPass& pass, int64_t stage) {
  const Deployment& d = cost_.deployment();
  const StageLayers& layers = cost_.stages()[static_cast<size_t>(stage)];
  PROJECTOR_ASSIGN_OR_RETURN(const PassBreakdown whole, cost_.Breakdown(pass, stage));
  const int64_t tokens = pass.NewTokens();
  const bool slow_here = slow_.gpu >= 0 && slow_.gpu / d.tp == stage;
  StageBuilder b(graph_, last_, inbox_, d.tp, slow_here ? slow_.gpu % d.tp : -1, slow_.factor);
  // The embedding or output head's share of the breakdown, with its collectives.
  Seconds layer_comm(0);
  std::vector<Seconds> chunks;
  chunks.reserve(pass.prefills.size());
  for (const PrefillChunk& c : pass.prefills) {
    PROJECTOR_ASSIGN_OR_RETURN(const Seconds t, cost_.PrefillAttention(c));
    chunks.push_back(t);
  }
  PROJECTOR_ASSIGN_OR_RETURN(const Seconds decode,
                             cost_.DecodeAttention(pass.decode_sequences, pass.decode_kv_tokens));
  std::vector<PassCostModel::LayerParts> parts;
  for (int64_t l = layers.first; l < layers.first + layers.count; ++l) {
    PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts p,
                               cost_.Parts(tokens, d.model.IsMoeLayer(l)));
    layer_comm += p.all_reduce * 2.0;
    parts.push_back(p);
  }
  const Seconds head_comm = whole.tp_comm - layer_comm;
  const bool first = stage == 0;
  if (first) b.Compute(whole.head + head_comm);  // the embedding lookup and its all-reduce
  for (const PassCostModel::LayerParts& p : parts) {
    b.Compute(p.attention_linear);
    for (Seconds t : chunks) b.Compute(t);
    if (pass.decode_sequences > 0) b.Compute(decode);
    b.AllReduce(p.all_reduce);
    b.Compute(p.mlp_linear);
    b.AllReduce(p.all_reduce);
  }
  if (!first && stage == d.pp - 1) b.Compute(whole.head + head_comm);
  PROJECTOR_RETURN_IF_ERROR(simulator_.Run(graph_, result_));
  events_ += result_.events;
  return result_.makespan + whole.pp_send;
}

absl::Status EventPassTimer::StageTimes(const BatchPass& pass, std::span<Seconds> out) {
  const int64_t pp = cost_.deployment().pp;
  if (static_cast<int64_t>(out.size()) != pp) {
    return absl::InternalError("StageTimes: one slot per pipeline stage");
  }
  for (int64_t s = 0; s < pp; ++s) {
    PROJECTOR_ASSIGN_OR_RETURN(out[static_cast<size_t>(s)], SimulateStage(pass, s));
  }
  return absl::OkStatus();
}

absl::StatusOr<Seconds> EventDpPassTimer::PassTime(std::span<const BatchPass> passes) {
  const Deployment& d = cost_.deployment();
  if (d.deepep && d.two_batch_overlap) return TwoBatchPassTime(passes);
  const int64_t per_rank = d.tp / d.dp_attention;
  sides_.clear();
  int64_t tokens = 0;
  for (const BatchPass& pass : passes) {
    PROJECTOR_ASSIGN_OR_RETURN(DpAttentionCost::RankSide side, cost_.Side(pass));
    sides_.push_back(side);
    tokens += pass.NewTokens();
  }
  if (tokens < 1) return absl::InvalidArgumentError("a pass needs at least one new token");
  PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts experts, cost_.Experts(tokens));
  DpAttentionCost::AllToAllTimes a2a;
  if (d.deepep) {
    PROJECTOR_ASSIGN_OR_RETURN(a2a, cost_.DeepEpDispatchAndCombine(passes));
  }
  StageBuilder b(graph_, last_, inbox_, d.tp, slow_.gpu < d.tp ? slow_.gpu : -1, slow_.factor);
  auto side = [&](size_t gpu) -> const DpAttentionCost::RankSide& {
    return sides_[gpu / static_cast<size_t>(per_rank)];
  };
  b.ComputeEach([&](size_t g) { return side(g).embedding; });
  const Seconds ring_step = experts.all_reduce / static_cast<double>(2 * (d.tp - 1));
  for (int64_t l = 0; l < d.model.num_layers; ++l) {
    if (!d.model.IsMoeLayer(l)) {
      b.ComputeEach([&](size_t g) { return side(g).dense.Total(); });
      continue;
    }
    b.ComputeEach([&](size_t g) { return side(g).moe.Total(); });
    if (d.deepep) {
      b.AllToAll(a2a.dispatch);
      b.Compute(experts.mlp_linear);
      b.AllToAll(a2a.combine);
    } else {
      b.HalfRing(ring_step);
      b.Compute(experts.mlp_linear);
      b.HalfRing(ring_step);
    }
  }
  b.ComputeEach([&](size_t g) { return side(g).head.Total() - side(g).embedding; });
  PROJECTOR_RETURN_IF_ERROR(simulator_.Run(graph_, result_));
  events_ += result_.events;
  return result_.makespan;
}

// Two-batch overlap as events: the two halves of every rank's pass (SplitPass) are two chains
// of work on the same GPUs, added layer by layer in SGLang's order (first half's attention side
// and dispatch, second half's attention side and dispatch, first half's experts and combine,
// second half's experts and combine): each GPU's compute stream runs its tasks in that order,
// a dispatch or combine waits for its own half's compute on every GPU, and a half's next step
// for its own all-to-all, so one half's communication runs while the other computes. The
// embedding comes before both halves, the output head after both.
absl::StatusOr<Seconds> EventDpPassTimer::TwoBatchPassTime(std::span<const BatchPass> passes) {
  const Deployment& d = cost_.deployment();
  const int64_t per_rank = d.tp / d.dp_attention;
  const DeepEpMode kernels = cost_.DeepEpKernels(passes);
  struct Half {
    std::vector<DpAttentionCost::RankSide> sides;
    int64_t tokens = 0, busiest = 0;
    Seconds experts;
    DpAttentionCost::AllToAllTimes a2a;
  };
  Half halves[2];
  sides_.clear();
  for (const BatchPass& pass : passes) {
    PROJECTOR_ASSIGN_OR_RETURN(DpAttentionCost::RankSide whole, cost_.Ends(pass));
    sides_.push_back(whole);
    const std::pair<BatchPass, BatchPass> split = SplitPass(pass);
    for (int h = 0; h < 2; ++h) {
      const BatchPass& part = h == 0 ? split.first : split.second;
      PROJECTOR_ASSIGN_OR_RETURN(DpAttentionCost::RankSide side, cost_.LayerSide(part));
      halves[h].sides.push_back(side);
      halves[h].tokens += part.NewTokens();
      halves[h].busiest = std::max(halves[h].busiest, part.NewTokens());
    }
  }
  if (halves[0].tokens < 1) {
    return absl::InvalidArgumentError("a pass needs at least one new token");
  }
  for (Half& half : halves) {
    if (half.tokens < 1) continue;  // one token in all: the second half is empty
    PROJECTOR_ASSIGN_OR_RETURN(const PassCostModel::LayerParts experts, cost_.Experts(half.tokens));
    half.experts = experts.mlp_linear;
    PROJECTOR_ASSIGN_OR_RETURN(half.a2a, cost_.DeepEpTimes(half.busiest, kernels));
  }
  const int64_t slow = slow_.gpu < d.tp ? slow_.gpu : -1;
  StageBuilder first(graph_, last_, inbox_, d.tp, slow, slow_.factor);
  StageBuilder second(graph_, second_last_, second_inbox_, d.tp, slow, slow_.factor,
                      /*fresh=*/false);
  StageBuilder* chain[2] = {&first, &second};
  auto rank_of = [&](size_t gpu) { return gpu / static_cast<size_t>(per_rank); };
  first.ComputeEach([&](size_t g) { return sides_[rank_of(g)].embedding; });
  for (int64_t l = 0; l < d.model.num_layers; ++l) {
    if (!d.model.IsMoeLayer(l)) {
      for (int h = 0; h < 2; ++h) {
        chain[h]->ComputeEach(
            [&](size_t g) { return halves[h].sides[rank_of(g)].dense.Total(); });
      }
      continue;
    }
    for (int h = 0; h < 2; ++h) {
      chain[h]->ComputeEach([&](size_t g) { return halves[h].sides[rank_of(g)].moe.Total(); });
      chain[h]->AllToAll(halves[h].a2a.dispatch);
    }
    for (int h = 0; h < 2; ++h) {
      chain[h]->Compute(halves[h].experts);
      chain[h]->AllToAll(halves[h].a2a.combine);
    }
  }
  second.Compute(Seconds(0));  // the second half's last combine, before the head
  first.ComputeEach([&](size_t g) {
    const DpAttentionCost::RankSide& whole = sides_[rank_of(g)];
    return whole.head.Total() - whole.embedding;
  });
  PROJECTOR_RETURN_IF_ERROR(simulator_.Run(graph_, result_));
  events_ += result_.events;
  return result_.makespan;
}

}  // namespace projector
