#include "projection/pipeline_schedule.h"

#include <algorithm>
#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

absl::StatusOr<PipelineTimeline> SimulatePipeline(const PipelineSpec& spec,
                                                  std::vector<TimelineEvent>* events) {
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
  const bool zero_bubble = spec.schedule == PipelineSchedule::kZeroBubbleH1;
  if (zero_bubble && v > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("pipeline: the zb-h1 schedule runs one model chunk per rank, got vpp ", v));
  }
  const int64_t stages = p * v;
  const double p2p = spec.p2p.value();
  // The replay's buffers, kept per thread: a search replays ~10^5 schedules of up to ~10^6 passes
  // each, and fresh vectors of that size cost more in page faults than the replay itself.
  thread_local ReplayBuffers buffers;
  // Completion times per (virtual stage, micro-batch); < 0 = not done yet.
  std::vector<double>& f_end = buffers.f_end;
  std::vector<double>& b_end = buffers.b_end;
  f_end.assign(static_cast<size_t>(stages * m), -1.0);
  b_end.assign(static_cast<size_t>(stages * m), -1.0);

  std::vector<ScheduledOp>& table = buffers.table;
  std::vector<std::vector<ScheduledOp>>& orders = buffers.orders;
  if (orders.size() < static_cast<size_t>(p)) orders.resize(static_cast<size_t>(p));
  if (zero_bubble) {
    for (int64_t r = 0; r < p; ++r) ZeroBubbleH1Order(r, p, m, orders[static_cast<size_t>(r)]);
  } else {
    ScheduleTable(m, p, v, table);
    for (int64_t r = 0; r < p; ++r) RankOrder(r, p, v, m, table, orders[static_cast<size_t>(r)]);
  }
  // The op after which a chunk's gradients are final: its last W, or its last backward.
  const OpKind grads_final = zero_bubble ? OpKind::kWeightGrad : OpKind::kBackward;

  PipelineTimeline out;
  out.rank_finish.assign(static_cast<size_t>(p), Seconds(0));
  out.rank_busy.assign(static_cast<size_t>(p), Seconds(0));
  out.last_backward_start.assign(static_cast<size_t>(p * v), Seconds(0));
  out.last_backward_end.assign(static_cast<size_t>(p * v), Seconds(0));
  out.first_forward_start.assign(static_cast<size_t>(p * v), Seconds(-1));

  std::vector<size_t>& next = buffers.next;
  std::vector<double>& free_at = buffers.free_at;
  next.assign(static_cast<size_t>(p), 0);
  free_at.assign(static_cast<size_t>(p), 0.0);
  int64_t remaining = 0;
  for (int64_t r = 0; r < p; ++r) {
    remaining += static_cast<int64_t>(orders[static_cast<size_t>(r)].size());
  }
  while (remaining > 0) {
    bool progressed = false;
    for (int64_t r = 0; r < p; ++r) {
      const auto& order = orders[static_cast<size_t>(r)];
      size_t& k = next[static_cast<size_t>(r)];
      double& free = free_at[static_cast<size_t>(r)];
      while (k < order.size()) {
        const ScheduledOp& op = order[k];
        int64_t vs = op.chunk * p + r;
        size_t idx = static_cast<size_t>(vs * m + op.micro_batch);
        double dep = 0.0;
        bool cross_rank = false;
        if (op.kind == OpKind::kForward) {
          if (vs > 0) {
            dep = f_end[idx - static_cast<size_t>(m)];
            cross_rank = p > 1;
          }
        } else if (op.kind == OpKind::kWeightGrad) {
          dep = b_end[idx];
        } else if (vs < stages - 1) {
          dep = b_end[idx + static_cast<size_t>(m)];
          cross_rank = p > 1;
        } else {
          dep = f_end[idx];
        }
        if (dep < 0) break;  // producer not done yet
        double start;
        if (!cross_rank) {
          start = std::max(free, dep);
        } else if (spec.p2p_overlapped) {
          start = std::max(free, dep + p2p);
        } else {
          start = std::max(free, dep) + p2p;
        }
        const ChunkTimes& t = spec.chunks[static_cast<size_t>(r * v + op.chunk)];
        double dur = t.forward.value();
        if (op.kind == OpKind::kWeightGrad) {
          dur = t.weight_grad.value();
        } else if (op.kind == OpKind::kBackward) {
          dur = zero_bubble ? (t.backward - t.weight_grad).value() : t.backward.value();
        }
        double end = start + dur;
        size_t rc = static_cast<size_t>(r * v + op.chunk);
        if (op.kind == OpKind::kForward) {
          f_end[idx] = end;
          if (out.first_forward_start[rc].value() < 0) out.first_forward_start[rc] = Seconds(start);
        } else if (op.kind == OpKind::kBackward) {
          b_end[idx] = end;
        }
        if (op.kind == grads_final) {
          out.last_backward_start[rc] = Seconds(start);
          out.last_backward_end[rc] = Seconds(end);
        }
        out.rank_busy[static_cast<size_t>(r)] += Seconds(dur);
        if (events != nullptr) {
          events->push_back({.kind = op.kind,
                             .rank = static_cast<int32_t>(r),
                             .chunk = op.chunk,
                             .micro_batch = op.micro_batch,
                             .start = Seconds(start),
                             .end = Seconds(end)});
        }
        free = end;
        ++k;
        --remaining;
        progressed = true;
      }
    }
    if (!progressed) {
      return absl::InternalError(absl::StrCat("pipeline: schedule deadlocked (pp ", p, ", vpp ",
                                              v, ", micro-batches ", m, ")"));
    }
  }
  for (int64_t r = 0; r < p; ++r) {
    out.rank_finish[static_cast<size_t>(r)] = Seconds(free_at[static_cast<size_t>(r)]);
    out.makespan = std::max(out.makespan, Seconds(free_at[static_cast<size_t>(r)]));
  }
  return out;
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
