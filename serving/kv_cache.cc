#include "serving/kv_cache.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/number_format.h"
#include "core/status_macros.h"
#include "profilers/inference_profiler.h"
#include "profilers/module_profilers.h"
#include "projection/memory_model.h"
#include "serving/dp_attention.h"

namespace projector {
namespace {

constexpr double kGib = Gibibytes(1).value();  // core/units.h
double D(int64_t v) { return static_cast<double>(v); }

// The room one stage leaves for the cache: budget − weights − activations − runtime.
struct StageRoom {
  Bytes weights;
  Bytes free;
  Bytes per_block;
};

absl::StatusOr<StageRoom> RoomOf(const Deployment& d, const StageLayers& layers, bool first,
                                 bool last, Bytes budget, Bytes activations, Bytes runtime,
                                 int64_t block_size) {
  PROJECTOR_ASSIGN_OR_RETURN(const Bytes weights, InferenceWeightBytes(d.Context(), layers.first,
                                                                       layers.count, first, last));
  StageRoom room;
  room.weights = weights;
  room.free = budget - weights - activations - runtime;
  room.per_block = KvBytesPerTokenPerLayer(d.Context()) * (D(block_size) * D(layers.count));
  return room;
}

// The sizing, with 0 blocks when some stage has no room (`shortfall`: what the worst one lacks
// for a single block).
absl::StatusOr<KvCacheSizing> ComputeSizing(const Deployment& deployment,
                                            const KvCacheConfig& config, int64_t max_batched_tokens,
                                            int64_t max_num_seqs, Bytes& shortfall) {
  if (!(config.memory_utilization > 0 && config.memory_utilization <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu-memory-utilization: a fraction of HBM in (0, 1], got ", config.memory_utilization));
  }
  if (config.block_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("block-size: tokens per KV block must be >= 1, got ", config.block_size));
  }
  KvCacheSizing sizing;
  sizing.hbm = deployment.hw.gpu.hbm_capacity;
  sizing.budget = sizing.hbm * config.memory_utilization;
  sizing.activations = PeakActivationBytes(deployment, max_batched_tokens, max_num_seqs);
  sizing.runtime = Gibibytes(kWorkspaceFixedGib);
  if (deployment.deepep && deployment.deepep_mode != DeepEpMode::kNormal) {
    sizing.deepep_buffer_tokens = deployment.deepep_mode == DeepEpMode::kLowLatency
                                      ? max_batched_tokens
                                      : std::min(max_num_seqs, max_batched_tokens);
    sizing.deepep_buffers =
        DeepEpLowLatencyBufferBytes(deployment.model.hidden_size,
                                    deployment.model.moe->num_experts, sizing.deepep_buffer_tokens);
  }
  sizing.block_size = config.block_size;
  const std::vector<StageLayers> stages = SplitStages(deployment.model, deployment.pp);
  int64_t blocks = std::numeric_limits<int64_t>::max();
  Bytes worst_shortfall(0);
  for (size_t s = 0; s < stages.size(); ++s) {
    PROJECTOR_ASSIGN_OR_RETURN(
        const StageRoom room,
        RoomOf(deployment, stages[s], s == 0, s + 1 == stages.size(), sizing.budget,
               sizing.activations, sizing.runtime + sizing.deepep_buffers, config.block_size));
    const double fit = std::floor(room.free.value() / room.per_block.value());
    const int64_t stage_blocks = fit > 0 ? static_cast<int64_t>(fit) : 0;
    if (stage_blocks < blocks) {
      blocks = stage_blocks;
      sizing.stage = static_cast<int64_t>(s);
      sizing.weights = room.weights;
      sizing.per_block = room.per_block;
    }
    if (stage_blocks == 0) worst_shortfall = std::max(worst_shortfall, room.per_block - room.free);
  }
  sizing.blocks = blocks;
  shortfall = worst_shortfall;
  return sizing;
}

// The smallest tp·pp of the same GPU whose every stage leaves room for one block, tp within a
// node first; nullopt when none up to 64 GPUs does.
std::optional<std::pair<int64_t, int64_t>> SmallestFit(const Deployment& d,
                                                       const KvCacheConfig& config,
                                                       int64_t max_batched_tokens,
                                                       int64_t max_num_seqs) {
  std::optional<std::pair<int64_t, int64_t>> best;
  for (int64_t gpus = 1; gpus <= 64; gpus *= 2) {
    for (int64_t tp = std::min<int64_t>(gpus, d.hw.gpus_per_node); tp >= 1; tp /= 2) {
      if (gpus % tp != 0) continue;
      Deployment trial = d;
      trial.tp = tp;
      trial.pp = gpus / tp;
      if (d.model.num_attention_heads % tp != 0 || trial.pp > d.model.num_layers) continue;
      Bytes shortfall(0);
      absl::StatusOr<KvCacheSizing> sizing =
          ComputeSizing(trial, config, max_batched_tokens, max_num_seqs, shortfall);
      if (sizing.ok() && sizing->blocks > 0) {
        return std::make_pair(tp, trial.pp);
      }
    }
  }
  return best;
}

}  // namespace

Bytes PeakActivationBytes(const Deployment& deployment, int64_t max_batched_tokens,
                          int64_t max_num_seqs) {
  const ModelSpec& m = deployment.model;
  const InferenceContext ctx = deployment.Context();
  const double e = BytesPerElement(InferenceActivationDType(ctx));
  const double tp = D(deployment.tp);
  const double qkv =
      D(m.num_attention_heads * m.QkHeadDim() + 2 * m.num_kv_heads * m.QkHeadDim()) / tp;
  double ffn = 3.0 * D(m.ffn_hidden_size) / tp;
  if (m.moe.has_value()) {
    const double routed = 3.0 * D(m.moe->top_k) * D(m.moe->expert_ffn_hidden) / tp;
    ffn = std::max(ffn, routed);
  }
  const double per_token = 2.0 * D(m.hidden_size) + std::max(qkv, ffn);
  // A pass samples at most one row per request and no more rows than it has tokens.
  const double sampled = D(std::min(max_num_seqs, max_batched_tokens));
  const double logits = sampled * D(PaddedVocabSize(m, deployment.tp)) * (e + 4.0);
  return Bytes(e * D(max_batched_tokens) * per_token + logits);
}

absl::StatusOr<KvCacheSizing> SizeKvCache(const Deployment& deployment, const KvCacheConfig& config,
                                          int64_t max_batched_tokens, int64_t max_num_seqs) {
  Bytes worst_shortfall(0);
  PROJECTOR_ASSIGN_OR_RETURN(
      const KvCacheSizing sizing,
      ComputeSizing(deployment, config, max_batched_tokens, max_num_seqs, worst_shortfall));
  if (sizing.blocks > 0) return sizing;
  std::string suggestion;
  if (auto fit = SmallestFit(deployment, config, max_batched_tokens, max_num_seqs)) {
    suggestion = fit->second == 1
                     ? absl::StrCat("; --tp ", fit->first, " would fit")
                     : absl::StrCat("; --tp ", fit->first, " --pp ", fit->second, " would fit");
  } else {
    suggestion = "; no layout of up to 64 GPUs of this kind fits";
  }
  const std::string buffers =
      sizing.deepep_buffers.value() > 0
          ? absl::StrFormat(", %.1f GiB of DeepEP low-latency buffers (%d tokens a rank)",
                            sizing.deepep_buffers.value() / kGib, sizing.deepep_buffer_tokens)
          : "";
  return absl::FailedPreconditionError(absl::StrFormat(
      "%s does not fit on %s at tp=%d pp=%d: stage %d holds %.1f GiB of weights, %.1f GiB of "
      "activations (--max-batched-tokens %d)%s and %.1f GiB of runtime within %.0f%% of %.1f GiB "
      "HBM, leaving no room for a single KV block (%.1f GiB short)%s",
      deployment.model.name, deployment.hw.gpu.name, deployment.tp, deployment.pp, sizing.stage,
      sizing.weights.value() / kGib, sizing.activations.value() / kGib, max_batched_tokens,
      buffers, sizing.runtime.value() / kGib, 100.0 * config.memory_utilization,
      sizing.hbm.value() / kGib, worst_shortfall.value() / kGib, suggestion));
}

std::string DescribeKvCache(const KvCacheSizing& s) {
  const std::string buffers =
      s.deepep_buffers.value() > 0
          ? absl::StrFormat(", %.1f GiB DeepEP low-latency buffers (%d tokens a rank)",
                            s.deepep_buffers.value() / kGib, s.deepep_buffer_tokens)
          : "";
  return absl::StrFormat(
      "%s blocks of %d tokens (%s tokens); per GPU: %.1f GiB HBM, %.1f GiB budget, %.1f GiB "
      "weights, %.1f GiB activations, %.1f GiB runtime%s, %.1f GiB KV cache",
      FormatCount(s.blocks), s.block_size, FormatCount(s.Tokens()), s.hbm.value() / kGib,
      s.budget.value() / kGib, s.weights.value() / kGib, s.activations.value() / kGib,
      s.runtime.value() / kGib, buffers, s.per_block.value() * D(s.blocks) / kGib);
}

}  // namespace projector
