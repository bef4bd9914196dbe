// ModelSpec: the architecture of one transformer LLM (dense or MoE, MHA/GQA/MQA or MLA), its
// JSON loader and validation. The library of shipped models lives beside it (models/*.json).
#ifndef PROJECTOR_MODELS_MODEL_SPEC_H_
#define PROJECTOR_MODELS_MODEL_SPEC_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/json_reader.h"

namespace projector {

enum class MlpKind { kSwiGlu, kGelu };  // gated (three GEMMs) or plain (two GEMMs)
enum class NormKind { kRmsNorm, kLayerNorm };
// How positions enter attention: rotary embeddings applied to Q and K (a memory-bound kernel),
// ALiBi's additive bias on the scores (inside the attention kernel, which must accept a bias),
// or learned absolute embeddings added to the token embedding.
enum class PositionEmbedding { kRope, kAlibi, kLearned };
std::string_view PositionEmbeddingName(PositionEmbedding p);

struct MoeSpec {
  int64_t num_experts = 0;
  int64_t top_k = 0;
  int64_t expert_ffn_hidden = 0;  // per expert (one of gate/up for SwiGLU)
  int64_t num_shared_experts = 0;
  int64_t shared_expert_ffn_hidden = 0;  // per shared expert; 0 = expert_ffn_hidden
  int64_t num_dense_layers = 0;          // leading dense layers (DeepSeek's first_k_dense)
  // Group-limited routing (DeepSeek-V3 n_group / topk_group): the experts form num_groups equal
  // groups and a token's top_k experts come from its topk_groups best groups. 0 = no limit.
  int64_t num_groups = 0;
  int64_t topk_groups = 0;
  // The dtype the router computes its logits in: the activations' (kBf16, Megatron-Core's
  // default moe_router_dtype=None) or kFp32 (moe_router_dtype="fp32", the DeepSeek recipes:
  // DeepSeek-V3 report 3.3.1 keeps the MoE gating in higher precision). How a stack runs an
  // fp32 gate is the MoE profiler's (profilers/moe_mlp_profiler.cc, RouterGemmOf).
  DType router_dtype = DType::kBf16;
  // Optional explicit per-layer pattern (size = num_layers, true = MoE); overrides
  // num_dense_layers when non-empty.
  std::vector<bool> layer_pattern;

  // FFN hidden size of one shared expert (expert_ffn_hidden when not given).
  int64_t SharedExpertFfnHidden() const {
    return shared_expert_ffn_hidden > 0 ? shared_expert_ffn_hidden : expert_ffn_hidden;
  }
};

// Multi-latent attention (DeepSeek-V2/V3). qk head dim = qk_nope_head_dim + qk_rope_head_dim.
struct MlaSpec {
  int64_t q_lora_rank = 0;  // 0 = Q projected directly (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;  // the calibration schema's `qk_head_dim`
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

struct ModelSpec {
  std::string name;
  std::string source;  // paper or public model config the numbers come from
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t ffn_hidden_size = 0;  // dense layers (one of gate/up for SwiGLU); 0 when all are MoE
  int64_t num_attention_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // hidden/heads unless given (MLA: qk_nope + qk_rope unless given)
  int64_t vocab_size = 0;
  MlpKind mlp = MlpKind::kSwiGlu;
  NormKind norm = NormKind::kRmsNorm;
  bool tied_embeddings = false;
  bool qk_norm = false;
  bool attention_bias = false;  // bias on the Q, K, V projections (Qwen2.5)
  // Bias on every linear layer of a block (QKV, attention output, MLP and expert matrices) and
  // on LayerNorm: GPT-2/3 and Megatron GPT (`add_bias_linear`). MPT (`no_bias`) and the Llama
  // family have none.
  bool linear_bias = false;
  PositionEmbedding position_embedding = PositionEmbedding::kRope;
  // Causal (decoder: GPT, Llama) or bidirectional (encoder: BERT) self-attention; a
  // bidirectional kernel computes every tile of the score matrix.
  bool causal_attention = true;
  // Share of each sequence's positions the output head computes logits for: 1 for a language
  // model; BERT's masked-LM head gathers its max_predictions_per_seq positions first.
  double output_positions_fraction = 1.0;
  // Rows the output head computes logits for out of `tokens` positions (at least one).
  int64_t OutputRows(int64_t tokens) const;
  std::optional<MoeSpec> moe;
  std::optional<MlaSpec> mla;
  // Multi-token prediction modules trained beside the model (DeepSeek-V3 D = 1, report arXiv
  // 2412.19437 §2.2): each one RMSNorms the hidden state and the next token's embedding,
  // projects their concatenation 2h -> h, runs one more transformer layer (of the last layer's
  // kind) and the shared output head and loss. Training only; not in Total/ActiveParameters.
  int64_t mtp_layers = 0;

  bool IsMoeLayer(int64_t layer_idx) const {
    if (!moe.has_value() || layer_idx < 0 || layer_idx >= num_layers) return false;
    if (!moe->layer_pattern.empty()) {
      return static_cast<size_t>(layer_idx) < moe->layer_pattern.size() &&
             moe->layer_pattern[static_cast<size_t>(layer_idx)];
    }
    return layer_idx >= moe->num_dense_layers;
  }
  int64_t NumMoeLayers() const;
  // MoE layers among the `count` layers from `first` (closed form without a layer pattern).
  int64_t MoeLayersIn(int64_t first, int64_t count) const {
    if (!moe.has_value() || count <= 0) return 0;
    if (moe->layer_pattern.empty()) {
      const int64_t begin = std::max(first, std::max<int64_t>(moe->num_dense_layers, 0));
      const int64_t end = std::min(first + count, num_layers);
      return std::max<int64_t>(0, end - begin);
    }
    int64_t n = 0;
    for (int64_t i = first; i < first + count; ++i) n += IsMoeLayer(i) ? 1 : 0;
    return n;
  }
  int64_t NumDenseLayers() const { return num_layers - NumMoeLayers(); }
  // Attention head dims seen by the attention kernel (MLA: nope+rope / v).
  int64_t QkHeadDim() const;
  int64_t VHeadDim() const;
  // Total parameters (embedding and output counted once when tied).
  double TotalParameters() const;
  // Parameters one token activates (top-k routed + shared experts only).
  double ActiveParameters() const;
  // Of those, the top-k routed experts' of the main MoE layers (0 for a dense model): the part an
  // expert capacity limit can drop.
  double RoutedActiveParameters() const;
  // The MTP modules' own parameters (the layer, the 2h -> h projection and two norms each; the
  // embedding and output head are shared); `active_only` counts top-k routed experts.
  double MtpParameters(bool active_only) const;
  // Whether the MTP layers are MoE layers (they take the last layer's kind).
  bool MtpIsMoe() const { return IsMoeLayer(num_layers - 1); }
};

// Loads and validates a model file in the library format. kNotFound if it cannot be read;
// kInvalidArgument naming file and field.
absl::StatusOr<ModelSpec> LoadModelFile(const std::string& path);
// Parses a model object: the library format, or the calibration case schema's `model` object
// (keys layers, hidden, ffn_hidden, heads, kv_heads, head_dim, vocab, mlp, moe, mla), told
// apart by "layers" vs "num_layers". Calibration models get source "inline", RMSNorm/untied
// for SwiGLU and LayerNorm/tied for GELU (the GPT/MPT convention), no biases, and from the
// library model of the same name and shape (LibraryTwin) what the schema has no field for: the
// position embedding (MPT: ALiBi; without a twin learned for GELU, RoPE for SwiGLU), q/k norms,
// MTP modules and group-limited routing. Also runs the
// ValidateModel checks, naming the fields in the schema's own keys under `pointer`.
// kInvalidArgument naming `origin` and the JSON pointer of the bad field.
absl::StatusOr<ModelSpec> ParseModelJson(const nlohmann::json& value, const std::string& origin,
                                         const std::string& pointer);
// Cross-field checks (heads divisible by kv heads, top-k <= experts, pattern length, ...).
// kInvalidArgument "<origin>: <pointer in library keys>: <problem>".
absl::Status ValidateModel(const ModelSpec& model, const std::string& origin);

// The library model named like `m` (case-insensitively: "DeepSeek-V3" = deepseek-v3) with its
// layers, hidden size, heads and, for a MoE, experts and top-k; nullopt when there is none.
std::optional<ModelSpec> LibraryTwin(const ModelSpec& m);

// Directory of the shipped library (compile-time default, overridable by $PROJECTOR_MODELS_DIR).
std::string ModelLibraryDir();
// Names of the shipped models (file stems), sorted.
std::vector<std::string> ListLibraryModels();
// `name_or_path`: a library name ("llama3.1-8b") or a path to a JSON file (a value containing
// '/' or ending in ".json"). An unknown name gives kInvalidArgument listing the valid names.
absl::StatusOr<ModelSpec> ResolveModel(const std::string& name_or_path);

}  // namespace projector

#endif  // PROJECTOR_MODELS_MODEL_SPEC_H_
