// The high level of detail of serving: each engine pass replayed on the discrete-event engine
// (events/) per layer and per collective step instead of priced as one macro op. On every
// pipeline stage, each TP rank has a compute stream running, layer by layer, the attention
// block's linear ops, one attention kernel per prefill chunk and the decode attention, then the
// rest of the layer (norms, MLP or experts); each all-reduce between them runs as a ring of
// 2(tp − 1) steps, every step a transfer on the link from a rank to the next that waits for the
// chunk it forwards; the embedding and the output head (with their collectives) open and close
// the stream. Every task lasts what the medium level's backends give it (PassCostModel), so
// without contention or stragglers the two levels agree; the events are what the high level
// costs, and what lets a later study put contention and stragglers into a pass.
#ifndef PROJECTOR_SERVING_PASS_EVENTS_H_
#define PROJECTOR_SERVING_PASS_EVENTS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "core/units.h"
#include "events/event_engine.h"
#include "serving/dp_attention.h"
#include "serving/pass_cost.h"

namespace projector {

// A straggler: GPU `gpu` of every replica (stage gpu / tp, TP rank gpu % tp) computes `factor`
// times as long as its peers; its TP peers wait for it at every ring step, the next stage for
// its hand-off.
struct SlowGpu {
  int64_t gpu = -1;  // -1: none
  double factor = 1.0;
};

class EventPassTimer {
 public:
  explicit EventPassTimer(PassCostModel& cost, SlowGpu slow = {}) : cost_(cost), slow_(slow) {}

  // The pass's time on every stage into `out` (size pp): the stage's simulated makespan plus
  // its hand-off to the next stage. Not thread-safe.
  absl::Status StageTimes(const BatchPass& pass, std::span<Seconds> out);
  // Events simulated so far (one per task).
  int64_t events() const { return events_; }

 private:
  absl::StatusOr<Seconds> SimulateStage(const BatchPass& pass, int64_t stage);

  PassCostModel& cost_;
  SlowGpu slow_;
  events::TaskGraph graph_;
  events::Simulator simulator_;
  events::SimulationResult result_;
  std::vector<events::TaskId> last_;   // by TP rank: its stream's latest task
  std::vector<events::TaskId> inbox_;  // by TP rank: the latest ring step into it
  int64_t events_ = 0;
};

// Data-parallel attention (serving/dp_attention.h) at the high level of detail: one lock-step
// pass of the group's tp GPUs, GPU g in attention rank g / (tp/D). Every GPU runs its rank's
// embedding, then layer by layer its rank's side (a dense layer: attention, norms and dense MLP;
// a MoE layer: the attention projections and kernels; the rank's own all-reduces inside them),
// each MoE layer's experts over all ranks' tokens between the gather and the scatter (the two
// halves of a ring all-reduce over the group, tp - 1 steps each) or between DeepEP's dispatch
// and combine (all-to-alls waiting for every GPU), and its rank's output head last. Dense
// layers do not synchronise the ranks; every MoE layer does. A slow GPU slows its rank's side
// and its share of the experts. Balanced ranks give the medium level's time.
class EventDpPassTimer {
 public:
  explicit EventDpPassTimer(DpAttentionCost& cost, SlowGpu slow = {}) : cost_(cost), slow_(slow) {}

  // kInvalidArgument when no rank has a token. Not thread-safe.
  absl::StatusOr<Seconds> PassTime(std::span<const BatchPass> passes);
  int64_t events() const { return events_; }

 private:
  DpAttentionCost& cost_;
  SlowGpu slow_;
  events::TaskGraph graph_;
  events::Simulator simulator_;
  events::SimulationResult result_;
  absl::StatusOr<Seconds> TwoBatchPassTime(std::span<const BatchPass> passes);

  std::vector<events::TaskId> last_;
  std::vector<events::TaskId> inbox_;
  // Two-batch overlap's second micro-batch's chain.
  std::vector<events::TaskId> second_last_;
  std::vector<events::TaskId> second_inbox_;
  std::vector<DpAttentionCost::RankSide> sides_;
  int64_t events_ = 0;
};

}  // namespace projector

#endif  // PROJECTOR_SERVING_PASS_EVENTS_H_
