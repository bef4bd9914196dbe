// Disaggregated serving (DistServe, Splitwise, NVIDIA Dynamo): a prefill pool computes every
// prompt and its first token, the prompt's KV cache crosses the network to a decode pool, which
// generates the rest. Each pool has its own replicas, TP and GPU type and runs the engine of
// serving/engine.h: the prefill pool's requests end with their first token, the decode pool's
// arrive prefilled when their cache has landed. Decode steps are never stalled by a prefill;
// the price is the transfer and the GPUs each pool leaves idle.
#ifndef PROJECTOR_SERVING_DISAGGREGATED_H_
#define PROJECTOR_SERVING_DISAGGREGATED_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "serving/serve.h"

namespace projector {

struct PoolConfig {
  Deployment deployment;
  int64_t replicas = 1;
};

struct DisaggregatedOptions {
  PoolConfig prefill;
  PoolConfig decode;
  EngineConfig engine;  // both pools' scheduling limits (continuous batching)
};

struct DisaggregatedResult {
  ServeMetrics metrics;       // the requests end to end, throughput over both pools' GPUs
  ServeMetrics prefill_pool;  // the prefill pool's own passes and cache
  ServeMetrics decode_pool;
  KvCacheSizing prefill_kv;
  KvCacheSizing decode_kv;
  LatencyStats transfer_ms;  // cache ready on the prefill side to landed on the decode side
  int64_t gpus = 0;
};

// The KV cache one request moves from the prefill to the decode pool: every layer's keys and
// values of its `prompt_tokens` tokens once (MLA: the latent), in the decode pool's KV dtype.
Bytes KvTransferBytes(const Deployment& prefill, int64_t prompt_tokens);

// How long that takes: the scale-out latency plus the bytes over the NICs of min(prefill TP,
// decode TP) GPUs sending in parallel (each GPU's share of the node's NIC bandwidth at the
// profile's efficiency), the pools on different nodes. One prefill replica's transfers queue on
// its NICs.
Seconds KvTransferTime(const HardwareProfile& prefill_hw, int64_t prefill_tp, int64_t decode_tp,
                       Bytes bytes);

// kInvalidArgument for static batching, replicas < 1, or pools serving different models;
// the errors of RunReplica otherwise (a pool that does not fit names itself).
absl::StatusOr<DisaggregatedResult> ServeDisaggregated(const DisaggregatedOptions& options,
                                                       std::span<const Request> requests);

}  // namespace projector

#endif  // PROJECTOR_SERVING_DISAGGREGATED_H_
