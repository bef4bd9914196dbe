// Pass plans: what one micro-batch's forward or backward pass of a model chunk runs, in
// execution order, as an event replay (studies/lod_high.h) lays it out on a GPU's stream and
// links: each layer's modules' compute, and each of its TP, CP and EP collectives one by one
// where the layer issues it (an all-gather or an All-to-All dispatch before the module it
// feeds, a reduction or a combine after it), with the time the medium projection left exposed.
#ifndef PROJECTOR_PROJECTION_PASS_PLAN_H_
#define PROJECTOR_PROJECTION_PASS_PLAN_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/op_shapes.h"
#include "core/units.h"
#include "profilers/op_list.h"
#include "projection/step_composer.h"

namespace projector {

// One piece of a pass. Consecutive compute of one module is one segment: on an in-order stream
// nothing comes between its kernels, so an event per kernel would change no time.
struct PassSegment {
  CommDim dim = CommDim::kNone;  // kNone: compute; kTp, kCp, kEp: one collective
  CollectiveKind kind = CollectiveKind::kAllReduce;  // the collective's
  ProcessGroup group = {};                           // the collective's
  // The module ("attention", "mlp", "moe", "norms", "embedding", "output") or the collective
  // ("tp_allreduce", "ep_dispatch_combine", ...): static strings.
  std::string_view name;
  int32_t unit = 0;    // the chunk's FSDP unit it belongs to (its embedding, layers, output, MTP)
  int32_t layer = -1;  // the model's layer (MTP modules after the last), -1 for an end module
  // Compute: the module's time; a collective: its exposed time (the layer's exposed time of
  // its dimension and phase, shared over the dimension's collectives by their full time).
  Seconds time;
  // A collective's full time before any overlap (what of it is not `time` hides behind
  // compute), and where it runs once in the segment its message (the collective's bytes), so
  // that a replay can run it as its algorithm's steps; bytes 0 for one the segment holds several
  // runs of (the CP ring's steps).
  Bytes bytes = {};
  Seconds full = {};
};

// A chunk's passes for one micro-batch. The backward holds each recomputed layer's recompute
// forward just before its backward, units in reverse.
struct ChunkPlan {
  std::vector<PassSegment> forward, backward;
  int32_t units = 0;
};

// The plans of every chunk (index rank · vpp + chunk, as `chunks`), from the composed layer
// kinds and end modules of `in` (an end module's vocab-parallel collectives as one TP all-reduce
// after its compute).
std::vector<ChunkPlan> PlanChunks(const StepInputs& in, const std::vector<ChunkAssignment>& chunks);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_PASS_PLAN_H_
