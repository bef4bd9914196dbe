// Pipeline schedules: replays Megatron's 1F1B and interleaved 1F1B (virtual pipeline) schedules
// and the zero-bubble ZB-H1 schedule over the pipeline ranks with per-(rank, chunk)
// forward/backward times and a P2P transfer time, and returns when every rank finishes. With
// uniform stages and free P2P the result equals the closed forms (m + p − 1)(f + b),
// m(f + b) + (p − 1)(f + b)/v and m(f + b + w) + (p − 1)(f + b − w).
//
//   1F1B, p = 4, m = 6 (F = forward, B = backward of micro-batch k):
//   rank 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 .. B3 .. B4 .. B5
//   rank 3:          F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5
//
//   ZB-H1, p = 4, m = 6 (B = input gradients only, W = weight gradients; rank i defers i W's):
//   rank 0: F0 F1 F2 F3 B0 W0 F4 B1 W1 F5 B2 W2 B3 W3 B4 W4 B5 W5
//   rank 3:          F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 W3 W4 W5
#ifndef PROJECTOR_PROJECTION_PIPELINE_SCHEDULE_H_
#define PROJECTOR_PROJECTION_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "core/op_shapes.h"
#include "core/parallel_config.h"
#include "core/units.h"

namespace projector {

struct ChunkTimes {
  Seconds forward;   // one micro-batch through this model chunk
  Seconds backward;  // incl. recompute and weight_grad
  // The part of `backward` that computes weight gradients (wgrad GEMMs, embedding grad): a
  // zero-bubble schedule runs it as its own op W after the rest (B); 1F1B runs them as one.
  Seconds weight_grad;
  // Added once, to the step's first micro-batch's forward (work cached for the others: the
  // fp8 weight casts, OpPhase::kOncePerStep).
  Seconds first_forward_extra = Seconds(0);
};

struct PipelineSpec {
  int64_t pp = 1;
  int64_t vpp = 1;  // model chunks per rank; > 1 = interleaved
  int64_t micro_batches = 1;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;  // kZeroBubbleH1 needs vpp == 1
  // Index rank · vpp + chunk; virtual stage of (rank, chunk) = chunk · pp + rank.
  std::vector<ChunkTimes> chunks;
  // One activation (or activation-gradient) transfer between neighbouring stages.
  Seconds p2p;
  // false: the receive is a rendezvous on the rank's timeline (Megatron 1F1B's blocking
  // send_forward_recv_backward): start = max(rank free, producer done) + p2p.
  // true: the transfer runs on its own stream (interleaved with overlap_p2p_comm, Megatron's
  // default): start = max(rank free, producer done + p2p).
  bool p2p_overlapped = false;
};

struct PipelineTimeline {
  Seconds makespan;                  // all ranks done
  std::vector<Seconds> rank_finish;  // per rank: its last backward done
  std::vector<Seconds> rank_busy;    // per rank: sum of its forward and backward times
  // Per (rank · vpp + chunk): start and end of that chunk's last backward (the one after which
  // its gradients are final: where Megatron's overlapped grad reduce fires); under a
  // zero-bubble schedule, of its last W.
  std::vector<Seconds> last_backward_start;
  std::vector<Seconds> last_backward_end;
  // Per (rank · vpp + chunk): start of its first forward (param all-gather deadline).
  std::vector<Seconds> first_forward_start;
};

// One op of a replayed step on one pipeline rank (`--trace`): the schedule's forward, backward
// and weight-gradient passes of one (micro-batch, chunk), and what the step composer adds: the
// tail after the rank's last pass (exposed DP gradient sync and parameter gather, optimizer
// step) and, on the rank's communication stream, each DP gradient bucket's reduce.
enum class TimelineKind : uint8_t {
  kForward,
  kBackward,
  kWeightGrad,
  kGradSync,
  kOptimizer,
  kGradReduce
};
struct TimelineEvent {
  TimelineKind kind = TimelineKind::kForward;
  int32_t rank = 0;
  int32_t chunk = -1;        // -1 for the tail
  int32_t micro_batch = -1;  // -1 for the tail
  Seconds start, end;
  // kGradReduce: the bucket's gradients are final once this fraction of `chunk`'s last backward
  // (its last W under zero bubble) has run; chunk -1: after the rank's last pass (no
  // overlap_grad_reduce).
  double ready_fraction = 1;
  bool expert_buffer = false;  // kGradReduce: a bucket of the expert weights' gradients
  // kGradReduce: the collective (all-reduce, or reduce-scatter with the distributed optimizer)
  // and its bytes, on the DP group (dense or expert).
  CollectiveKind reduce_kind = CollectiveKind::kAllReduce;
  Bytes reduce_bytes = Bytes(0);
};

// kInvalidArgument for pp, vpp or micro_batches < 1, a chunk table of the wrong size, or a
// zero-bubble schedule with vpp > 1. With `events`, appends every pass it replays to it.
absl::StatusOr<PipelineTimeline> SimulatePipeline(const PipelineSpec& spec,
                                                  std::vector<TimelineEvent>* events = nullptr);

// A lower bound on the makespan SimulatePipeline gives for `spec` (whatever its P2P), without
// replaying it: every rank r runs its m·vpp forward and backward passes one after another
// (busy_r = m · sum over its chunks of f + b, plus their first_forward_extra once); its first
// pass, a forward of some chunk c, waits for that chunk's first forwards on ranks 0..r−1
// (fill_r = min over c of the sum of f + first_forward_extra over j < r);
// and its last pass is a backward, after which chunk 0's backward of the same micro-batch still
// runs on ranks r−1..0 (drain_r = the sum of chunk 0's b over j < r; 0 under zb-h1, whose last
// pass on a rank may be a weight-gradient pass that nothing waits for). The bound is
// max over r of fill_r + busy_r + drain_r: exact for one rank, and the closed forms' (m + p − 1)
// (f + b) for 1F1B over uniform stages, whose fill and drain are the bubble.
Seconds PipelineLowerBound(const PipelineSpec& spec);

// Closed forms for uniform stages (f, b = one micro-batch through one whole stage).
Seconds OneFOneBClosedForm(int64_t micro_batches, int64_t pp, Seconds f, Seconds b);
Seconds InterleavedClosedForm(int64_t micro_batches, int64_t pp, int64_t vpp, Seconds f, Seconds b);
// ZB-H1 with m >= p and w <= min(f, b) (b = the input-gradient part, w = the weight-gradient
// part; a longer W delays the next F or B a neighbour waits for): m(f + b + w) + (p − 1)(f+b−w).
// Rank p−1 runs its m F and B ops back to back (its B needs only its own F) with its W's in between
// once i = p−1 of them are deferred, so its last B ends at (p−1)f + m(f+b) + (m−p)w; that B reaches
// rank 0 after (p−1) more b (each rank on the way is idle or finishing a W no longer than b), and
// rank 0 then runs its one deferred W: (p−1)f + m(f+b) + (m−p)w + (p−1)b + w = m(f+b+w) +
// (p−1)(f+b−w). Every other rank i ends earlier: its last B at the same T + (p−1−i)b, then i+1 W's,
// and (i+1)w ≤ w + i·b.
Seconds ZeroBubbleH1ClosedForm(int64_t micro_batches, int64_t pp, Seconds f, Seconds b, Seconds w);

// Micro-batches in flight on `rank` at the schedule's steady state, counted in (micro-batch,
// chunk) units: Megatron's warm-up count + 1, capped by m · vpp.
//   1F1B:        min(m, p − rank)
//   interleaved: min(m·v, (p − rank − 1)·2 + (v − 1)·p + 1)   (all of m·v when m == p)
//   ZB-H1:       min(m, p) on every rank: the p − rank of 1F1B plus the rank micro-batches
//                whose W is deferred, which keep the inputs and output gradients of their
//                linear layers (counted as whole activations; Qi et al. bound every rank by
//                1F1B's first-stage peak)
int64_t InFlightChunkMicroBatches(int64_t rank, int64_t pp, int64_t vpp, int64_t micro_batches,
                                  PipelineSchedule schedule = PipelineSchedule::kOneFOneB);
// Of those, the most that are past their B and wait for their W at the peak: ZB-H1
// min(m, rank + 1) (rank i defers i W's, and the micro-batch whose B just ended waits for its
// W too: right after a B the rank holds p − i − 1 micro-batches before B and i + 1 after);
// 0 for 1F1B.
int64_t DeferredWeightGradMicroBatches(int64_t rank, int64_t pp, int64_t micro_batches,
                                       PipelineSchedule schedule);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_PIPELINE_SCHEDULE_H_
