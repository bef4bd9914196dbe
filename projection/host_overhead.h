// The host side of a training step. The CPU issues every op of the step from Python (PyTorch
// dispatch, the framework's module code, the kernel launch); the GPU runs the kernels in the
// order issued. While the host keeps ahead, its cost hides behind the GPU work queued before
// it; when an op's GPU work is shorter than the host time to issue it, the GPU waits for the
// host ("host-bound"). A device-to-host synchronisation drains the queue: after it, the GPU
// idles until the host issues the next op, and the host's lead is lost.
//
// Where such a sync sits: Megatron-Core's MoEAlltoAllTokenDispatcher.preprocess copies the
// per-expert token counts to the host (`.to(torch.device("cpu"), non_blocking=True)`) and
// synchronises at its cuda_sync_point: "before_ep_alltoall" for a dropless layer with EP or
// several local experts (the All-to-All splits and the grouped GEMM's sizes), and
// "before_permutation_1" for a capacity without padding; a layer padded to its capacity has
// static shapes and sets no sync point. Every MoE layer's forward; backward reuses the counts
// the host already holds. Here the sync sits after the permutation, before the dispatch.
// CUDA graphs (training.cuda_graphs) replay the captured step with one launch: no per-op host
// cost.
//
// Per layer and pass, with H the host time (HostDispatchEquivalents of its ops × the profile's
// host_op_dispatch) and G the GPU time (compute and exposed communication):
//   no sync       exposed = max(0, H − G)   (the host runs ahead within the pass);
//   with a sync   exposed = DrainedMakespan(ops issued after the sync, in order) − G.
#ifndef PROJECTOR_PROJECTION_HOST_OVERHEAD_H_
#define PROJECTOR_PROJECTION_HOST_OVERHEAD_H_

#include <vector>

#include "core/training_config.h"
#include "core/units.h"
#include "profilers/module_profilers.h"
#include "profilers/op_list.h"

namespace projector {

// What the host costs: per framework op dispatch (HardwareProfile::host_op_dispatch; 0 = host
// not modelled), and whether the step is replayed from CUDA graphs.
struct HostCostModel {
  Seconds per_dispatch;
  bool cuda_graphs = false;
  // CPU time to issue `op`: per_dispatch × its weighted calls (HostDispatchEquivalents); none
  // under CUDA graphs.
  Seconds IssueTime(const Op& op) const;
};

// One op as the host issues it: CPU time to issue, GPU time to run.
struct IssuedWork {
  Seconds host;
  Seconds gpu;
};

// Makespan of `seq` issued in order into one GPU stream with both host and GPU idle at the
// start (right after a sync). Op i is issued at H_i = h_1 + ... + h_i and starts when issued and
// its predecessor is done: F_i = max(F_{i−1}, H_i) + g_i, F_0 = 0. Unrolled (max-plus):
//   F_n = max over j of (H_j + g_j + ... + g_n),
// at least max(Σh, Σg) and at most Σh + Σg.
Seconds DrainedMakespan(const std::vector<IssuedWork>& seq);

// Exposed host time of one layer and micro-batch per pass (added to its GPU time).
struct HostExposure {
  Seconds forward;
  Seconds backward;
  Seconds recompute;
};

// The layer's host exposure. `ops` are its timed compute ops (all modules), `comm_ops` the
// collectives the layer composer added; `gpu_forward`, `gpu_backward`, `gpu_recompute` its GPU
// time per pass (compute + exposed communication); `forward_comm` the exposed forward
// communication, placed after the MoE permutation (the dispatch) in the drained sequence.
struct LayerHostInput {
  const LayerProfile& layer;
  const OpList& comm_ops;
  Seconds gpu_forward;
  Seconds gpu_backward;
  Seconds gpu_recompute;
  Seconds forward_comm;
};
HostExposure LayerHostExposure(const LayerHostInput& in, const HostCostModel& host,
                               const TrainingConfig& training);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_HOST_OVERHEAD_H_
