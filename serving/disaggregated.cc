#include "serving/disaggregated.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "profilers/inference_profiler.h"
#include "serving/dp_attention.h"
#include "serving/engine.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

absl::Status CheckPools(const DisaggregatedOptions& o) {
  if (o.engine.batching != BatchingMode::kContinuous) {
    return absl::InvalidArgumentError(
        "batching: disaggregated pools run continuous batching; drop --batching static");
  }
  if (o.prefill.replicas < 1 || o.decode.replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefill-replicas and decode-replicas: each pool needs >= 1 replica, got ",
                     o.prefill.replicas, " and ", o.decode.replicas));
  }
  if (o.prefill.deployment.model.name != o.decode.deployment.model.name) {
    return absl::InvalidArgumentError("both pools serve the same model");
  }
  return absl::OkStatus();
}

// Runs `requests` round robin over a pool's replicas; kFailedPrecondition messages name the pool.
// Each replica of a pool runs its share of the requests (a share may be empty).
// A pool with data-parallel attention runs each replica's share on its ranks in lock-step
// (RunDpAttention): every rank's run is one of the pool's runs.
absl::StatusOr<std::vector<ReplicaRun>> RunPool(const PoolConfig& pool, const EngineConfig& engine,
                                                const std::vector<std::vector<Request>>& shares,
                                                absl::string_view name) {
  auto named = [name](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(name, " pool: ", s.message()));
  };
  if (pool.deployment.dp_attention > 1) {
    absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(pool.deployment);
    if (!cost.ok()) return named(cost.status());
    std::vector<ReplicaRun> runs;
    for (const std::vector<Request>& share : shares) {
      if (share.empty()) continue;
      absl::StatusOr<std::vector<ReplicaRun>> ranks = RunDpAttention(**cost, engine, share);
      if (!ranks.ok()) return named(ranks.status());
      for (ReplicaRun& run : *ranks) runs.push_back(std::move(run));
    }
    return runs;
  }
  absl::StatusOr<std::unique_ptr<PassCostModel>> cost = PassCostModel::Make(pool.deployment);
  if (!cost.ok()) {
    return absl::Status(cost.status().code(),
                        absl::StrCat(name, " pool: ", cost.status().message()));
  }
  std::vector<ReplicaRun> runs;
  for (const std::vector<Request>& share : shares) {
    if (share.empty()) continue;
    absl::StatusOr<ReplicaRun> run = RunReplica(**cost, engine, share);
    if (!run.ok()) {
      return absl::Status(run.status().code(),
                          absl::StrCat(name, " pool: ", run.status().message()));
    }
    runs.push_back(*std::move(run));
  }
  return runs;
}

// The GPUs that hold one request's cache: the TP group, or one attention rank's under data-
// parallel attention (the cache lives on the rank that serves the request).
int64_t AttentionTp(const Deployment& d) { return d.tp / std::max<int64_t>(d.dp_attention, 1); }

}  // namespace

Bytes KvTransferBytes(const Deployment& prefill, int64_t prompt_tokens) {
  // The unsharded cache: KV heads once (not replicated over a TP larger than them), or the MLA
  // latent once.
  InferenceContext whole = prefill.Context();
  whole.tp = 1;
  return KvBytesPerTokenPerLayer(whole) * (D(prompt_tokens) * D(prefill.model.num_layers));
}

Seconds KvTransferTime(const HardwareProfile& prefill_hw, int64_t prefill_tp, int64_t decode_tp,
                       Bytes bytes) {
  const ScaleOutNetwork& net = prefill_hw.scale_out;
  const double per_gpu = net.per_nic_bandwidth.value() * D(net.nics_per_node) * net.efficiency /
                         D(std::max<int64_t>(prefill_hw.gpus_per_node, 1));
  const double senders = D(std::max<int64_t>(1, std::min(prefill_tp, decode_tp)));
  if (!(per_gpu > 0)) return net.latency;
  return net.latency + Seconds(bytes.value() / (per_gpu * senders));
}

absl::StatusOr<DisaggregatedResult> ServeDisaggregated(const DisaggregatedOptions& options,
                                                       std::span<const Request> requests) {
  PROJECTOR_RETURN_IF_ERROR(CheckPools(options));
  if (requests.empty()) return absl::InvalidArgumentError("the workload has no requests");
  // Prefill pool: every request ends with its first token.
  std::vector<Request> prefill_requests(requests.begin(), requests.end());
  for (Request& r : prefill_requests) r.output_tokens = 1;
  PROJECTOR_ASSIGN_OR_RETURN(
      std::vector<ReplicaRun> prefill_runs,
      RunPool(options.prefill, options.engine,
              DealRoundRobin(prefill_requests, options.prefill.replicas), "prefill"));
  // The transfers in the order the prompts finish: each request goes to the decode replicas in
  // turn, and its cache crosses when both its prefill replica's NICs and its decode replica's
  // are free (one transfer at a time on each, first come first served).
  struct Finished {
    const RequestRecord* record;
    size_t prefill_replica;
  };
  std::vector<Finished> finished;
  for (size_t p = 0; p < prefill_runs.size(); ++p) {
    for (const RequestRecord& r : prefill_runs[p].requests) finished.push_back({&r, p});
  }
  std::stable_sort(finished.begin(), finished.end(), [](const Finished& a, const Finished& b) {
    return a.record->finish_s < b.record->finish_s;
  });
  struct Landed {
    RequestRecord first;  // the prefill side's record
    double landed_s = 0;
    size_t decode_replica = 0;
    int64_t decode_rank = 0;
  };
  std::vector<Landed> landed;
  std::vector<double> transfer_ms;
  std::vector<double> sender_free(prefill_runs.size(), 0.0);
  // The receiving GPUs: each decode replica's, or under data-parallel attention each attention
  // rank's (the k-th request to replica k mod R, and there to rank (k / R) mod D, bound to it).
  const size_t decode_replicas = static_cast<size_t>(options.decode.replicas);
  const size_t decode_ranks =
      static_cast<size_t>(std::max<int64_t>(options.decode.deployment.dp_attention, 1));
  std::vector<double> receiver_free(decode_replicas * decode_ranks, 0.0);
  for (size_t k = 0; k < finished.size(); ++k) {
    const RequestRecord& r = *finished[k].record;
    const size_t replica = k % decode_replicas;
    const size_t rank = (k / decode_replicas) % decode_ranks;
    const size_t to = replica * decode_ranks + rank;
    const Seconds t = KvTransferTime(options.prefill.deployment.hw,
                                     AttentionTp(options.prefill.deployment),
                                     AttentionTp(options.decode.deployment),
                                     KvTransferBytes(options.decode.deployment, r.prompt_tokens));
    double& sender = sender_free[finished[k].prefill_replica];
    const double start = std::max({r.finish_s, sender, receiver_free[to]});
    sender = receiver_free[to] = start + t.value();
    landed.push_back(Landed{.first = r,
                            .landed_s = start + t.value(),
                            .decode_replica = replica,
                            .decode_rank = static_cast<int64_t>(rank)});
    transfer_ms.push_back(1e3 * (start + t.value() - r.finish_s));
  }
  std::stable_sort(landed.begin(), landed.end(),
                   [](const Landed& a, const Landed& b) { return a.landed_s < b.landed_s; });
  absl::flat_hash_map<int64_t, size_t> index_of;
  for (size_t i = 0; i < requests.size(); ++i) index_of[requests[i].id] = i;
  // Decode pool: the requests with more than one output token, arriving at their replica as
  // their cache lands.
  std::vector<std::vector<Request>> decode_shares(decode_replicas);
  bool any_decode = false;
  for (const Landed& l : landed) {
    const Request& original = requests[index_of.at(l.first.id)];
    if (original.output_tokens <= 1) continue;
    any_decode = true;
    decode_shares[l.decode_replica].push_back(Request{.id = original.id,
                                                      .arrival_s = l.landed_s,
                                                      .prompt_tokens = original.prompt_tokens,
                                                      .output_tokens = original.output_tokens,
                                                      .prefilled = true,
                                                      .dp_rank = decode_ranks > 1 ? l.decode_rank
                                                                                  : -1});
  }
  std::vector<ReplicaRun> decode_runs;
  if (any_decode) {
    PROJECTOR_ASSIGN_OR_RETURN(decode_runs,
                               RunPool(options.decode, options.engine, decode_shares, "decode"));
  }
  // Each request end to end: sent and first token on the prefill side, last token on the decode
  // side (or the first, for a one-token output).
  std::vector<RequestRecord> merged(requests.size());
  for (const Landed& l : landed) {
    const size_t i = index_of.at(l.first.id);
    merged[i] = l.first;
    merged[i].output_tokens = requests[i].output_tokens;
  }
  for (const ReplicaRun& run : decode_runs) {
    for (const RequestRecord& r : run.requests) {
      RequestRecord& m = merged[index_of.at(r.id)];
      m.finish_s = r.finish_s;
      m.preemptions += r.preemptions;
    }
  }
  DisaggregatedResult result;
  result.gpus = options.prefill.deployment.NumGpus() * options.prefill.replicas +
                options.decode.deployment.NumGpus() * options.decode.replicas;
  ReplicaRun whole;
  whole.requests = std::move(merged);
  result.metrics = MeasureRuns(std::span<const ReplicaRun>(&whole, 1), result.gpus);
  result.prefill_pool =
      MeasureRuns(prefill_runs, options.prefill.deployment.NumGpus() * options.prefill.replicas);
  result.prefill_kv = prefill_runs.front().kv;
  if (!decode_runs.empty()) {
    result.decode_pool =
        MeasureRuns(decode_runs, options.decode.deployment.NumGpus() * options.decode.replicas);
    result.decode_kv = decode_runs.front().kv;
  }
  // Passes and preemptions are the pools'; the end-to-end view has no passes of its own.
  result.metrics.passes = result.prefill_pool.passes + result.decode_pool.passes;
  result.metrics.preemptions = result.prefill_pool.preemptions + result.decode_pool.preemptions;
  result.metrics.peak_kv_utilization =
      std::max(result.prefill_pool.peak_kv_utilization, result.decode_pool.peak_kv_utilization);
  result.transfer_ms = Summarize(transfer_ms);
  return result;
}

}  // namespace projector
