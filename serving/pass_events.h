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

#include "absl/status/status.h"
#include "core/units.h"
#include "events/event_engine.h"
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

}  // namespace projector

#endif  // PROJECTOR_SERVING_PASS_EVENTS_H_
