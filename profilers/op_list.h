// The op list: the project's intermediate representation. A profiler turns one module of one
// layer and one micro-batch into ops (GEMMs, attention kernels, memory-bound kernels,
// collectives), each tagged with its phase, FLOPs and bytes; backends then time each op.
#ifndef PROJECTOR_PROFILERS_OP_LIST_H_
#define PROJECTOR_PROFILERS_OP_LIST_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "backends/attention_backend.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"
#include "backends/memory_backend.h"
#include "core/op_shapes.h"
#include "core/units.h"

namespace projector {

enum class OpKind { kGemm, kAttention, kMemory, kCollective };
// kOncePerStep: work done once per step, in the forward of the step's first micro-batch
// only (Transformer Engine casts a weight to fp8 there and reuses the cached copy for the
// step's other micro-batches); the step composer adds it once to each stage's first forward.
enum class OpPhase { kForward, kBackwardDgrad, kBackwardWgrad, kRecompute, kOncePerStep };
// Which parallel dimension a collective runs over.
enum class CommDim { kNone, kTp, kCp, kEp, kDp, kPp };
// Where an op's time came from (profile mode marks measured and scaled terms).
enum class Provenance { kSimulated, kMeasured, kScaledFromMeasured };

std::string_view OpKindName(OpKind k);
std::string_view OpPhaseName(OpPhase p);
std::string_view CommDimName(CommDim d);
std::string_view ProvenanceName(Provenance p);

struct Op {
  std::string_view name;    // static string: "qkv_proj", "attention_core", "ep_dispatch" ...
  std::string_view module;  // static string: "attention", "mlp", "moe", "embedding", ...
  OpKind kind = OpKind::kGemm;
  OpPhase phase = OpPhase::kForward;
  CommDim comm_dim = CommDim::kNone;
  // Exactly one of these describes the op, by `kind`.
  GemmShape gemm;
  AttentionShape attention;
  AttentionPass attention_pass = AttentionPass::kForward;
  MemoryOp memory;
  CollectiveOp collective;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  // The op runs `repeat` times back to back (legacy grouped GEMM: one GEMM per local expert).
  int64_t repeat = 1;
  // Framework calls the host makes per kernel of this op: 1, or the local experts of a
  // Transformer Engine GroupedLinear, which splits its input and issues each expert's
  // quantisation and GEMM separately (TE issue #1499, a maintainer's answer: the CPU overheads
  // of torch.split and of 2·num_gemms torch.empty calls, then one cuBLAS GEMM per expert).
  int64_t host_fanout = 1;
  // Dispatch-equivalents the host spends per repeat beyond the op's kernels: the Python of a
  // Transformer Engine module call around its GEMM (ModuleOpBuilder, kTeModuleExtraDispatches).
  double host_extra = 0;
  Flops flops;  // all repeats
  Bytes bytes;  // HBM traffic (or bytes on the wire for collectives), all repeats

  // Filled by timing.
  Seconds time;               // all repeats
  Seconds clock_scaled_time;  // part of `time` that scales with 1/clock
  Provenance provenance = Provenance::kSimulated;
};

using OpList = std::vector<Op>;

// Non-owning views of the four backend families.
struct BackendRefs {
  const GemmBackend& gemm;
  const AttentionBackend& attention;
  const MemoryBackend& memory;
  const CollectiveBackend& collective;
};

// Times every op with the backends (time = repeat × one estimate).
absl::Status TimeOps(const BackendRefs& backends, OpList& ops);

// Framework calls the host makes to run the op, in dispatch-equivalents (a Python-level op
// dispatch launching kernels): repeat × (kernels per repeat (a memory op's launches, else 1) ×
// host_fanout + host_extra).
double HostDispatches(const Op& op);

// Host time of one framework call of an op of `kind` in `phase`, relative to an nn.Linear
// forward (the call behind a profile's host_op_dispatch_us). Measured in this project with
// PyTorch 2.11 on the lent H200's host (tools/gpu_host_probe.py, three runs, session 31;
// docs/gpu_measurements.md), each figure over the nn.Linear forward of the same run: a GEMM's
// backward (dgrad or wgrad) 1.57 (a Linear chain's backward per layer over two GEMMs), an
// element-wise kernel 0.39 forward (torch.add and F.silu, autograd recording) and 0.92 backward
// (a SiLU chain's backward per op), SDPA's fused attention 1.56 forward and 5.24 backward (its
// backward issues several kernels). A recomputed op is a forward call; a collective is taken
// at 1 (not measured).
double HostCallWeight(OpKind kind, OpPhase phase);

// HostDispatches with each call weighted by HostCallWeight (a module's Python, host_extra, is
// already in dispatch-equivalents): the op's host time over the profile's host_op_dispatch.
double HostDispatchEquivalents(const Op& op);

// Sum of op times whose phase is `phase` (and module, when not empty).
Seconds SumTime(const OpList& ops, OpPhase phase, std::string_view module = {});

}  // namespace projector

#endif  // PROJECTOR_PROFILERS_OP_LIST_H_
