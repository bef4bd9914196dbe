// The inference engine model: requests through prefill and decode on one replica of a
// deployment, pass by pass. Continuous batching schedules every pass afresh as vLLM's scheduler
// does (running requests first, one token each or their next prefill chunk; then waiting
// requests first-come first-served while the token budget, the sequence limit and the free KV
// blocks allow; a running request that cannot get a block preempts the most recently admitted
// one, whose cache is dropped and recomputed later). Static batching runs fixed batches of
// requests from their joint prefill to the last token of the longest (TensorRT-LLM's
// gptSessionBenchmark; cache preallocated for every request's full length). With pp pipeline
// stages, up to pp batches are in flight at once (vLLM's virtual engines), each stage busy with
// one at a time. The medium level of detail: one analytical cost per pass (serving/pass_cost.h).
#ifndef PROJECTOR_SERVING_ENGINE_H_
#define PROJECTOR_SERVING_ENGINE_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/units.h"
#include "serving/dp_attention.h"
#include "serving/kv_cache.h"
#include "serving/pass_cost.h"
#include "serving/pass_events.h"
#include "serving/workload.h"

namespace projector {

enum class BatchingMode { kContinuous, kStatic };
// How a pass is priced: medium, one analytical cost per pass (serving/pass_cost.h); high, the
// pass replayed as events per layer and per collective step (serving/pass_events.h).
enum class LevelOfDetail { kMedium, kHigh };
std::string_view LevelOfDetailName(LevelOfDetail lod);
absl::StatusOr<LevelOfDetail> ParseLevelOfDetail(std::string_view name);
std::string_view BatchingModeName(BatchingMode mode);
absl::StatusOr<BatchingMode> ParseBatchingMode(std::string_view name);

// vLLM's default cap on the sequences of one pass (--max-num-seqs 256, vLLM engine arguments).
inline constexpr int64_t kDefaultMaxNumSeqs = 256;
// Tokens per pass with chunked prefill: 8192, a common --max-num-batched-tokens for 80 GB-class
// GPUs (vLLM's own default depends on its version, GPU and entry point; no single stored source
// states it, so the report prints the budget in effect and the flag sets another).
inline constexpr int64_t kDefaultMaxBatchedTokens = 8192;

struct EngineConfig {
  BatchingMode batching = BatchingMode::kContinuous;
  int64_t max_num_seqs = kDefaultMaxNumSeqs;  // continuous: per pass; static: the batch size
  int64_t max_batched_tokens = kDefaultMaxBatchedTokens;
  bool chunked_prefill = true;
  // Prefill chunks and decode steps share a pass (vLLM V1, Sarathi-style). false: a pass runs
  // prefills only whenever there are any, else decodes only (vLLM V0 without chunked prefill,
  // SGLang without --enable-mixed-chunk).
  bool mixed_batches = true;
  LevelOfDetail lod = LevelOfDetail::kMedium;
  // A straggler GPU of every replica (high level of detail only; serving/pass_events.h).
  SlowGpu slow_gpu;
  KvCacheConfig kv;
  // Requests in the system at once (a benchmark client's --max-concurrency): a request is sent
  // when it has arrived and fewer than this many are unfinished; 0 = no limit.
  int64_t concurrency = 0;
  // Host time between one pass's results and the next pass's launch (scheduling, input
  // preparation, detokenisation), not hidden behind the GPU: per pass and per request in it.
  // 0 by default: an engine that schedules the next batch while the GPU runs this one keeps
  // its host work off the critical path (SGLang v0.4's zero-overhead batch scheduler, its
  // Nsight profile showing no GPU idle time between decode batches, lmsys.org 2024-12-04;
  // TensorRT-LLM's overlap scheduler, on by default, nvidia.github.io/TensorRT-LLM
  // features/overlap-scheduler). An engine that does not pays it: vLLM V0 about 4 ms per pass
  // (vLLM RFC #6854), applied by `serve --validate` to its vLLM 0.6 cases.
  Seconds pass_overhead;
  Seconds request_overhead;
  // Automatic prefix caching (vLLM --enable-prefix-caching; SGLang's radix cache): the full KV
  // blocks of a shared prompt prefix (Request::prefix_group) stay cached after the request that
  // computed them, and a later request of the group starts its prefill after them. Continuous
  // batching only.
  bool prefix_caching = false;
};

// kInvalidArgument naming the flag for limits < 1, negative overheads, or prefix caching with
// static batching.
absl::Status ValidateEngineConfig(const EngineConfig& config);

// One request's life.
struct RequestRecord {
  int64_t id = 0;
  double arrival_s = 0;  // when it was sent (after waiting for a concurrency slot)
  double first_token_s = 0;
  double finish_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  int64_t preemptions = 0;
  int64_t cached_tokens = 0;  // prompt tokens found in the prefix cache at its (last) admission
};

// The engine after one pass completed.
struct PassSample {
  double time_s = 0;
  int32_t running = 0;  // requests holding KV blocks
  int32_t waiting = 0;  // sent, not yet admitted
  int32_t batch_sequences = 0;
  int32_t batch_tokens = 0;  // new tokens of the pass
  int64_t kv_blocks_used = 0;
  int64_t preemptions = 0;  // so far in this replica
};

// The prefix cache of a replica (EngineConfig::prefix_caching), vLLM's hit-rate definition: of
// the tokens looked up at every admission (a preempted request is looked up again), the share
// found cached.
struct PrefixCacheStats {
  int64_t query_tokens = 0;
  int64_t hit_tokens = 0;
  int64_t evictions = 0;  // cached prefixes dropped to free blocks
  double HitRate() const {
    return query_tokens > 0 ? static_cast<double>(hit_tokens) / static_cast<double>(query_tokens)
                            : 0.0;
  }
};

struct ReplicaRun {
  std::vector<RequestRecord> requests;  // in request order
  std::vector<PassSample> passes;       // in completion order
  int64_t preemptions = 0;
  PrefixCacheStats prefix_cache;
  KvCacheSizing kv;
  int64_t events = 0;  // simulated at the high level of detail (0 at medium)
};

// Runs `requests` (arrival order) through one replica. kFailedPrecondition when the model does
// not fit (SizeKvCache), when a request can never be served (its prompt and output exceed the
// whole cache, or without chunked prefill its prompt exceeds max_batched_tokens), or a static
// batch exceeds the cache; kInvalidArgument for a bad config.
absl::StatusOr<ReplicaRun> RunReplica(PassCostModel& cost, const EngineConfig& config,
                                      std::span<const Request> requests);

// Runs `requests` (arrival order) through one data-parallel-attention group
// (serving/dp_attention.h): dealt to its attention ranks round robin (SGLang's data-parallel
// controller) unless a request is bound to one (Request::dp_rank), each rank's continuous-batching engine scheduling its own passes from its own
// KV cache, every pass launched on all ranks at once (a rank without work idles through it) and
// priced by `cost` (at the high level of detail replayed as events, EventDpPassTimer, with
// config.slow_gpu); the host's overhead is the busiest rank's. A concurrency limit is the
// client's, over all ranks. One ReplicaRun per rank (the group's events on the first).
// kInvalidArgument for static batching, which it does not model; RunReplica's errors otherwise.
absl::StatusOr<std::vector<ReplicaRun>> RunDpAttention(DpAttentionCost& cost,
                                                       const EngineConfig& config,
                                                       std::span<const Request> requests);

}  // namespace projector

#endif  // PROJECTOR_SERVING_ENGINE_H_
