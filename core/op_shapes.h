// Plain descriptions of the ops the backends time: GEMMs, flash attention, memory-bound kernels
// and collectives on a process group. Profilers build them; backends estimate them.
#ifndef PROJECTOR_CORE_OP_SHAPES_H_
#define PROJECTOR_CORE_OP_SHAPES_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/units.h"

namespace projector {

// C[m,n] = A[m,k] · B[k,n], `batch` independent problems of the same shape.
struct GemmShape {
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int64_t batch = 1;
  DType dtype = DType::kBf16;
  bool transpose_a = false;
  bool transpose_b = false;
  // FP8 operands scaled per block of the K dimension inside the main loop (Transformer Engine's
  // blockwise 1x128/128x128 and MXFP8 recipes) rather than once per tensor or row in the
  // epilogue (delayed, current and rowwise scaling); GpuSpec::GemmEfficiency prices the
  // difference.
  bool block_scaled = false;
  // The batch issued as this many kernels rather than one (1 <= kernels <= batch): Transformer
  // Engine's GroupedLinear launches one cuBLAS GEMM per local expert, spread over its 4 compute
  // streams (multi_stream_cublas_gemm). The tiles keep the batched schedule; each kernel beyond
  // the first adds a launch (measured on an H200: docs/gpu_measurements.md, session 30).
  int64_t kernels = 1;

  bool operator==(const GemmShape&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const GemmShape& s) {
    return H::combine(std::move(h), s.m, s.n, s.k, s.batch, s.dtype, s.transpose_a, s.transpose_b,
                      s.block_scaled, s.kernels);
  }
};

// 2·m·n·k·batch.
constexpr Flops GemmFlops(const GemmShape& s) {
  return Flops(2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) *
               static_cast<double>(s.k) * static_cast<double>(s.batch));
}

enum class AttentionPass { kForward, kBackward };

// Flash-attention call: `batch` sequences, query heads attending over key/value heads (GQA/MQA
// when num_kv_heads < num_q_heads), qk and v head dims (they differ for MLA: 192/128).
struct AttentionShape {
  int64_t batch = 1;
  int64_t num_q_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t seq_q = 0;
  int64_t seq_kv = 0;
  int64_t qk_head_dim = 0;
  int64_t v_head_dim = 0;
  bool causal = true;
  DType dtype = DType::kBf16;

  bool operator==(const AttentionShape&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const AttentionShape& s) {
    return H::combine(std::move(h), s.batch, s.num_q_heads, s.num_kv_heads, s.seq_q, s.seq_kv,
                      s.qk_head_dim, s.v_head_dim, s.causal, s.dtype);
  }
};

// Matmul FLOPs of flash attention by the convention of the FA benchmarks
// (Dao-AILab benchmark_flash_attention.py): forward 2·B·Hq·Sq·Skv·(Dqk + Dv), halved when causal
// (for Sq == Skv); backward 2.5× forward (five GEMMs instead of two).
constexpr Flops AttentionFlops(const AttentionShape& s, AttentionPass pass) {
  double f = 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.num_q_heads) *
             static_cast<double>(s.seq_q) * static_cast<double>(s.seq_kv) *
             static_cast<double>(s.qk_head_dim + s.v_head_dim);
  if (s.causal) f *= 0.5;
  if (pass == AttentionPass::kBackward) f *= 2.5;
  return Flops(f);
}

// The kernel of a scatter-add that accumulates rows into fewer rows by one atomic add per
// element, whose time follows the number of adds rather than the bytes (measured:
// docs/gpu_measurements.md, session 30): PyTorch's scatter_add_ (also torch.gather's backward)
// or its index_add (also index_select's backward), a different kernel at about half the rate.
enum class AtomicAddKernel { kNone, kScatterAdd, kIndexAdd };

// A memory-bound kernel (norm, residual add, activation, RoPE, permutation, optimizer update,
// embedding lookup): bytes read plus written, optional vector FLOPs, number of kernel launches,
// and for a scatter-add by atomics its kernel and element adds.
struct MemoryOp {
  Bytes bytes;
  Flops flops;
  int64_t launches = 1;
  AtomicAddKernel atomic_kernel = AtomicAddKernel::kNone;
  double atomic_adds = 0;

  bool operator==(const MemoryOp&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const MemoryOp& s) {
    return H::combine(std::move(h), s.bytes.value(), s.flops.value(), s.launches,
                      s.atomic_kernel, s.atomic_adds);
  }
};

enum class CollectiveKind { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kSendRecv, kBroadcast };

std::string_view CollectiveKindName(CollectiveKind k);

// Collective algorithms. kAuto lets the backend pick the fastest, as NCCL/RCCL's tuner would.
// Shared by the collective backends and the network model (network/).
enum class CollectiveAlgorithm {
  kAuto,
  kRing,
  kTree,
  kDirect,  // one-shot / direct send to every peer
  kHalvingDoubling,
  kHierarchical,  // intra-node RS, inter-node collective, intra-node AG (A2A: 2-phase)
  kPxn,           // A2A: aggregate over scale-up, then one NIC hop (DeepEP / NCCL PXN)
  kNvls,          // all-reduce reduced inside the switch (NVLink SHARP, NCCL's NVLS)
  // A2A: every routed copy sent straight to its destination rank by GPU-initiated puts, over
  // the scale-up fabric inside a node and the rank's NIC across nodes, nothing aggregated or
  // deduplicated (DeepEP's low-latency kernels). A kernel the caller picks, never NCCL's tuner.
  kLowLatency,
};
std::string_view CollectiveAlgorithmName(CollectiveAlgorithm a);
absl::StatusOr<CollectiveAlgorithm> ParseCollectiveAlgorithm(std::string_view name);


// A process group laid out in the global rank space: `size` ranks r0 + i·stride. The rank order
// is TP fastest, then CP, then DP (EP borrows from DP), then PP, so a TP group has stride 1, an
// EP group stride TP·CP, a DP group stride TP·CP, a PP group stride TP·CP·DP.
struct ProcessGroup {
  int64_t size = 1;
  int64_t stride = 1;

  bool operator==(const ProcessGroup&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const ProcessGroup& g) {
    return H::combine(std::move(h), g.size, g.stride);
  }
};

// How the rows of an MoE All-to-All pick their destinations, for a dispatcher that sends a
// token once per destination node and fans it out inside the node (DeepEP): each row goes to
// top_k of `experts` experts spread evenly over the group's ranks, drawn from its topk_groups
// best of `groups` equal expert groups (groups = 0: no group limit). top_k = 0: unknown, every
// row crosses to its share of peers as in a plain All-to-All.
struct A2aRouting {
  int64_t top_k = 0;
  int64_t experts = 0;
  int64_t groups = 0;
  int64_t topk_groups = 0;

  bool operator==(const A2aRouting&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const A2aRouting& r) {
    return H::combine(std::move(h), r.top_k, r.experts, r.groups, r.topk_groups);
  }
};

// DeepEP's FP8 dispatch: one E4M3 byte per element plus one fp32 scale per 128-element block
// (DeepSeek-V3 report, arXiv 2412.19437 §3.3.2; deepseek-ai/DeepEP low-precision dispatch); the
// combine stays bf16.
inline constexpr double kFp8DispatchBytesPerElement = 1.0 + 4.0 / 128.0;

// One collective call. `bytes` follows the nccl-tests convention: AllReduce and Broadcast the
// buffer size; AllGather the gathered output size; ReduceScatter the full input size;
// AllToAll the total bytes a rank sends (its whole buffer, own share included, top_k copies of
// every routed row); SendRecv the message size (group.size is 2, stride the distance between the
// two ranks). `routing` only matters for an AllToAll.
struct CollectiveOp {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  Bytes bytes;
  ProcessGroup group;
  A2aRouting routing{};

  bool operator==(const CollectiveOp&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const CollectiveOp& c) {
    return H::combine(std::move(h), c.kind, c.bytes.value(), c.group, c.routing);
  }
};

}  // namespace projector

#endif  // PROJECTOR_CORE_OP_SHAPES_H_
