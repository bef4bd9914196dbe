// The cost of one forward pass of an inference engine's batch on a deployment (tp × pp GPUs):
// the inference profiler's ops (profilers/inference_profiler.h) timed by the simulate backends,
// per pipeline stage. A pass carries all new tokens of the batch through every token-linear op
// at once (continuous batching), a flash-attention forward per prefill chunk and one paged
// decode attention over all decoding requests' cached tokens per layer. Costs that depend only
// on the token count (the layers' linear ops and TP all-reduces, the embedding, the output head)
// are memoised by that count; a simulation of thousands of passes prices each distinct count
// once.
#ifndef PROJECTOR_SERVING_PASS_COST_H_
#define PROJECTOR_SERVING_PASS_COST_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "core/dtype.h"
#include "core/units.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "profilers/inference_profiler.h"

namespace projector {

// Which of DeepEP's kernels a MoE layer's dispatch and combine run (SGLang --deepep-mode, whose
// default is auto): the normal (high-throughput) kernels, the low-latency ones, or auto: normal
// for a lock-step pass in which some rank prefills, low-latency for a decode-only pass (SGLang's
// DeepEPMode.resolve on is_extend_in_batch, OR-reduced over the attention ranks).
enum class DeepEpMode { kAuto, kNormal, kLowLatency };
std::string_view DeepEpModeName(DeepEpMode mode);

// What an inference engine runs: a model on tp × pp GPUs of one kind, weights and KV cache in
// their precisions.
struct Deployment {
  ModelSpec model;
  HardwareProfile hw;
  int64_t tp = 1;
  int64_t pp = 1;
  DType weight_dtype = DType::kBf16;
  DType kv_dtype = DType::kBf16;
  bool expert_parallel = false;  // InferenceContext::expert_parallel
  // With dp_attention: the MoE layers dispatch the routed tokens to their experts' GPUs and
  // combine them back by DeepEP's all-to-all (SGLang --moe-a2a-backend deepep) instead of
  // gathering every rank's tokens on every GPU. Needs expert_parallel.
  bool deepep = false;
  DeepEpMode deepep_mode = DeepEpMode::kAuto;
  // With deepep: every rank splits its batch into two micro-batches whose dispatch and combine
  // run while the other computes (SGLang --enable-two-batch-overlap; serving/dp_attention.h).
  bool two_batch_overlap = false;
  // Attention data parallelism inside the TP group (SGLang --enable-dp-attention --dp D): D
  // ranks each run attention at TP tp/D for their own requests, and every MoE layer runs the
  // experts over all tp GPUs on the tokens of all ranks (serving/dp_attention.h). 1: off.
  int64_t dp_attention = 1;
  int64_t moe_gpus = 0;  // InferenceContext::moe_gpus
  BackendSelection backends;

  int64_t NumGpus() const { return tp * pp; }
  InferenceContext Context() const {
    return InferenceContext{.model = model,
                            .tp = tp,
                            .weight_dtype = weight_dtype,
                            .kv_dtype = kv_dtype,
                            .expert_parallel = expert_parallel,
                            .moe_gpus = moe_gpus};
  }
  // One attention rank of a DP-attention deployment: TP tp/D, the experts still over tp GPUs.
  Deployment AttentionRank() const {
    Deployment rank = *this;
    rank.tp = tp / std::max<int64_t>(dp_attention, 1);
    rank.dp_attention = 1;
    rank.moe_gpus = tp;
    return rank;
  }
};

// The layers of one pipeline stage: [first, first + count).
struct StageLayers {
  int64_t first = 0;
  int64_t count = 0;
  int64_t moe = 0;  // of them, MoE layers
};

// Layers over pp stages as vLLM splits them (vllm/distributed/utils.py get_pp_indices):
// layers/pp each, the remainder one more each on the stages before the last, from the end
// (the last stage also runs the output head).
std::vector<StageLayers> SplitStages(const ModelSpec& model, int64_t pp);

// One prefill chunk of a request: `new_tokens` prompt tokens computed this pass after
// `context` tokens already in its KV cache.
struct PrefillChunk {
  int64_t new_tokens = 0;
  int64_t context = 0;
};

// One forward pass of a batch.
struct BatchPass {
  std::vector<PrefillChunk> prefills;
  int64_t decode_sequences = 0;
  // Tokens the decoding requests attend over, summed (each request's cache after its new token).
  int64_t decode_kv_tokens = 0;
  // Requests that emit a token this pass: every decoding one and each prefill that completes.
  int64_t emitting = 0;

  int64_t NewTokens() const;
  void Clear();
};

// Where a pass's time goes on one stage (each summed over the stage's layers).
struct PassBreakdown {
  Seconds linear;  // projections, MLP or experts, norms, RoPE, KV write
  Seconds prefill_attention;
  Seconds decode_attention;
  Seconds tp_comm;  // the two all-reduces per layer (and the embedding's, logits gather)
  Seconds head;     // embedding lookup (first stage) and output head with sampling (last)
  Seconds pp_send;  // hand-off of the hidden states to the next stage
  Seconds Total() const {
    return linear + prefill_attention + decode_attention + tp_comm + head + pp_send;
  }
  PassBreakdown& operator+=(const PassBreakdown& other) {
    linear += other.linear;
    prefill_attention += other.prefill_attention;
    decode_attention += other.decode_attention;
    tp_comm += other.tp_comm;
    head += other.head;
    pp_send += other.pp_send;
    return *this;
  }
  // Every part times `count` (the layers that each take this part).
  PassBreakdown Times(double count) const {
    return PassBreakdown{.linear = linear * count,
                         .prefill_attention = prefill_attention * count,
                         .decode_attention = decode_attention * count,
                         .tp_comm = tp_comm * count,
                         .head = head * count,
                         .pp_send = pp_send * count};
  }
};

class PassCostModel {
 public:
  // Builds the backends the deployment selects and checks that the model splits over TP and PP
  // (kInvalidArgument naming the constraint).
  static absl::StatusOr<std::unique_ptr<PassCostModel>> Make(const Deployment& deployment);

  // The pass's time on every stage into `out` (size pp). Not thread-safe: memoises.
  absl::Status StageTimes(const BatchPass& pass, std::span<Seconds> out);
  // The same with the breakdown of one stage.
  absl::StatusOr<PassBreakdown> Breakdown(const BatchPass& pass, int64_t stage);

  // One layer's token-linear work at `tokens` new tokens, split where its TP all-reduces fall:
  // the attention module's ops (before the first all-reduce), the rest (norms and the MLP or
  // experts, before the second), and one all-reduce.
  struct LayerParts {
    Seconds attention_linear;
    Seconds mlp_linear;
    Seconds all_reduce;
    Seconds Linear() const { return attention_linear + mlp_linear; }
  };
  absl::StatusOr<LayerParts> Parts(int64_t tokens, bool moe);
  // One layer's attention kernel for one prefill chunk, and the decode attention over the
  // decoding requests' caches (0 without any).
  absl::StatusOr<Seconds> PrefillAttention(const PrefillChunk& chunk);
  // The embedding of the pass's tokens (first stage) and the output head of its emitting
  // requests (last stage), on one stage: `head` and their collectives in `tp_comm`.
  absl::StatusOr<PassBreakdown> Ends(const BatchPass& pass, int64_t stage);
  absl::StatusOr<Seconds> DecodeAttention(int64_t sequences, int64_t kv_tokens);
  // One collective on the deployment's GPUs.
  absl::StatusOr<Seconds> Collective(const CollectiveOp& op,
                                     CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto);

  const Deployment& deployment() const { return deployment_; }
  const std::vector<StageLayers>& stages() const { return stages_; }
  // Distinct token counts priced so far (the memo's size), for the report and benchmarks.
  int64_t PricedTokenCounts() const { return static_cast<int64_t>(linear_.size()); }

 private:
  PassCostModel(Deployment deployment, BackendSet backends);

  struct LinearCost {
    LayerParts dense, moe;  // one layer of each kind
    Seconds embedding, embedding_comm;
    Seconds pp_send;
  };
  absl::StatusOr<LinearCost> Linear(int64_t tokens);
  // The output head's compute and its logits gather.
  absl::StatusOr<std::pair<Seconds, Seconds>> Output(int64_t sequences);
  absl::StatusOr<Seconds> TimeOpList(OpList& ops, Seconds* comm);

  Deployment deployment_;
  BackendSet backends_;
  std::vector<StageLayers> stages_;
  FlopsPerSecond decode_matrix_rate_;
  absl::flat_hash_map<int64_t, LinearCost> linear_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, Seconds> prefill_attention_;
  absl::flat_hash_map<int64_t, std::pair<Seconds, Seconds>> output_;
};

}  // namespace projector

#endif  // PROJECTOR_SERVING_PASS_COST_H_
