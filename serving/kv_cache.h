// The paged KV cache of an inference engine: how many blocks fit in what HBM leaves after the
// weights, the activations of the largest pass and the runtime, and the block accounting of
// the requests that hold them (vLLM's PagedAttention block manager).
#ifndef PROJECTOR_SERVING_KV_CACHE_H_
#define PROJECTOR_SERVING_KV_CACHE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/units.h"
#include "serving/pass_cost.h"

namespace projector {

// vLLM's defaults: gpu_memory_utilization 0.9 of HBM for the engine, 16 tokens per block
// (vLLM engine arguments, --gpu-memory-utilization and --block-size).
inline constexpr double kDefaultGpuMemoryUtilization = 0.9;
inline constexpr int64_t kDefaultKvBlockSize = 16;

struct KvCacheConfig {
  double memory_utilization = kDefaultGpuMemoryUtilization;
  int64_t block_size = kDefaultKvBlockSize;
};

// Per GPU of the stage with the least room (every stage holds the same number of blocks, one
// per block of the requests it serves).
struct KvCacheSizing {
  Bytes hbm;          // HBM of one GPU
  Bytes budget;       // memory_utilization · hbm
  Bytes weights;      // the stage's weights
  Bytes activations;  // the largest pass's live activations (max_batched_tokens tokens)
  Bytes runtime;      // CUDA/HIP context, NCCL/RCCL buffers, GEMM workspaces
  // DeepEP's low-latency RDMA buffers (DeepEpLowLatencyBufferBytes) when the deployment's
  // DeepEP mode runs them, sized for the most tokens a rank sends through them: a decode-only
  // pass's (max_num_seqs, at most max_batched_tokens) under auto, any pass's under low-latency.
  Bytes deepep_buffers;
  int64_t deepep_buffer_tokens = 0;
  Bytes per_block;    // one block's K and V over the stage's layers
  int64_t stage = 0;  // the stage that bounds the cache
  int64_t blocks = 0;
  int64_t block_size = kDefaultKvBlockSize;
  int64_t Tokens() const { return blocks * block_size; }
};

// Live activations of a pass of `max_batched_tokens` tokens and `max_num_seqs` sampled rows,
// the peak vLLM measures in its profiling run before it sizes the cache
// (Worker.determine_num_available_blocks): the residual stream and its normalised copy
// (2·T·h), the widest intermediate of a layer (the QKV projection's output, or the MLP's
// gate/up output and its activation, 3·ffn/tp per token; for MoE top_k routed copies of the
// expert FFN), in the activation dtype, plus the logits of the sampled rows (one per request,
// at most max_batched_tokens) over the vocabulary in the activation dtype and fp32.
Bytes PeakActivationBytes(const Deployment& deployment, int64_t max_batched_tokens,
                          int64_t max_num_seqs);

// The cache the deployment holds. kFailedPrecondition when the weights, activations and
// runtime leave no room on some stage, naming what is missing in GiB and the smallest TP (or
// TP·PP) of the same GPU that would leave room; kInvalidArgument for a utilization outside
// (0, 1] or a block size < 1.
absl::StatusOr<KvCacheSizing> SizeKvCache(const Deployment& deployment, const KvCacheConfig& config,
                                          int64_t max_batched_tokens, int64_t max_num_seqs);

// Blocks of `block_size` tokens a sequence of `tokens` tokens occupies.
inline int64_t BlocksFor(int64_t tokens, int64_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

// One line: "12,345 blocks of 16 tokens (197,520 tokens): 80.0 GiB HBM, 72.0 budget, ...".
std::string DescribeKvCache(const KvCacheSizing& sizing);

}  // namespace projector

#endif  // PROJECTOR_SERVING_KV_CACHE_H_
