#include "models/model_spec.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/file_memo.h"
#include "core/json_reader.h"
#include "core/yaml_reader.h"
#include "core/status_macros.h"
#include "core/suggest.h"

namespace projector {
namespace {

using nlohmann::json;

constexpr char kInlineSource[] = "inline";

// The key names of one input schema, so that a cross-field message names the key the user
// actually wrote ("/model/kv_heads" in a calibration case, "/num_kv_heads" in a library file).
struct SchemaKeys {
  const char* name;
  const char* num_layers;
  const char* hidden_size;
  const char* ffn_hidden_size;
  const char* num_attention_heads;
  const char* num_kv_heads;
  const char* head_dim;
  const char* vocab_size;
  const char* moe;
  const char* num_experts;
  const char* top_k;
  const char* expert_ffn_hidden;
  const char* num_shared_experts;
  const char* shared_expert_ffn_hidden;
  const char* num_dense_layers;
  const char* layer_pattern;
  const char* mla;
  const char* q_lora_rank;
  const char* kv_lora_rank;
  const char* qk_nope_head_dim;
  const char* qk_rope_head_dim;
  const char* v_head_dim;
};

constexpr SchemaKeys kLibraryKeys = {
    .name = "name",
    .num_layers = "num_layers",
    .hidden_size = "hidden_size",
    .ffn_hidden_size = "ffn_hidden_size",
    .num_attention_heads = "num_attention_heads",
    .num_kv_heads = "num_kv_heads",
    .head_dim = "head_dim",
    .vocab_size = "vocab_size",
    .moe = "moe",
    .num_experts = "num_experts",
    .top_k = "top_k",
    .expert_ffn_hidden = "expert_ffn_hidden",
    .num_shared_experts = "num_shared_experts",
    .shared_expert_ffn_hidden = "shared_expert_ffn_hidden",
    .num_dense_layers = "num_dense_layers",
    .layer_pattern = "layer_pattern",
    .mla = "mla",
    .q_lora_rank = "q_lora_rank",
    .kv_lora_rank = "kv_lora_rank",
    .qk_nope_head_dim = "qk_nope_head_dim",
    .qk_rope_head_dim = "qk_rope_head_dim",
    .v_head_dim = "v_head_dim",
};

// ../shared/calibration/README.md, "Schema of one case", the `model` object. The calibration
// `qk_head_dim` is the non-RoPE part of the QK head (DeepSeek's qk_nope_head_dim).
constexpr SchemaKeys kCalibrationKeys = {
    .name = "name",
    .num_layers = "layers",
    .hidden_size = "hidden",
    .ffn_hidden_size = "ffn_hidden",
    .num_attention_heads = "heads",
    .num_kv_heads = "kv_heads",
    .head_dim = "head_dim",
    .vocab_size = "vocab",
    .moe = "moe",
    .num_experts = "experts",
    .top_k = "topk",
    .expert_ffn_hidden = "ffn_hidden",
    .num_shared_experts = "shared_experts",
    .shared_expert_ffn_hidden = "",
    .num_dense_layers = "dense_layers",
    .layer_pattern = "",
    .mla = "mla",
    .q_lora_rank = "q_lora_rank",
    .kv_lora_rank = "kv_lora_rank",
    .qk_nope_head_dim = "qk_head_dim",
    .qk_rope_head_dim = "qk_rope_dim",
    .v_head_dim = "v_head_dim",
};

std::vector<std::string> MlpNames() { return {"swiglu", "gelu"}; }
std::vector<std::string> NormNames() { return {"rmsnorm", "layernorm"}; }
constexpr PositionEmbedding kPositionEmbeddings[] = {
    PositionEmbedding::kRope, PositionEmbedding::kAlibi, PositionEmbedding::kLearned};
std::vector<std::string> PositionEmbeddingNames() {
  std::vector<std::string> names;
  for (PositionEmbedding p : kPositionEmbeddings) names.emplace_back(PositionEmbeddingName(p));
  return names;
}

MlpKind ToMlpKind(std::string_view name) {
  return name == "gelu" ? MlpKind::kGelu : MlpKind::kSwiGlu;
}

// Sets every key of `keys` as known, then rejects any other key. Checking before reading means
// a misspelt required key is reported as the typo it is (listing all accepted keys), not as a
// missing field.
absl::Status CheckKeys(JsonObject& obj, std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) obj.Accept(key);
  return obj.CheckNoUnknownKeys();
}

// ---------------------------------------------------------------------------------------------
// Cross-field validation, shared by both schemas.

std::string KeyPath(const std::string& base, const char* key) {
  return absl::StrCat(base, "/", key);
}

// Upper bounds far beyond any trained model, so that products of sizes (tokens x hidden x
// experts) stay well inside 64-bit integers and per-layer loops stay short.
constexpr int64_t kMaxModelDim = int64_t{1} << 24;   // hidden, FFN, heads, vocab, experts, ranks
constexpr int64_t kMaxModelLayers = int64_t{1} << 16;
// A head wider than any model's (256 for Gemma 2, 192 for MLA's QK) by far: bounds the attention
// backends' per-head work.
constexpr int64_t kMaxHeadDim = int64_t{1} << 16;
constexpr int64_t kMaxMtpLayers = 16;  // DeepSeek-V3 trains 1; Meta's MTP paper up to 8 heads

absl::Status CheckPositive(const std::string& origin, const std::string& pointer, int64_t value,
                           bool allow_zero = false, int64_t max = kMaxModelDim) {
  if ((allow_zero ? value >= 0 : value > 0) && value <= max) return absl::OkStatus();
  if (value > max) {
    return JsonFieldError(origin, pointer,
                          absl::StrCat("must be <= ", max, " (beyond any model), got ", value));
  }
  return JsonFieldError(origin, pointer,
                        absl::StrCat("must be ", allow_zero ? ">= 0" : "> 0", ", got ", value));
}

namespace {

// The sizes of the model: positive and within what any model has, heads grouped evenly.
absl::Status ValidateSizes(const ModelSpec& m, const std::string& origin, const std::string& base,
                        const SchemaKeys& keys) {
  auto at = [&](const char* key) { return KeyPath(base, key); };
  if (m.name.empty()) {
    return JsonFieldError(origin, at(keys.name), "must be a non-empty string");
  }
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, at(keys.num_layers), m.num_layers,
                                          /*allow_zero=*/false, kMaxModelLayers));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, at(keys.hidden_size), m.hidden_size));
  PROJECTOR_RETURN_IF_ERROR(
      CheckPositive(origin, at(keys.ffn_hidden_size), m.ffn_hidden_size, m.moe.has_value()));
  PROJECTOR_RETURN_IF_ERROR(
      CheckPositive(origin, at(keys.num_attention_heads), m.num_attention_heads));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, at(keys.num_kv_heads), m.num_kv_heads));
  if (m.head_dim > kMaxHeadDim) {
    return JsonFieldError(
        origin, at(keys.head_dim),
        absl::StrCat("must be <= ", kMaxHeadDim, " (beyond any model), got ", m.head_dim, " (",
                     keys.hidden_size, " / ", keys.num_attention_heads, " when not given)"));
  }
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, at(keys.head_dim), m.head_dim));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, at(keys.vocab_size), m.vocab_size));
  // Library key only (the calibration schema has none).
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, KeyPath(base, "mtp_layers"), m.mtp_layers,
                                          /*allow_zero=*/true, kMaxMtpLayers));

  if (m.num_attention_heads % m.num_kv_heads != 0) {
    return JsonFieldError(
        origin, at(keys.num_kv_heads),
        absl::StrCat(keys.num_attention_heads, " ", m.num_attention_heads, " is not divisible by ",
                     keys.num_kv_heads, " ", m.num_kv_heads, "; accepted: a divisor of ",
                     keys.num_attention_heads, " (equal for MHA, 1 for MQA)"));
  }
  return absl::OkStatus();
}

// Multi-head latent attention's ranks and head dims.
absl::Status ValidateMla(const ModelSpec& m, const std::string& origin, const std::string& base,
                        const SchemaKeys& keys) {
  auto at = [&](const char* key) { return KeyPath(base, key); };
  if (m.mla.has_value()) {
    const MlaSpec& mla = *m.mla;
    const std::string mla_base = at(keys.mla);
    auto mla_at = [&](const char* key) { return KeyPath(mla_base, key); };
    PROJECTOR_RETURN_IF_ERROR(
        CheckPositive(origin, mla_at(keys.q_lora_rank), mla.q_lora_rank, /*allow_zero=*/true));
    PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, mla_at(keys.kv_lora_rank), mla.kv_lora_rank));
    PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, mla_at(keys.qk_nope_head_dim),
                                            mla.qk_nope_head_dim, false, kMaxHeadDim));
    PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, mla_at(keys.qk_rope_head_dim),
                                            mla.qk_rope_head_dim, false, kMaxHeadDim));
    PROJECTOR_RETURN_IF_ERROR(
        CheckPositive(origin, mla_at(keys.v_head_dim), mla.v_head_dim, false, kMaxHeadDim));
  }
  return absl::OkStatus();
}

// The experts: counts, top-k, and group-limited routing that can hold top-k.
absl::Status ValidateExperts(const ModelSpec& m, const std::string& origin, const std::string& base,
                        const SchemaKeys& keys) {
  const MoeSpec& moe = *m.moe;
  const std::string moe_base = KeyPath(base, keys.moe);
  auto moe_at = [&](const char* key) { return KeyPath(moe_base, key); };
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, moe_at(keys.num_experts), moe.num_experts));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, moe_at(keys.top_k), moe.top_k));
  PROJECTOR_RETURN_IF_ERROR(
      CheckPositive(origin, moe_at(keys.expert_ffn_hidden), moe.expert_ffn_hidden));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, moe_at(keys.num_shared_experts),
                                          moe.num_shared_experts, /*allow_zero=*/true));
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, moe_at(keys.num_dense_layers),
                                          moe.num_dense_layers, /*allow_zero=*/true));
  if (moe.top_k > moe.num_experts) {
    return JsonFieldError(origin, moe_at(keys.top_k),
                          absl::StrCat(moe.top_k, " exceeds ", keys.num_experts, " ",
                                       moe.num_experts, "; accepted: 1..", moe.num_experts));
  }
  if (moe.num_groups > 0) {
    // Library keys only: the calibration schema has no group-limited routing.
    if (moe.num_experts % moe.num_groups != 0) {
      return JsonFieldError(origin, moe_at("num_groups"),
                            absl::StrCat(moe.num_experts, " experts do not split into ",
                                         moe.num_groups, " equal groups; accepted: a divisor of ",
                                         moe.num_experts));
    }
    if (moe.topk_groups > moe.num_groups) {
      return JsonFieldError(origin, moe_at("topk_groups"),
                            absl::StrCat(moe.topk_groups, " exceeds num_groups ", moe.num_groups,
                                         "; accepted: 1..", moe.num_groups));
    }
    const int64_t eligible = moe.topk_groups * (moe.num_experts / moe.num_groups);
    if (eligible < moe.top_k) {
      return JsonFieldError(
          origin, moe_at("topk_groups"),
          absl::StrCat(moe.topk_groups, " groups of ", moe.num_experts / moe.num_groups,
                       " experts cannot hold top_k ", moe.top_k, "; accepted: ",
                       (moe.top_k + moe.num_experts / moe.num_groups - 1) /
                           (moe.num_experts / moe.num_groups),
                       "..", moe.num_groups));
    }
  }
  return absl::OkStatus();
}

// The shared experts' FFN and which layers are MoE (leading dense layers or a pattern).
absl::Status ValidateMoeLayers(const ModelSpec& m, const std::string& origin, const std::string& base,
                        const SchemaKeys& keys) {
  const MoeSpec& moe = *m.moe;
  const std::string moe_base = KeyPath(base, keys.moe);
  auto moe_at = [&](const char* key) { return KeyPath(moe_base, key); };
  // The calibration schema has neither key; a programmatic spec is named in library keys.
  const char* shared_ffn_key = keys.shared_expert_ffn_hidden[0] == '\0'
                                   ? kLibraryKeys.shared_expert_ffn_hidden
                                   : keys.shared_expert_ffn_hidden;
  const char* pattern_key =
      keys.layer_pattern[0] == '\0' ? kLibraryKeys.layer_pattern : keys.layer_pattern;
  PROJECTOR_RETURN_IF_ERROR(CheckPositive(origin, moe_at(shared_ffn_key),
                                          moe.shared_expert_ffn_hidden, /*allow_zero=*/true));
  if (moe.shared_expert_ffn_hidden > 0 && moe.num_shared_experts == 0) {
    return JsonFieldError(
        origin, moe_at(shared_ffn_key),
        absl::StrCat("is ", moe.shared_expert_ffn_hidden, " but ", keys.num_shared_experts,
                     " is 0; accepted: set it only with shared experts"));
  }
  if (moe.layer_pattern.empty()) {
    if (moe.num_dense_layers >= m.num_layers) {
      return JsonFieldError(
          origin, moe_at(keys.num_dense_layers),
          absl::StrCat(moe.num_dense_layers, " leading dense layers leave no MoE layer of ",
                       keys.num_layers, " ", m.num_layers, "; accepted: 0..", m.num_layers - 1,
                       " (drop `", keys.moe, "` for a dense model)"));
    }
  } else {
    if (moe.num_dense_layers > 0) {
      return JsonFieldError(origin, moe_at(keys.num_dense_layers),
                            absl::StrCat("is ", moe.num_dense_layers, " and ", pattern_key,
                                         " is also given; accepted: one of the two"));
    }
    if (static_cast<int64_t>(moe.layer_pattern.size()) != m.num_layers) {
      return JsonFieldError(
          origin, moe_at(pattern_key),
          absl::StrCat("has ", moe.layer_pattern.size(), " entries but ", keys.num_layers, " is ",
                       m.num_layers, "; accepted: one entry per layer"));
    }
    if (std::none_of(moe.layer_pattern.begin(), moe.layer_pattern.end(),
                     [](bool is_moe) { return is_moe; })) {
      return JsonFieldError(origin, moe_at(pattern_key),
                            absl::StrCat("has no MoE layer; accepted: at least one \"moe\" entry "
                                         "(drop `",
                                         keys.moe, "` for a dense model)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateWithKeys(const ModelSpec& m, const std::string& origin,
                              const std::string& base, const SchemaKeys& keys) {
  PROJECTOR_RETURN_IF_ERROR(ValidateSizes(m, origin, base, keys));
  PROJECTOR_RETURN_IF_ERROR(ValidateMla(m, origin, base, keys));
  if (!m.moe.has_value()) return absl::OkStatus();
  PROJECTOR_RETURN_IF_ERROR(ValidateExperts(m, origin, base, keys));
  PROJECTOR_RETURN_IF_ERROR(ValidateMoeLayers(m, origin, base, keys));
  auto at = [&](const char* key) { return KeyPath(base, key); };
  if (m.ffn_hidden_size == 0 && m.NumDenseLayers() > 0) {
    return JsonFieldError(origin, at(keys.ffn_hidden_size),
                          absl::StrCat("must be > 0 because the model has ", m.NumDenseLayers(),
                                       " dense layers, got 0"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// The library format (models/*.json).

absl::StatusOr<std::vector<bool>> ParseLayerPattern(const json& array, const std::string& origin,
                                                    const std::string& pointer) {
  std::vector<bool> pattern;
  pattern.reserve(array.size());
  for (size_t layer_idx = 0; layer_idx < array.size(); ++layer_idx) {
    const json& entry = array[layer_idx];
    if (entry.is_boolean()) {
      pattern.push_back(entry.get<bool>());
      continue;
    }
    if (entry.is_string()) {
      // Compared as std::string: comparing a json to a literal builds a temporary json, which
      // trips GCC 12's -Warray-bounds false positive at -O3.
      const std::string& kind = entry.get_ref<const std::string&>();
      if (kind == "dense" || kind == "moe") {
        pattern.push_back(kind == "moe");
        continue;
      }
    }
    return JsonFieldError(origin, absl::StrCat(pointer, "/", layer_idx),
                          absl::StrCat("unknown layer kind ", entry.dump(),
                                       "; accepted: \"dense\", \"moe\", true (MoE), false"));
  }
  return pattern;
}

absl::StatusOr<MoeSpec> ParseLibraryMoe(JsonObject& obj) {
  PROJECTOR_RETURN_IF_ERROR(
      CheckKeys(obj, {"num_experts", "top_k", "expert_ffn_hidden", "num_shared_experts",
                      "shared_expert_ffn_hidden", "num_dense_layers", "layer_pattern", "num_groups",
                      "topk_groups", "router_dtype"}));
  MoeSpec moe;
  PROJECTOR_ASSIGN_OR_RETURN(moe.num_experts, obj.PositiveInt("num_experts"));
  PROJECTOR_ASSIGN_OR_RETURN(moe.top_k, obj.PositiveInt("top_k"));
  PROJECTOR_ASSIGN_OR_RETURN(moe.expert_ffn_hidden, obj.PositiveInt("expert_ffn_hidden"));
  if (obj.Has("num_shared_experts")) {
    PROJECTOR_ASSIGN_OR_RETURN(moe.num_shared_experts,
                               obj.PositiveInt("num_shared_experts", /*allow_zero=*/true));
  }
  if (obj.Has("shared_expert_ffn_hidden")) {
    PROJECTOR_ASSIGN_OR_RETURN(moe.shared_expert_ffn_hidden,
                               obj.PositiveInt("shared_expert_ffn_hidden", /*allow_zero=*/true));
  }
  if (obj.Has("num_dense_layers")) {
    PROJECTOR_ASSIGN_OR_RETURN(moe.num_dense_layers,
                               obj.PositiveInt("num_dense_layers", /*allow_zero=*/true));
  }
  if (obj.Has("layer_pattern")) {
    PROJECTOR_ASSIGN_OR_RETURN(const json* array, obj.Array("layer_pattern"));
    PROJECTOR_ASSIGN_OR_RETURN(
        moe.layer_pattern, ParseLayerPattern(*array, obj.origin(), obj.PathOf("layer_pattern")));
  }
  if (obj.Has("num_groups") != obj.Has("topk_groups")) {
    return obj.FieldError(obj.Has("num_groups") ? "topk_groups" : "num_groups",
                          "required with the other of num_groups / topk_groups "
                          "(group-limited routing needs both)");
  }
  if (obj.Has("num_groups")) {
    PROJECTOR_ASSIGN_OR_RETURN(moe.num_groups, obj.PositiveInt("num_groups"));
    PROJECTOR_ASSIGN_OR_RETURN(moe.topk_groups, obj.PositiveInt("topk_groups"));
  }
  if (obj.Has("router_dtype")) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::string router_dtype,
                               obj.Enum("router_dtype", {"bf16", "fp32"}));
    moe.router_dtype = router_dtype == "fp32" ? DType::kFp32 : DType::kBf16;
  }
  return moe;
}

absl::StatusOr<MlaSpec> ParseLibraryMla(JsonObject& obj) {
  PROJECTOR_RETURN_IF_ERROR(CheckKeys(
      obj, {"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}));
  MlaSpec mla;
  if (obj.Has("q_lora_rank")) {
    PROJECTOR_ASSIGN_OR_RETURN(mla.q_lora_rank,
                               obj.PositiveInt("q_lora_rank", /*allow_zero=*/true));
  }
  PROJECTOR_ASSIGN_OR_RETURN(mla.kv_lora_rank, obj.PositiveInt("kv_lora_rank"));
  PROJECTOR_ASSIGN_OR_RETURN(mla.qk_nope_head_dim, obj.PositiveInt("qk_nope_head_dim"));
  PROJECTOR_ASSIGN_OR_RETURN(mla.qk_rope_head_dim, obj.PositiveInt("qk_rope_head_dim"));
  PROJECTOR_ASSIGN_OR_RETURN(mla.v_head_dim, obj.PositiveInt("v_head_dim"));
  return mla;
}

// head_dim when the input gives none: hidden/heads, or the MLA QK head (nope + rope).
absl::Status DefaultHeadDim(JsonObject& obj, const char* heads_key, ModelSpec& m) {
  if (m.mla.has_value()) {
    m.head_dim = m.mla->qk_nope_head_dim + m.mla->qk_rope_head_dim;
    return absl::OkStatus();
  }
  if (m.hidden_size % m.num_attention_heads != 0) {
    return obj.FieldError(
        "head_dim",
        absl::StrCat("is required because the hidden size ", m.hidden_size, " is not divisible by ",
                     heads_key, " ", m.num_attention_heads, "; accepted: an integer > 0"));
  }
  m.head_dim = m.hidden_size / m.num_attention_heads;
  return absl::OkStatus();
}

absl::StatusOr<ModelSpec> ParseLibraryModel(JsonObject& obj) {
  PROJECTOR_RETURN_IF_ERROR(CheckKeys(
      obj, {"name", "source", "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads",
            "num_kv_heads", "head_dim", "vocab_size", "mlp", "norm", "tied_embeddings", "qk_norm",
            "attention_bias", "linear_bias", "position_embedding", "attention",
            "output_positions_fraction", "moe", "mla", "mtp_layers"}));
  ModelSpec m;
  PROJECTOR_ASSIGN_OR_RETURN(m.name, obj.String("name"));
  if (m.name.empty()) return obj.FieldError("name", "must be a non-empty string");
  PROJECTOR_ASSIGN_OR_RETURN(m.source, obj.StringOr("source", ""));
  PROJECTOR_ASSIGN_OR_RETURN(m.num_layers, obj.PositiveInt("num_layers"));
  PROJECTOR_ASSIGN_OR_RETURN(m.hidden_size, obj.PositiveInt("hidden_size"));
  // All-MoE models (Mixtral) may give 0: no layer uses the dense FFN. ValidateModel checks it.
  PROJECTOR_ASSIGN_OR_RETURN(m.ffn_hidden_size,
                             obj.PositiveInt("ffn_hidden_size", /*allow_zero=*/obj.Has("moe")));
  PROJECTOR_ASSIGN_OR_RETURN(m.num_attention_heads, obj.PositiveInt("num_attention_heads"));
  PROJECTOR_ASSIGN_OR_RETURN(m.num_kv_heads, obj.PositiveInt("num_kv_heads"));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, obj.OptionalInt("head_dim"));
  PROJECTOR_ASSIGN_OR_RETURN(m.vocab_size, obj.PositiveInt("vocab_size"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string mlp, obj.Enum("mlp", MlpNames()));
  m.mlp = ToMlpKind(mlp);
  // GELU models in the literature (GPT-2/3, MPT) use LayerNorm; SwiGLU ones (Llama) RMSNorm.
  PROJECTOR_ASSIGN_OR_RETURN(
      std::string norm,
      obj.EnumOr("norm", NormNames(), m.mlp == MlpKind::kGelu ? "layernorm" : "rmsnorm"));
  m.norm = norm == "layernorm" ? NormKind::kLayerNorm : NormKind::kRmsNorm;
  PROJECTOR_ASSIGN_OR_RETURN(m.tied_embeddings, obj.BoolOr("tied_embeddings", false));
  PROJECTOR_ASSIGN_OR_RETURN(m.qk_norm, obj.BoolOr("qk_norm", false));
  PROJECTOR_ASSIGN_OR_RETURN(m.attention_bias, obj.BoolOr("attention_bias", false));
  PROJECTOR_ASSIGN_OR_RETURN(m.linear_bias, obj.BoolOr("linear_bias", false));
  PROJECTOR_ASSIGN_OR_RETURN(std::string position,
                             obj.EnumOr("position_embedding", PositionEmbeddingNames(), "rope"));
  for (PositionEmbedding p : kPositionEmbeddings) {
    if (PositionEmbeddingName(p) == position) m.position_embedding = p;
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::string attention,
                             obj.EnumOr("attention", {"causal", "bidirectional"}, "causal"));
  m.causal_attention = attention == "causal";
  PROJECTOR_ASSIGN_OR_RETURN(m.output_positions_fraction,
                             obj.NumberOr("output_positions_fraction", 1.0));
  if (!(m.output_positions_fraction > 0 && m.output_positions_fraction <= 1)) {
    return obj.FieldError("output_positions_fraction",
                          absl::StrCat("must be in (0, 1], got ", m.output_positions_fraction));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> moe, obj.OptionalObject("moe"));
  if (moe.has_value()) {
    PROJECTOR_ASSIGN_OR_RETURN(m.moe, ParseLibraryMoe(*moe));
  }
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> mla, obj.OptionalObject("mla"));
  if (mla.has_value()) {
    PROJECTOR_ASSIGN_OR_RETURN(m.mla, ParseLibraryMla(*mla));
  }
  PROJECTOR_ASSIGN_OR_RETURN(m.mtp_layers, obj.IntOr("mtp_layers", 0));
  if (head_dim.has_value()) {
    if (*head_dim <= 0) {
      return obj.FieldError("head_dim", absl::StrCat("must be > 0, got ", *head_dim));
    }
    m.head_dim = *head_dim;
  } else {
    PROJECTOR_RETURN_IF_ERROR(DefaultHeadDim(obj, "num_attention_heads", m));
  }
  return m;
}

// ---------------------------------------------------------------------------------------------
// The calibration case schema's `model` object (../shared/calibration/README.md).

}  // namespace

std::optional<ModelSpec> LibraryTwin(const ModelSpec& m) {
  const std::string stem = absl::AsciiStrToLower(m.name);
  if (stem.empty() || stem.find_first_of("/\\") != std::string::npos) return std::nullopt;
  const std::filesystem::path path = std::filesystem::path(ModelLibraryDir()) / (stem + ".json");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  absl::StatusOr<ModelSpec> lib = LoadModelFile(path.string());
  if (!lib.ok() || lib->num_layers != m.num_layers || lib->hidden_size != m.hidden_size ||
      lib->num_attention_heads != m.num_attention_heads ||
      lib->moe.has_value() != m.moe.has_value()) {
    return std::nullopt;
  }
  if (m.moe && (lib->moe->num_experts != m.moe->num_experts || lib->moe->top_k != m.moe->top_k)) {
    return std::nullopt;
  }
  return *std::move(lib);
}

namespace {

// What the schema cannot state, from the library model of the same name and shape (LibraryTwin):
// its position embedding (MPT's ALiBi), per-head q/k norms (Qwen3), multi-token-prediction
// modules (DeepSeek-V3's one), group-limited routing (DeepSeek-V3's 4 of 8 groups) and the
// router's dtype (DeepSeek's fp32 gate). Without a
// twin: learned absolute positions for a GELU model (GPT-2/3, Megatron GPT:
// --position-embedding-type learned_absolute is Megatron-LM's default), RoPE for a SwiGLU one,
// and none of the rest.
void TakeUnstatedFieldsFromLibraryTwin(ModelSpec& m) {
  const std::optional<ModelSpec> twin = LibraryTwin(m);
  if (!twin) {
    m.position_embedding =
        m.mlp == MlpKind::kGelu ? PositionEmbedding::kLearned : PositionEmbedding::kRope;
    return;
  }
  m.position_embedding = twin->position_embedding;
  m.qk_norm = twin->qk_norm;
  m.mtp_layers = twin->mtp_layers;
  if (m.moe) {
    m.moe->num_groups = twin->moe->num_groups;
    m.moe->topk_groups = twin->moe->topk_groups;
    m.moe->router_dtype = twin->moe->router_dtype;
  }
}

absl::StatusOr<ModelSpec> ParseCalibrationModel(JsonObject& obj) {
  PROJECTOR_RETURN_IF_ERROR(CheckKeys(obj, {"name", "layers", "hidden", "ffn_hidden", "heads",
                                            "kv_heads", "head_dim", "vocab", "mlp", "moe", "mla"}));
  ModelSpec m;
  m.source = kInlineSource;
  PROJECTOR_ASSIGN_OR_RETURN(m.name, obj.String("name"));
  if (m.name.empty()) return obj.FieldError("name", "must be a non-empty string");
  PROJECTOR_ASSIGN_OR_RETURN(m.num_layers, obj.PositiveInt("layers"));
  PROJECTOR_ASSIGN_OR_RETURN(m.hidden_size, obj.PositiveInt("hidden"));
  const bool has_moe = obj.Has("moe");
  // All-MoE models may leave the dense FFN null or 0.
  if (!has_moe || obj.Has("ffn_hidden")) {
    PROJECTOR_ASSIGN_OR_RETURN(m.ffn_hidden_size,
                               obj.PositiveInt("ffn_hidden", /*allow_zero=*/has_moe));
  }
  PROJECTOR_ASSIGN_OR_RETURN(m.num_attention_heads, obj.PositiveInt("heads"));
  PROJECTOR_ASSIGN_OR_RETURN(m.num_kv_heads, obj.PositiveInt("kv_heads"));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<int64_t> head_dim, obj.OptionalInt("head_dim"));
  PROJECTOR_ASSIGN_OR_RETURN(m.vocab_size, obj.PositiveInt("vocab"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string mlp, obj.Enum("mlp", MlpNames()));
  m.mlp = ToMlpKind(mlp);
  // The schema states neither norm nor embedding tying. Every GELU model of the published
  // results (Megatron GPT, MPT) uses LayerNorm and ties the output layer to the embedding;
  // every SwiGLU one (Llama, Qwen, Mixtral, DeepSeek) uses RMSNorm and an untied output layer.
  // Biases are left out: they are < 0.01 % of the parameters and FLOPs. Positions and the rest
  // the schema has no field for: TakeUnstatedFieldsFromLibraryTwin, once the model is parsed.
  if (m.mlp == MlpKind::kGelu) {
    m.norm = NormKind::kLayerNorm;
    m.tied_embeddings = true;
  }

  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> moe_obj, obj.OptionalObject("moe"));
  if (moe_obj.has_value()) {
    PROJECTOR_RETURN_IF_ERROR(
        CheckKeys(*moe_obj, {"experts", "topk", "ffn_hidden", "shared_experts", "dense_layers"}));
    MoeSpec moe;
    PROJECTOR_ASSIGN_OR_RETURN(moe.num_experts, moe_obj->PositiveInt("experts"));
    PROJECTOR_ASSIGN_OR_RETURN(moe.top_k, moe_obj->PositiveInt("topk"));
    PROJECTOR_ASSIGN_OR_RETURN(moe.expert_ffn_hidden, moe_obj->PositiveInt("ffn_hidden"));
    if (moe_obj->Has("shared_experts")) {
      PROJECTOR_ASSIGN_OR_RETURN(moe.num_shared_experts,
                                 moe_obj->PositiveInt("shared_experts", /*allow_zero=*/true));
    }
    if (moe_obj->Has("dense_layers")) {
      PROJECTOR_ASSIGN_OR_RETURN(moe.num_dense_layers,
                                 moe_obj->PositiveInt("dense_layers", /*allow_zero=*/true));
    }
    m.moe = std::move(moe);
  }

  PROJECTOR_ASSIGN_OR_RETURN(std::optional<JsonObject> mla_obj, obj.OptionalObject("mla"));
  if (mla_obj.has_value()) {
    PROJECTOR_RETURN_IF_ERROR(CheckKeys(
        *mla_obj, {"q_lora_rank", "kv_lora_rank", "qk_head_dim", "qk_rope_dim", "v_head_dim"}));
    MlaSpec mla;
    // null or 0: Q is projected directly (DeepSeek-V2-Lite).
    if (mla_obj->Has("q_lora_rank")) {
      PROJECTOR_ASSIGN_OR_RETURN(mla.q_lora_rank,
                                 mla_obj->PositiveInt("q_lora_rank", /*allow_zero=*/true));
    }
    PROJECTOR_ASSIGN_OR_RETURN(mla.kv_lora_rank, mla_obj->PositiveInt("kv_lora_rank"));
    PROJECTOR_ASSIGN_OR_RETURN(mla.qk_nope_head_dim, mla_obj->PositiveInt("qk_head_dim"));
    PROJECTOR_ASSIGN_OR_RETURN(mla.qk_rope_head_dim, mla_obj->PositiveInt("qk_rope_dim"));
    PROJECTOR_ASSIGN_OR_RETURN(mla.v_head_dim, mla_obj->PositiveInt("v_head_dim"));
    m.mla = mla;
  }

  if (head_dim.has_value()) {
    if (*head_dim <= 0) {
      return obj.FieldError("head_dim", absl::StrCat("must be > 0, got ", *head_dim));
    }
    m.head_dim = *head_dim;
  } else {
    PROJECTOR_RETURN_IF_ERROR(DefaultHeadDim(obj, "heads", m));
  }
  TakeUnstatedFieldsFromLibraryTwin(m);
  return m;
}

// ---------------------------------------------------------------------------------------------
// Parameter counts. Weights of a linear layer d_in -> d_out are d_in·d_out, plus d_out with a
// bias. Sources: the Hugging Face modelling code of each family (LlamaAttention/LlamaMLP,
// Qwen2Attention's q/k/v bias, MixtralSparseMoeBlock, DeepseekV3Attention/DeepseekV3MoE) and
// Megatron-LM's GPT model (add_bias_linear, LayerNorm with bias).

double Linear(int64_t d_in, int64_t d_out, bool bias) {
  return static_cast<double>(d_in) * static_cast<double>(d_out) +
         (bias ? static_cast<double>(d_out) : 0.0);
}

double NormParams(const ModelSpec& m, int64_t width) {
  const bool has_bias = m.norm == NormKind::kLayerNorm && m.linear_bias;
  return static_cast<double>(width) * (has_bias ? 2.0 : 1.0);
}

double AttentionParams(const ModelSpec& m) {
  const int64_t h = m.hidden_size;
  const int64_t heads = m.num_attention_heads;
  const bool bias = m.linear_bias;
  double params = 0;
  if (m.mla.has_value()) {
    // DeepSeek-V2/V3 MLA: Q through a LoRA pair (q_a, RMSNorm, q_b) or directly; a joint KV
    // down-projection that also yields the shared RoPE key (kv_a: h -> kv_lora + rope), its
    // RMSNorm, the KV up-projection (kv_b: kv_lora -> heads·(nope + v)) and the output.
    const MlaSpec& mla = *m.mla;
    const int64_t qk_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim;
    if (mla.q_lora_rank > 0) {
      params += Linear(h, mla.q_lora_rank, bias) + static_cast<double>(mla.q_lora_rank) +
                Linear(mla.q_lora_rank, heads * qk_dim, bias);
    } else {
      params += Linear(h, heads * qk_dim, bias);
    }
    params += Linear(h, mla.kv_lora_rank + mla.qk_rope_head_dim, bias) +
              static_cast<double>(mla.kv_lora_rank) +
              Linear(mla.kv_lora_rank, heads * (mla.qk_nope_head_dim + mla.v_head_dim), bias);
    params += Linear(heads * mla.v_head_dim, h, bias);
  } else {
    // Q, K, V (GQA: kv_heads key/value heads) and the output projection.
    const bool qkv_bias = m.attention_bias || m.linear_bias;
    params += Linear(h, heads * m.head_dim, qkv_bias) +
              2.0 * Linear(h, m.num_kv_heads * m.head_dim, qkv_bias) +
              Linear(heads * m.head_dim, h, bias);
  }
  if (m.qk_norm) params += 2.0 * static_cast<double>(m.QkHeadDim());  // per-head q and k norms
  return params;
}

// One MLP of width `ffn`: SwiGLU has gate, up (h -> ffn) and down (ffn -> h); plain has two.
double MlpParams(const ModelSpec& m, int64_t ffn) {
  const int64_t h = m.hidden_size;
  const double up = Linear(h, ffn, m.linear_bias) * (m.mlp == MlpKind::kSwiGlu ? 2.0 : 1.0);
  return up + Linear(ffn, h, m.linear_bias);
}

// One layer's FFN: the dense MLP, or the router (h -> experts, no bias), `routed` experts and
// the shared experts.
double FfnParams(const ModelSpec& m, bool is_moe, int64_t routed) {
  if (!is_moe) return MlpParams(m, m.ffn_hidden_size);
  const MoeSpec& moe = *m.moe;
  return Linear(m.hidden_size, moe.num_experts, false) +
         static_cast<double>(routed) * MlpParams(m, moe.expert_ffn_hidden) +
         static_cast<double>(moe.num_shared_experts) * MlpParams(m, moe.SharedExpertFfnHidden());
}

// Embedding, output layer (when untied) and the final norm.
double EmbeddingAndOutputParams(const ModelSpec& m) {
  const double table = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
  return table * (m.tied_embeddings ? 1.0 : 2.0) + NormParams(m, m.hidden_size);
}

double CountParameters(const ModelSpec& m, bool active_only) {
  const double per_layer_common = AttentionParams(m) + 2.0 * NormParams(m, m.hidden_size);
  const int64_t moe_layers = m.NumMoeLayers();
  const int64_t dense_layers = m.num_layers - moe_layers;
  double params = EmbeddingAndOutputParams(m) +
                  static_cast<double>(m.num_layers) * per_layer_common +
                  static_cast<double>(dense_layers) * FfnParams(m, false, 0);
  if (moe_layers > 0) {
    const int64_t routed = active_only ? m.moe->top_k : m.moe->num_experts;
    params += static_cast<double>(moe_layers) * FfnParams(m, true, routed);
  }
  return params;
}

}  // namespace

int64_t ModelSpec::OutputRows(int64_t tokens) const {
  if (output_positions_fraction >= 1.0) return tokens;
  return std::max<int64_t>(
      1, static_cast<int64_t>(std::ceil(static_cast<double>(tokens) * output_positions_fraction)));
}

int64_t ModelSpec::NumMoeLayers() const {
  if (!moe.has_value()) return 0;
  int64_t count = 0;
  for (int64_t layer_idx = 0; layer_idx < num_layers; ++layer_idx) {
    if (IsMoeLayer(layer_idx)) ++count;
  }
  return count;
}

int64_t ModelSpec::QkHeadDim() const {
  if (mla.has_value()) return mla->qk_nope_head_dim + mla->qk_rope_head_dim;
  return head_dim;
}

int64_t ModelSpec::VHeadDim() const {
  if (mla.has_value()) return mla->v_head_dim;
  return head_dim;
}

double ModelSpec::TotalParameters() const { return CountParameters(*this, false); }

double ModelSpec::MtpParameters(bool active_only) const {
  if (mtp_layers <= 0) return 0.0;
  const double h = static_cast<double>(hidden_size);
  const bool is_moe = MtpIsMoe();
  const int64_t routed = is_moe ? (active_only ? moe->top_k : moe->num_experts) : 0;
  const double per_module = AttentionParams(*this) + 2.0 * NormParams(*this, hidden_size) +
                            FfnParams(*this, is_moe, routed) + 2.0 * h * h +
                            2.0 * NormParams(*this, hidden_size);
  return static_cast<double>(mtp_layers) * per_module;
}

double ModelSpec::ActiveParameters() const { return CountParameters(*this, true); }

double ModelSpec::RoutedActiveParameters() const {
  if (!moe.has_value()) return 0.0;
  return static_cast<double>(NumMoeLayers()) * static_cast<double>(moe->top_k) *
         MlpParams(*this, moe->expert_ffn_hidden);
}

absl::StatusOr<ModelSpec> ParseModelJson(const json& value, const std::string& origin,
                                         const std::string& pointer) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, JsonObject::Make(value, origin, pointer));
  if (obj.Has("layers")) {
    PROJECTOR_ASSIGN_OR_RETURN(ModelSpec model, ParseCalibrationModel(obj));
    PROJECTOR_RETURN_IF_ERROR(ValidateWithKeys(model, origin, pointer, kCalibrationKeys));
    return model;
  }
  PROJECTOR_ASSIGN_OR_RETURN(ModelSpec model, ParseLibraryModel(obj));
  PROJECTOR_RETURN_IF_ERROR(ValidateWithKeys(model, origin, pointer, kLibraryKeys));
  return model;
}

std::string_view PositionEmbeddingName(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::kRope:
      return "rope";
    case PositionEmbedding::kAlibi:
      return "alibi";
    case PositionEmbedding::kLearned:
      return "learned";
  }
  return "rope";
}

absl::Status ValidateModel(const ModelSpec& model, const std::string& origin) {
  return ValidateWithKeys(model, origin, "", kLibraryKeys);
}

absl::StatusOr<ModelSpec> LoadModelFile(const std::string& path) {
  // Parsed once per file contents: a calibration file resolves the same library model per case.
  return LoadFileMemoised<ModelSpec>(path, [](const std::string& p) -> absl::StatusOr<ModelSpec> {
    PROJECTOR_ASSIGN_OR_RETURN(json value, ReadConfigFile(p));
    return ParseModelJson(value, p, "");
  });
}

std::string ModelLibraryDir() {
  const char* env = std::getenv("PROJECTOR_MODELS_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  return PROJECTOR_DEFAULT_MODELS_DIR;
}

std::vector<std::string> ListLibraryModels() { return JsonFileStems(ModelLibraryDir()); }

absl::StatusOr<ModelSpec> ResolveModel(const std::string& name_or_path) {
  if (absl::StrContains(name_or_path, '/') || absl::EndsWith(name_or_path, ".json") ||
      IsYamlPath(name_or_path)) {
    return LoadModelFile(name_or_path);
  }
  const std::vector<std::string> names = ListLibraryModels();
  // Library names are lower case; a name is matched whatever its case ("Llama3.1-8B").
  const std::string wanted = absl::AsciiStrToLower(name_or_path);
  if (std::find(names.begin(), names.end(), wanted) == names.end()) {
    if (const std::vector<std::string> convnets = JsonFileStems(ModelLibraryDir() + "/convnets");
        std::find(convnets.begin(), convnets.end(), wanted) != convnets.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown model '", name_or_path, "' among the transformers: it is a convolutional "
          "network (models/convnets); `project estimate convnet --model ", wanted,
          " --gpu-arch G --batch N --num-gpus N` projects its data-parallel training"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown model '", name_or_path, "'", DidYouMean(wanted, names), "; valid: ",
                     names.empty() ? std::string("(none found in ") + ModelLibraryDir() + ")"
                                   : absl::StrJoin(names, ", "),
                     ", or a path to a model JSON file"));
  }
  return LoadModelFile((std::filesystem::path(ModelLibraryDir()) / (wanted + ".json")).string());
}

}  // namespace projector
