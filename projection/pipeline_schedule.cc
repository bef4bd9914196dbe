#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

using OpKind = TimelineKind;  // a schedule op is one of its first three kinds

struct ScheduledOp {
  int32_t micro_batch;
  int32_t chunk;
  OpKind kind;
};

// Megatron-core get_schedule_table (pipeline_parallel/schedules.py): micro-batches run in
// groups of `pp` per model chunk; the last group takes the remainder.
// Forward k of a rank runs table[k]; backward k runs table[k] with the chunk order reversed.
void ScheduleTable(int64_t m, int64_t pp, int64_t vpp, std::vector<ScheduledOp>& table) {
  table.clear();
  table.reserve(static_cast<size_t>(m * vpp));
  for (int64_t first = 0; first < m; first += pp) {
    int64_t last = std::min(first + pp, m);
    for (int64_t chunk = 0; chunk < vpp; ++chunk) {
      for (int64_t mb = first; mb < last; ++mb) {
        table.push_back({static_cast<int32_t>(mb), static_cast<int32_t>(chunk), OpKind::kForward});
      }
    }
  }
}

// The op order of one rank: warm-up forwards, steady 1F1B pairs, cool-down backwards
// (Megatron forward_backward_pipelining_{without,with}_interleaving).
void RankOrder(int64_t rank, int64_t pp, int64_t vpp, int64_t m,
               const std::vector<ScheduledOp>& table, std::vector<ScheduledOp>& order) {
  order.clear();
  int64_t total = m * vpp;
  order.reserve(static_cast<size_t>(2 * total));
  int64_t warmup;
  if (vpp == 1) {
    warmup = std::min(pp - rank - 1, m);
  } else if (m == pp) {
    warmup = total;  // Megatron's all_warmup_microbatches
  } else {
    warmup = std::min((pp - rank - 1) * 2 + (vpp - 1) * pp, total);
  }
  auto fwd = [&](int64_t k) { order.push_back(table[static_cast<size_t>(k)]); };
  auto bwd = [&](int64_t k) {
    ScheduledOp op = table[static_cast<size_t>(k)];
    op.chunk = static_cast<int32_t>(vpp - 1 - op.chunk);
    op.kind = OpKind::kBackward;
    order.push_back(op);
  };
  int64_t steady = total - warmup;
  for (int64_t k = 0; k < warmup; ++k) fwd(k);
  for (int64_t k = 0; k < steady; ++k) {
    fwd(warmup + k);
    bwd(k);
  }
  for (int64_t k = steady; k < total; ++k) bwd(k);
}

// ZB-H1 (Qi et al., ICLR 2024, Figure 3): 1F1B's warm-up of p − rank − 1 forwards, then F, B
// pairs, each B followed by the oldest pending W once more than `rank` are pending (rank i
// defers i weight-gradient passes, which fill the bubble 1F1B leaves at its end), then the
// cool-down B's the same way and the deferred W's last.
void ZeroBubbleH1Order(int64_t rank, int64_t pp, int64_t m, std::vector<ScheduledOp>& order) {
  order.clear();
  order.reserve(static_cast<size_t>(3 * m));
  int32_t f = 0, b = 0, w = 0;
  auto push = [&](OpKind kind, int32_t& next) { order.push_back({next++, 0, kind}); };
  auto backward = [&] {
    push(OpKind::kBackward, b);
    if (b - w > rank) push(OpKind::kWeightGrad, w);
  };
  for (int64_t k = 0, warmup = std::min(pp - rank - 1, m); k < warmup; ++k) {
    push(OpKind::kForward, f);
  }
  while (f < m) {
    push(OpKind::kForward, f);
    backward();
  }
  while (b < m) backward();
  while (w < m) push(OpKind::kWeightGrad, w);
}

}  // namespace

namespace {
struct ReplayBuffers {
  std::vector<double> f_end, b_end;
  std::vector<ScheduledOp> table;
  std::vector<std::vector<ScheduledOp>> orders;  // one per rank (at least pp of them)
  std::vector<size_t> next;
  std::vector<double> free_at;
};
}  // namespace

namespace {

absl::Status CheckPipelineSpec(const PipelineSpec& spec) {
  const int64_t p = spec.pp, v = spec.vpp, m = spec.micro_batches;
  if (p < 1 || v < 1 || m < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pipeline: pp, vpp and micro-batches must be >= 1, got ", p, ", ", v, ", ",
                     m));
  }
  if (static_cast<int64_t>(spec.chunks.size()) != p * v) {
    return absl::InvalidArgumentError(absl::StrCat("pipeline: expected ", p * v,
                                                   " chunk times, got ", spec.chunks.size()));
  }
  if (spec.schedule == PipelineSchedule::kZeroBubbleH1 && v > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pipeline: the zb-h1 schedule runs one model chunk per rank, got vpp ", v));
  }
  return absl::OkStatus();
}

// The replay of one schedule: each rank runs its passes in order, a pass starting when its rank
// is free and its producer (the previous stage's forward, the next stage's backward, its own
// forward or backward) is done, plus the P2P transfer across ranks.
class PipelineReplay {
 public:
  PipelineReplay(const PipelineSpec& spec, ReplayBuffers& buffers,
                 std::vector<TimelineEvent>* events, PipelineTimeline& out)
      : spec_(spec),
        p_(spec.pp),
        v_(spec.vpp),
        m_(spec.micro_batches),
        zero_bubble_(spec.schedule == PipelineSchedule::kZeroBubbleH1),
        // The op after which a chunk's gradients are final: its last W, or its last backward.
        grads_final_(zero_bubble_ ? OpKind::kWeightGrad : OpKind::kBackward),
        b_(buffers),
        events_(events),
        out_(out) {}

  // The per-rank pass orders of the schedule, and the completion tables reset.
  void Prepare() {
    const size_t passes = static_cast<size_t>(p_ * v_ * m_);
    // Completion times per (virtual stage, micro-batch); < 0 = not done yet.
    b_.f_end.assign(passes, -1.0);
    b_.b_end.assign(passes, -1.0);
    if (b_.orders.size() < static_cast<size_t>(p_)) b_.orders.resize(static_cast<size_t>(p_));
    if (zero_bubble_) {
      for (int64_t r = 0; r < p_; ++r) ZeroBubbleH1Order(r, p_, m_, b_.orders[static_cast<size_t>(r)]);
    } else {
      ScheduleTable(m_, p_, v_, b_.table);
      for (int64_t r = 0; r < p_; ++r) {
        RankOrder(r, p_, v_, m_, b_.table, b_.orders[static_cast<size_t>(r)]);
      }
    }
    out_.rank_finish.assign(static_cast<size_t>(p_), Seconds(0));
    out_.rank_busy.assign(static_cast<size_t>(p_), Seconds(0));
    out_.last_backward_start.assign(static_cast<size_t>(p_ * v_), Seconds(0));
    out_.last_backward_end.assign(static_cast<size_t>(p_ * v_), Seconds(0));
    out_.first_forward_start.assign(static_cast<size_t>(p_ * v_), Seconds(-1));
    b_.next.assign(static_cast<size_t>(p_), 0);
    b_.free_at.assign(static_cast<size_t>(p_), 0.0);
  }

  int64_t TotalPasses() const {
    int64_t total = 0;
    for (int64_t r = 0; r < p_; ++r) {
      total += static_cast<int64_t>(b_.orders[static_cast<size_t>(r)].size());
    }
    return total;
  }

  // Runs rank r's passes until one waits on a producer not done yet; returns how many ran.
  int64_t AdvanceRank(int64_t r) {
    const std::vector<ScheduledOp>& order = b_.orders[static_cast<size_t>(r)];
    size_t& k = b_.next[static_cast<size_t>(r)];
    double& free = b_.free_at[static_cast<size_t>(r)];
    int64_t ran = 0;
    while (k < order.size()) {
      const ScheduledOp& op = order[k];
      const int64_t vs = op.chunk * p_ + r;
      const size_t idx = static_cast<size_t>(vs * m_ + op.micro_batch);
      bool cross_rank = false;
      const double dep = ProducerEnd(op, vs, idx, cross_rank);
      if (dep < 0) break;  // producer not done yet
      double start;
      if (!cross_rank) {
        start = std::max(free, dep);
      } else if (spec_.p2p_overlapped) {
        start = std::max(free, dep + spec_.p2p.value());
      } else {
        start = std::max(free, dep) + spec_.p2p.value();
      }
      const double dur = PassDuration(op, r);
      Record(op, r, idx, start, dur);
      free = start + dur;
      ++k;
      ++ran;
    }
    return ran;
  }

  void Finish() {
    for (int64_t r = 0; r < p_; ++r) {
      out_.rank_finish[static_cast<size_t>(r)] = Seconds(b_.free_at[static_cast<size_t>(r)]);
      out_.makespan = std::max(out_.makespan, Seconds(b_.free_at[static_cast<size_t>(r)]));
    }
  }

 private:
  // When the pass's producer finished (< 0: not yet); cross_rank when it ran on another rank.
  double ProducerEnd(const ScheduledOp& op, int64_t vs, size_t idx, bool& cross_rank) const {
    const int64_t stages = p_ * v_;
    if (op.kind == OpKind::kForward) {
      if (vs == 0) return 0.0;
      cross_rank = p_ > 1;
      return b_.f_end[idx - static_cast<size_t>(m_)];
    }
    if (op.kind == OpKind::kWeightGrad) return b_.b_end[idx];
    if (vs < stages - 1) {
      cross_rank = p_ > 1;
      return b_.b_end[idx + static_cast<size_t>(m_)];
    }
    return b_.f_end[idx];
  }

  // Under zero bubble the backward is B alone (input gradients); W runs as its own pass.
  double PassDuration(const ScheduledOp& op, int64_t r) const {
    const ChunkTimes& t = spec_.chunks[static_cast<size_t>(r * v_ + op.chunk)];
    if (op.kind == OpKind::kWeightGrad) return t.weight_grad.value();
    if (op.kind == OpKind::kBackward) {
      return zero_bubble_ ? (t.backward - t.weight_grad).value() : t.backward.value();
    }
    return op.micro_batch == 0 ? (t.forward + t.first_forward_extra).value() : t.forward.value();
  }

  void Record(const ScheduledOp& op, int64_t r, size_t idx, double start, double dur) {
    const double end = start + dur;
    const size_t rc = static_cast<size_t>(r * v_ + op.chunk);
    if (op.kind == OpKind::kForward) {
      b_.f_end[idx] = end;
      if (out_.first_forward_start[rc].value() < 0) out_.first_forward_start[rc] = Seconds(start);
    } else if (op.kind == OpKind::kBackward) {
      b_.b_end[idx] = end;
    }
    if (op.kind == grads_final_) {
      out_.last_backward_start[rc] = Seconds(start);
      out_.last_backward_end[rc] = Seconds(end);
    }
    out_.rank_busy[static_cast<size_t>(r)] += Seconds(dur);
    if (events_ != nullptr) {
      events_->push_back({.kind = op.kind,
                          .rank = static_cast<int32_t>(r),
                          .chunk = op.chunk,
                          .micro_batch = op.micro_batch,
                          .start = Seconds(start),
                          .end = Seconds(end)});
    }
  }

  const PipelineSpec& spec_;
  const int64_t p_, v_, m_;
  const bool zero_bubble_;
  const OpKind grads_final_;
  ReplayBuffers& b_;
  std::vector<TimelineEvent>* events_;
  PipelineTimeline& out_;
};

}  // namespace

absl::StatusOr<PipelineTimeline> SimulatePipeline(const PipelineSpec& spec,
                                                  std::vector<TimelineEvent>* events) {
  PROJECTOR_RETURN_IF_ERROR(CheckPipelineSpec(spec));
  // The replay's buffers, kept per thread: a search replays ~10^5 schedules of up to ~10^6 passes
  // each, and fresh vectors of that size cost more in page faults than the replay itself.
  thread_local ReplayBuffers buffers;
  PipelineTimeline out;
  PipelineReplay replay(spec, buffers, events, out);
  replay.Prepare();
  for (int64_t remaining = replay.TotalPasses(); remaining > 0;) {
    int64_t ran = 0;
    for (int64_t r = 0; r < spec.pp; ++r) ran += replay.AdvanceRank(r);
    if (ran == 0) {
      return absl::InternalError(absl::StrCat("pipeline: schedule deadlocked (pp ", spec.pp,
                                              ", vpp ", spec.vpp, ", micro-batches ",
                                              spec.micro_batches, ")"));
    }
    remaining -= ran;
  }
  replay.Finish();
  return out;
}

Seconds PipelineLowerBound(const PipelineSpec& spec) {
  const int64_t p = spec.pp, v = std::max<int64_t>(1, spec.vpp);
  if (p < 1 || static_cast<int64_t>(spec.chunks.size()) != p * v) return Seconds(0);
  const double m = static_cast<double>(spec.micro_batches);
  const bool drains = spec.schedule != PipelineSchedule::kZeroBubbleH1;
  auto chunk = [&spec, v](int64_t rank, int64_t c) -> const ChunkTimes& {
    return spec.chunks[static_cast<size_t>(rank * v + c)];
  };
  Seconds bound;
  Seconds drain;  // chunk 0's backwards on the ranks before r
  // The forwards of each chunk on the ranks before r; the fill is the smallest.
  thread_local std::vector<Seconds> fill_by_chunk;
  fill_by_chunk.assign(static_cast<size_t>(v), Seconds(0));
  for (int64_t r = 0; r < p; ++r) {
    Seconds busy, once;  // once: the first micro-batch's extra forward work
    for (int64_t c = 0; c < v; ++c) {
      busy += chunk(r, c).forward + chunk(r, c).backward;
      once += chunk(r, c).first_forward_extra;
    }
    const Seconds fill = *std::min_element(fill_by_chunk.begin(), fill_by_chunk.end());
    bound = std::max(bound, fill + busy * m + once + (drains ? drain : Seconds(0)));
    for (int64_t c = 0; c < v; ++c) {
      fill_by_chunk[static_cast<size_t>(c)] += chunk(r, c).forward + chunk(r, c).first_forward_extra;
    }
    drain += chunk(r, 0).backward;
  }
  return bound;
}

Seconds OneFOneBClosedForm(int64_t micro_batches, int64_t pp, Seconds f, Seconds b) {
  return (f + b) * static_cast<double>(micro_batches + pp - 1);
}

Seconds InterleavedClosedForm(int64_t micro_batches, int64_t pp, int64_t vpp, Seconds f,
                              Seconds b) {
  return (f + b) * static_cast<double>(micro_batches) +
         (f + b) * (static_cast<double>(pp - 1) / static_cast<double>(vpp));
}

Seconds ZeroBubbleH1ClosedForm(int64_t micro_batches, int64_t pp, Seconds f, Seconds b, Seconds w) {
  return (f + b + w) * static_cast<double>(micro_batches) +
         (f + b - w) * static_cast<double>(pp - 1);
}

int64_t InFlightChunkMicroBatches(int64_t rank, int64_t pp, int64_t vpp, int64_t micro_batches,
                                  PipelineSchedule schedule) {
  if (schedule == PipelineSchedule::kZeroBubbleH1) {
    return std::max<int64_t>(1, std::min(micro_batches, pp));
  }
  if (vpp == 1) return std::max<int64_t>(1, std::min(micro_batches, pp - rank));
  int64_t total = micro_batches * vpp;
  if (micro_batches == pp) return total;
  return std::max<int64_t>(1, std::min(total, (pp - rank - 1) * 2 + (vpp - 1) * pp + 1));
}

int64_t DeferredWeightGradMicroBatches(int64_t rank, int64_t pp, int64_t micro_batches,
                                       PipelineSchedule schedule) {
  if (schedule != PipelineSchedule::kZeroBubbleH1) return 0;
  return std::min({micro_batches, pp, rank + 1});
}

}  // namespace projector
