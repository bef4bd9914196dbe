#include "models/model_spec.h"

#include <cstdlib>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "core/json_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::nlohmann::json;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TestData(const std::string& file) {
  return std::string(PROJECTOR_SOURCE_DIR) + "/tests/testdata/models/" + file;
}

// Parses through core's reader, so a bad literal fails the test instead of throwing.
json ParseOrDie(std::string_view text) {
  absl::StatusOr<json> value = ParseJsonText(text, "test");
  EXPECT_THAT(value, IsOk());
  return value.ok() ? *value : json::object();
}

ModelSpec MustResolve(const std::string& name) {
  absl::StatusOr<ModelSpec> model = ResolveModel(name);
  EXPECT_THAT(model, IsOk());
  return model.ok() ? *model : ModelSpec{};
}

// A small GQA model in the library format.
json TinyModelJson() {
  return json{{"name", "tiny"},     {"source", "test"},       {"num_layers", 4},
              {"hidden_size", 256}, {"ffn_hidden_size", 512}, {"num_attention_heads", 8},
              {"num_kv_heads", 2},  {"vocab_size", 1000},     {"mlp", "swiglu"}};
}

// ---------------------------------------------------------------------------------------------
// Parsing the library format.

TEST(ParseModelJsonTest, ReadsLibraryFormatWithDefaults) {
  absl::StatusOr<ModelSpec> model = ParseModelJson(TinyModelJson(), "tiny.json", "");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->name, "tiny");
  EXPECT_EQ(model->source, "test");
  EXPECT_EQ(model->num_layers, 4);
  EXPECT_EQ(model->head_dim, 32);  // 256 / 8
  EXPECT_EQ(model->QkHeadDim(), 32);
  EXPECT_EQ(model->VHeadDim(), 32);
  EXPECT_EQ(model->mlp, MlpKind::kSwiGlu);
  EXPECT_EQ(model->norm, NormKind::kRmsNorm);
  EXPECT_FALSE(model->tied_embeddings);
  EXPECT_FALSE(model->attention_bias);
  EXPECT_FALSE(model->linear_bias);
  EXPECT_FALSE(model->moe.has_value());
  EXPECT_FALSE(model->mla.has_value());
  EXPECT_EQ(model->NumMoeLayers(), 0);
  EXPECT_EQ(model->NumDenseLayers(), 4);
  EXPECT_TRUE(model->causal_attention);
  EXPECT_DOUBLE_EQ(model->output_positions_fraction, 1.0);
  EXPECT_EQ(model->OutputRows(4096), 4096);
}

// An encoder: bidirectional attention and a masked-LM head on a share of the positions; each
// field refused with its path and what is accepted.
TEST(ParseModelJsonTest, EncoderAttentionAndOutputPositions) {
  json value = TinyModelJson();
  value["attention"] = "bidirectional";
  value["output_positions_fraction"] = 0.25;
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "enc.json", "");
  ASSERT_THAT(model, IsOk());
  EXPECT_FALSE(model->causal_attention);
  EXPECT_EQ(model->OutputRows(100), 25);
  EXPECT_EQ(model->OutputRows(101), 26);  // ceil(25.25)
  value["attention"] = "sideways";
  EXPECT_THAT(ParseModelJson(value, "enc.json", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("enc.json"), HasSubstr("/attention"),
                             HasSubstr("bidirectional"))));
  value["attention"] = "causal";
  value["output_positions_fraction"] = 0;
  EXPECT_THAT(ParseModelJson(value, "enc.json", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/output_positions_fraction"), HasSubstr("(0, 1]"))));
}

TEST(ParseModelJsonTest, GeluDefaultsToLayerNorm) {
  json value = TinyModelJson();
  value["mlp"] = "gelu";
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "tiny.json", "");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->mlp, MlpKind::kGelu);
  EXPECT_EQ(model->norm, NormKind::kLayerNorm);
}

TEST(ParseModelJsonTest, ExplicitHeadDimOverridesHiddenOverHeads) {
  json value = TinyModelJson();
  value["head_dim"] = 64;
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "tiny.json", "");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->head_dim, 64);
}

TEST(ParseModelJsonTest, InlineModelErrorsCarryTheCallersPointer) {
  json value = TinyModelJson();
  value["num_kv_heads"] = 3;
  EXPECT_THAT(ParseModelJson(value, "scenario.json", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("scenario.json: /model/num_kv_heads:"),
                             HasSubstr("not divisible"))));
}

TEST(ParseModelJsonTest, RejectsNonObject) {
  EXPECT_THAT(ParseModelJson(json::array(), "scenario.json", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("scenario.json"), HasSubstr("/model"),
                             HasSubstr("expected an object"))));
}

// ---------------------------------------------------------------------------------------------
// Parsing the calibration case schema (../shared/calibration/README.md).

json CalibrationDeepSeekV3() {
  return ParseOrDie(R"({"name": "DeepSeek-V3", "layers": 61, "hidden": 7168,
      "ffn_hidden": 18432, "heads": 128, "kv_heads": 128, "head_dim": null, "vocab": 129280,
      "mlp": "swiglu",
      "moe": {"experts": 256, "topk": 8, "ffn_hidden": 2048, "shared_experts": 1,
              "dense_layers": 3},
      "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_head_dim": 128, "qk_rope_dim": 64,
              "v_head_dim": 128}})");
}

TEST(ParseModelJsonTest, ReadsCalibrationSchema) {
  json value = ParseOrDie(R"({"name": "GPT 1.7B", "layers": 24, "hidden": 2304,
      "ffn_hidden": 9216, "heads": 24, "kv_heads": 24, "vocab": 51200, "head_dim": null,
      "mlp": "gelu", "moe": null, "mla": null})");
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "public.jsonl:1", "/model");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->name, "GPT 1.7B");
  EXPECT_EQ(model->source, "inline");
  EXPECT_EQ(model->num_layers, 24);
  EXPECT_EQ(model->hidden_size, 2304);
  EXPECT_EQ(model->ffn_hidden_size, 9216);
  EXPECT_EQ(model->num_kv_heads, 24);
  EXPECT_EQ(model->head_dim, 96);
  EXPECT_EQ(model->vocab_size, 51200);
  EXPECT_EQ(model->mlp, MlpKind::kGelu);
  EXPECT_EQ(model->norm, NormKind::kLayerNorm);
  EXPECT_TRUE(model->tied_embeddings);
  EXPECT_FALSE(model->moe.has_value());
  EXPECT_FALSE(model->mla.has_value());
}

// The schema has no position-embedding field: a case naming a library model of the same shape
// takes its position embedding (MPT: ALiBi); any other GELU case learned absolute positions
// (GPT-2/3, Megatron GPT's default), a SwiGLU case RoPE.
TEST(ParseModelJsonTest, CalibrationTakesThePositionEmbeddingOfTheSameLibraryModel) {
  json mpt = ParseOrDie(R"({"name": "MPT-7b", "layers": 32, "hidden": 4096,
      "ffn_hidden": 16384, "heads": 32, "kv_heads": 32, "vocab": 50368, "head_dim": null,
      "mlp": "gelu", "moe": null, "mla": null})");
  absl::StatusOr<ModelSpec> model = ParseModelJson(mpt, "public.jsonl:1", "/model");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->position_embedding, PositionEmbedding::kAlibi);
  // Same name, another shape: not that model.
  mpt["layers"] = 31;
  model = ParseModelJson(mpt, "public.jsonl:1", "/model");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->position_embedding, PositionEmbedding::kLearned);
  // A name the library does not have (or one with a path in it).
  mpt["layers"] = 32;
  for (const char* name : {"GPT 1.7B", "../models/mpt-7b"}) {
    mpt["name"] = name;
    model = ParseModelJson(mpt, "public.jsonl:1", "/model");
    ASSERT_THAT(model, IsOk());
    EXPECT_EQ(model->position_embedding, PositionEmbedding::kLearned) << name;
    mpt["mlp"] = "swiglu";
    model = ParseModelJson(mpt, "public.jsonl:1", "/model");
    ASSERT_THAT(model, IsOk());
    EXPECT_EQ(model->position_embedding, PositionEmbedding::kRope) << name;
    mpt["mlp"] = "gelu";
  }
}

TEST(ParseModelJsonTest, LibraryPositionEmbedding) {
  auto mpt = ResolveModel("mpt-7b");
  auto llama = ResolveModel("llama3.1-8b");
  ASSERT_THAT(mpt, IsOk());
  ASSERT_THAT(llama, IsOk());
  EXPECT_EQ(mpt->position_embedding, PositionEmbedding::kAlibi);
  EXPECT_EQ(llama->position_embedding, PositionEmbedding::kRope);  // the default
  EXPECT_EQ(PositionEmbeddingName(PositionEmbedding::kLearned), "learned");
}

TEST(ParseModelJsonTest, CalibrationMoeAndMlaMatchTheLibraryModel) {
  absl::StatusOr<ModelSpec> inline_model =
      ParseModelJson(CalibrationDeepSeekV3(), "cases.jsonl:7", "/model");
  ASSERT_THAT(inline_model, IsOk());
  ASSERT_TRUE(inline_model->moe.has_value());
  ASSERT_TRUE(inline_model->mla.has_value());
  EXPECT_EQ(inline_model->moe->num_experts, 256);
  EXPECT_EQ(inline_model->moe->top_k, 8);
  EXPECT_EQ(inline_model->moe->num_shared_experts, 1);
  EXPECT_EQ(inline_model->moe->num_dense_layers, 3);
  EXPECT_EQ(inline_model->mla->qk_nope_head_dim, 128);  // calibration `qk_head_dim`
  EXPECT_EQ(inline_model->mla->qk_rope_head_dim, 64);
  EXPECT_EQ(inline_model->QkHeadDim(), 192);
  EXPECT_EQ(inline_model->VHeadDim(), 128);
  EXPECT_FALSE(inline_model->tied_embeddings);

  const ModelSpec library = MustResolve("deepseek-v3");
  EXPECT_THAT(inline_model->TotalParameters(), IsNearRel(library.TotalParameters(), 1e-12));
  EXPECT_THAT(inline_model->ActiveParameters(), IsNearRel(library.ActiveParameters(), 1e-12));
}

// What the schema cannot state comes from the library model of the same name and shape:
// DeepSeek-V3's MTP module and its 4-of-8 group routing; none from a model of another name, nor
// from one of the same name with another shape (or another expert count).
TEST(ParseModelJsonTest, CalibrationTakesUnstatedFieldsFromTheLibraryTwin) {
  absl::StatusOr<ModelSpec> twin = ParseModelJson(CalibrationDeepSeekV3(), "c.jsonl:1", "/model");
  ASSERT_THAT(twin, IsOk());
  EXPECT_EQ(twin->mtp_layers, 1);
  EXPECT_EQ(twin->moe->num_groups, 8);
  EXPECT_EQ(twin->moe->topk_groups, 4);
  EXPECT_EQ(twin->moe->router_dtype, DType::kFp32);
  EXPECT_FALSE(twin->qk_norm);
  ASSERT_TRUE(LibraryTwin(*twin).has_value());
  for (auto edit : {+[](json& v) { v["name"] = "DeepSeek-V3-like"; },
                    +[](json& v) { v["layers"] = 60; },
                    +[](json& v) { v["moe"]["experts"] = 128; }}) {
    json value = CalibrationDeepSeekV3();
    edit(value);
    absl::StatusOr<ModelSpec> other = ParseModelJson(value, "c.jsonl:1", "/model");
    ASSERT_THAT(other, IsOk());
    EXPECT_EQ(other->mtp_layers, 0) << value.dump();
    EXPECT_EQ(other->moe->num_groups, 0) << value.dump();
    EXPECT_FALSE(LibraryTwin(*other).has_value());
  }
  const ModelSpec qwen = MustResolve("qwen3-30b-a3b");
  ASSERT_TRUE(qwen.qk_norm);
  ASSERT_TRUE(LibraryTwin(qwen).has_value());
  EXPECT_TRUE(LibraryTwin(qwen)->qk_norm);
}

TEST(ParseModelJsonTest, CalibrationNullQLoraMeansDirectQ) {
  json value = CalibrationDeepSeekV3();
  value["mla"]["q_lora_rank"] = nullptr;
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "cases.jsonl:7", "/model");
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->mla->q_lora_rank, 0);
}

TEST(ParseModelJsonTest, CalibrationErrorsUseCalibrationKeys) {
  json value = CalibrationDeepSeekV3();
  value["moe"]["topk"] = 300;
  EXPECT_THAT(ParseModelJson(value, "cases.jsonl:7", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cases.jsonl:7: /model/moe/topk:"),
                             HasSubstr("300 exceeds experts 256"))));
}

TEST(ParseModelJsonTest, CalibrationRejectsUnknownNestedKey) {
  json value = CalibrationDeepSeekV3();
  value["mla"]["qk_nope_head_dim"] = 128;
  EXPECT_THAT(ParseModelJson(value, "cases.jsonl:7", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cases.jsonl:7: /model/mla/qk_nope_head_dim:"),
                             HasSubstr("unknown key"), HasSubstr("qk_head_dim"))));
}

TEST(ParseModelJsonTest, CalibrationRejectsNonPositiveSize) {
  json value = CalibrationDeepSeekV3();
  value["hidden"] = -1;
  EXPECT_THAT(
      ParseModelJson(value, "cases.jsonl:7", "/model"),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("cases.jsonl:7: /model/hidden:"),
                                                         HasSubstr("must be > 0, got -1"))));
}

// Sizes beyond any model (layers > 2^16, other dimensions > 2^24) are rejected with the field.
TEST(ParseModelJsonTest, CalibrationRejectsSizesBeyondAnyModel) {
  json value = CalibrationDeepSeekV3();
  value["layers"] = int64_t{1} << 31;
  EXPECT_THAT(ParseModelJson(value, "cases.jsonl:7", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("cases.jsonl:7: /model/layers:"),
                             HasSubstr("must be <= 65536 (beyond any model), got 2147483648"))));
  value = CalibrationDeepSeekV3();
  value["vocab"] = int64_t{1} << 40;
  EXPECT_THAT(ParseModelJson(value, "cases.jsonl:7", "/model"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/model/vocab:"), HasSubstr("must be <= 16777216"))));
}

// ---------------------------------------------------------------------------------------------
// MoE layer placement.

TEST(ModelSpecTest, LeadingDenseLayersAreNotMoe) {
  const ModelSpec model = MustResolve("deepseek-v3");
  EXPECT_FALSE(model.IsMoeLayer(0));
  EXPECT_FALSE(model.IsMoeLayer(2));
  EXPECT_TRUE(model.IsMoeLayer(3));
  EXPECT_TRUE(model.IsMoeLayer(60));
  EXPECT_FALSE(model.IsMoeLayer(61));  // out of range
  EXPECT_FALSE(model.IsMoeLayer(-1));
  EXPECT_EQ(model.NumMoeLayers(), 58);
  EXPECT_EQ(model.NumDenseLayers(), 3);
}

// The closed form counts what IsMoeLayer says layer by layer, over every range (inside, across
// the leading dense layers, past the last layer, empty).
TEST(ModelSpecTest, MoeLayersInCountsWhatIsMoeLayerSays) {
  const ModelSpec model = MustResolve("deepseek-v3");
  for (int64_t first = 0; first <= 63; ++first) {
    for (int64_t count = 0; count <= 64; ++count) {
      int64_t brute = 0;
      for (int64_t i = first; i < first + count; ++i) brute += model.IsMoeLayer(i) ? 1 : 0;
      ASSERT_EQ(model.MoeLayersIn(first, count), brute) << first << " +" << count;
    }
  }
  EXPECT_EQ(model.MoeLayersIn(0, 61), 58);  // 3 dense layers first (DeepSeek-V3)
  EXPECT_EQ(model.MoeLayersIn(0, 3), 0);
  EXPECT_EQ(MustResolve("llama3.1-8b").MoeLayersIn(0, 32), 0);
}

TEST(ModelSpecTest, LayerPatternPlacesMoeLayers) {
  json value = TinyModelJson();
  value["moe"] = {{"num_experts", 8},
                  {"top_k", 2},
                  {"expert_ffn_hidden", 128},
                  {"layer_pattern", json::array({"dense", "moe", false, true})}};
  absl::StatusOr<ModelSpec> model = ParseModelJson(value, "tiny.json", "");
  ASSERT_THAT(model, IsOk());
  EXPECT_FALSE(model->IsMoeLayer(0));
  EXPECT_TRUE(model->IsMoeLayer(1));
  EXPECT_FALSE(model->IsMoeLayer(2));
  EXPECT_TRUE(model->IsMoeLayer(3));
  EXPECT_EQ(model->NumMoeLayers(), 2);
  EXPECT_EQ(model->NumDenseLayers(), 2);
}

TEST(ModelSpecTest, DenseModelHasNoMoeLayer) {
  const ModelSpec model = MustResolve("llama3.1-8b");
  EXPECT_FALSE(model.IsMoeLayer(0));
  EXPECT_EQ(model.NumMoeLayers(), 0);
  EXPECT_EQ(model.NumDenseLayers(), 32);
}

TEST(ModelSpecTest, MixtralIsMoeEverywhere) {
  const ModelSpec model = MustResolve("mixtral-8x7b");
  EXPECT_TRUE(model.IsMoeLayer(0));
  EXPECT_EQ(model.NumMoeLayers(), 32);
}

TEST(ModelSpecTest, SharedExpertFfnDefaultsToExpertFfn) {
  MoeSpec moe;
  moe.num_experts = 8;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 128;
  moe.num_shared_experts = 1;
  EXPECT_EQ(moe.SharedExpertFfnHidden(), 128);
  moe.shared_expert_ffn_hidden = 512;
  EXPECT_EQ(moe.SharedExpertFfnHidden(), 512);
}

// ---------------------------------------------------------------------------------------------
// Parameter counts against closed forms. Per layer: attention Q,O = h·heads·d each, K,V =
// h·kv·d each; SwiGLU MLP = 3·h·f; plain MLP = 2·h·f; RMSNorm = h, two per layer plus the
// final one; embedding V·h, doubled when the output layer is untied.

// Llama-family dense model (RMSNorm, SwiGLU, no bias).
double LlamaParams(double layers, double h, double f, double heads, double kv, double vocab) {
  const double d = h / heads;
  const double attention = 2 * h * heads * d + 2 * h * kv * d;
  return 2 * vocab * h + layers * (attention + 3 * h * f + 2 * h) + h;
}

TEST(ParameterCountTest, Llama31_8B) {
  const ModelSpec model = MustResolve("llama3.1-8b");
  const double expected = LlamaParams(32, 4096, 14336, 32, 8, 128256);  // 8,030,261,248
  EXPECT_THAT(model.TotalParameters(), IsNearRel(expected, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(8.03e9, 0.01));
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(model.TotalParameters(), 1e-12));
}

TEST(ParameterCountTest, Llama31_70B) {
  const ModelSpec model = MustResolve("llama3.1-70b");
  EXPECT_THAT(model.TotalParameters(),
              IsNearRel(LlamaParams(80, 8192, 28672, 64, 8, 128256), 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(70.6e9, 0.01));
}

TEST(ParameterCountTest, Llama31_405B) {
  const ModelSpec model = MustResolve("llama3.1-405b");
  EXPECT_THAT(model.TotalParameters(),
              IsNearRel(LlamaParams(126, 16384, 53248, 128, 8, 128256), 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(405.9e9, 0.01));
}

TEST(ParameterCountTest, Llama2_7B) {
  const ModelSpec model = MustResolve("llama2-7b");
  EXPECT_THAT(model.TotalParameters(),
              IsNearRel(LlamaParams(32, 4096, 11008, 32, 32, 32000), 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(6.74e9, 0.01));
}

TEST(ParameterCountTest, Qwen25_7BCountsQkvBias) {
  const ModelSpec model = MustResolve("qwen2.5-7b");
  // Qwen2 attention: bias on q (heads·d = 3584) and on k, v (kv·d = 512 each).
  const double qkv_bias = 28 * (3584.0 + 2 * 512);
  EXPECT_THAT(model.TotalParameters(),
              IsNearRel(LlamaParams(28, 3584, 18944, 28, 4, 152064) + qkv_bias, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(7.62e9, 0.01));
}

TEST(ParameterCountTest, Mixtral8x7B) {
  const ModelSpec model = MustResolve("mixtral-8x7b");
  // Per layer: attention 2·4096² + 2·4096·1024; router 8·4096; 8 SwiGLU experts 3·4096·14336.
  const double h = 4096, f = 14336, vocab = 32000, layers = 32;
  const double attention = 2 * h * h + 2 * h * 1024;
  const double expert = 3 * h * f;
  const double common = attention + 8 * h + 2 * h;
  const double total = 2 * vocab * h + layers * (common + 8 * expert) + h;
  const double active = 2 * vocab * h + layers * (common + 2 * expert) + h;
  EXPECT_THAT(model.TotalParameters(), IsNearRel(total, 1e-12));
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(active, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(46.7e9, 0.01));
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(12.9e9, 0.01));
}

TEST(ParameterCountTest, Mixtral8x22B) {
  const ModelSpec model = MustResolve("mixtral-8x22b");
  EXPECT_THAT(model.TotalParameters(), IsNearRel(140.6e9, 0.01));  // "141B" by Mistral
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(39.2e9, 0.01));  // "39B active"
}

// DeepSeek MLA per layer: q_a h·qr + norm qr + q_b qr·heads·(nope+rope) (or h·heads·(nope+rope)
// without q LoRA); kv_a h·(kvr+rope) + norm kvr; kv_b kvr·heads·(nope+v); o heads·v·h.
double MlaParams(double h, double heads, double qr, double kvr, double nope, double rope,
                 double v) {
  const double q = qr > 0 ? h * qr + qr + qr * heads * (nope + rope) : h * heads * (nope + rope);
  return q + h * (kvr + rope) + kvr + kvr * heads * (nope + v) + heads * v * h;
}

TEST(ParameterCountTest, DeepSeekV3) {
  const ModelSpec model = MustResolve("deepseek-v3");
  const double h = 7168, vocab = 129280;
  const double common = MlaParams(h, 128, 1536, 512, 128, 64, 128) + 2 * h;
  const double dense_mlp = 3 * h * 18432;
  const double expert = 3 * h * 2048;
  const double router = 256 * h;
  // 3 dense layers, 58 MoE layers with 256 routed (8 active) + 1 shared expert.
  const double base = 2 * vocab * h + h + 61 * common + 3 * dense_mlp + 58 * router;
  EXPECT_THAT(model.TotalParameters(), IsNearRel(base + 58 * 257 * expert, 1e-12));
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(base + 58 * 9 * expert, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(671e9, 0.01));
  // The closed form gives 37.55e9; DeepSeek quotes it rounded as "37B activated".
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(37.5e9, 0.01));
}

TEST(ParameterCountTest, DeepSeekV2LiteHasDirectQ) {
  const ModelSpec model = MustResolve("deepseek-v2-lite");
  const double h = 2048, vocab = 102400;
  const double common = MlaParams(h, 16, 0, 512, 128, 64, 128) + 2 * h;
  const double expert = 3 * h * 1408;
  // 1 dense layer (FFN 10944), 26 MoE layers with 64 routed (6 active) + 2 shared experts.
  const double base = 2 * vocab * h + h + 27 * common + 3 * h * 10944 + 26 * 64 * h;
  EXPECT_THAT(model.TotalParameters(), IsNearRel(base + 26 * 66 * expert, 1e-12));
  EXPECT_THAT(model.ActiveParameters(), IsNearRel(base + 26 * 8 * expert, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(15.7e9, 0.01));
}

TEST(ParameterCountTest, Gpt3_175BWithBiasesAndTiedEmbedding) {
  const ModelSpec model = MustResolve("gpt3-175b");
  // Megatron's count: 12·l·h² (QKV 3h², proj h², fc1/fc2 8h²) + 13·l·h (biases 3h+h+4h+h,
  // two LayerNorms 4h) + V·h (tied) + 2h (final LayerNorm). Position embeddings not modelled.
  const double l = 96, h = 12288, vocab = 51200;
  const double expected = 12 * l * h * h + 13 * l * h + vocab * h + 2 * h;
  EXPECT_THAT(model.TotalParameters(), IsNearRel(expected, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(175e9, 0.01));
}

TEST(ParameterCountTest, MptHasNoBias) {
  const ModelSpec model = MustResolve("mpt-7b");
  // 12·l·h² + 2·l·h (two bias-free LayerNorms) + V·h (tied) + h.
  const double l = 32, h = 4096, vocab = 50368;
  EXPECT_THAT(model.TotalParameters(),
              IsNearRel(12 * l * h * h + 2 * l * h + vocab * h + h, 1e-12));
  EXPECT_THAT(model.TotalParameters(), IsNearRel(6.65e9, 0.01));
}

TEST(ParameterCountTest, QkNormAddsTwoHeadDimsPerLayer) {
  json value = TinyModelJson();
  absl::StatusOr<ModelSpec> plain = ParseModelJson(value, "tiny.json", "");
  value["qk_norm"] = true;
  absl::StatusOr<ModelSpec> normed = ParseModelJson(value, "tiny.json", "");
  ASSERT_THAT(plain, IsOk());
  ASSERT_THAT(normed, IsOk());
  EXPECT_THAT(normed->TotalParameters() - plain->TotalParameters(), IsNearRel(4 * 2 * 32, 1e-12));
}

TEST(ParameterCountTest, TyingRemovesOneVocabTable) {
  json value = TinyModelJson();
  absl::StatusOr<ModelSpec> untied = ParseModelJson(value, "tiny.json", "");
  value["tied_embeddings"] = true;
  absl::StatusOr<ModelSpec> tied = ParseModelJson(value, "tiny.json", "");
  ASSERT_THAT(untied, IsOk());
  ASSERT_THAT(tied, IsOk());
  EXPECT_THAT(untied->TotalParameters() - tied->TotalParameters(), IsNearRel(1000 * 256, 1e-12));
}

// ---------------------------------------------------------------------------------------------
// Bad input: every rule names the file and the JSON pointer of the field.

struct BadModelCase {
  std::string file;
  std::string pointer;  // expected "<file>: <pointer>:" prefix of the problem
  std::string problem;  // a substring of the problem text
};

void PrintTo(const BadModelCase& c, std::ostream* os) { *os << c.file; }

class BadModelFileTest : public ::testing::TestWithParam<BadModelCase> {};

TEST_P(BadModelFileTest, NamesFileAndField) {
  const BadModelCase& c = GetParam();
  const std::string path = TestData(c.file);
  EXPECT_THAT(LoadModelFile(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(path + ": " + c.pointer + ":"), HasSubstr(c.problem))));
}

INSTANTIATE_TEST_SUITE_P(
    Rules, BadModelFileTest,
    ::testing::Values(
        BadModelCase{"unknown_key.json", "/num_layer",
                     "unknown key 'num_layer' (did you mean 'num_layers'?); accepted keys:"},
        BadModelCase{"unknown_nested_key.json", "/moe/topk", "unknown key 'topk'"},
        BadModelCase{"wrong_type.json", "/hidden_size", "expected an integer, got string"},
        BadModelCase{"wrong_type_bool.json", "/tied_embeddings", "expected true or false"},
        BadModelCase{"moe_not_object.json", "/moe", "expected an object, got integer"},
        BadModelCase{"non_positive.json", "/num_layers", "must be > 0, got 0"},
        BadModelCase{"non_positive_head_dim.json", "/head_dim", "must be > 0, got -32"},
        BadModelCase{"non_positive_mla.json", "/mla/kv_lora_rank", "must be > 0, got 0"},
        BadModelCase{"heads_not_divisible.json", "/num_kv_heads",
                     "num_attention_heads 6 is not divisible by num_kv_heads 4"},
        BadModelCase{"top_k_exceeds_experts.json", "/moe/top_k",
                     "9 exceeds num_experts 8; accepted: 1..8"},
        BadModelCase{"bad_pattern_length.json", "/moe/layer_pattern",
                     "has 3 entries but num_layers is 4"},
        BadModelCase{"bad_pattern_entry.json", "/moe/layer_pattern/2",
                     "unknown layer kind \"sparse\"; accepted: \"dense\", \"moe\""},
        BadModelCase{"pattern_without_moe.json", "/moe/layer_pattern", "has no MoE layer"},
        BadModelCase{"pattern_and_dense_layers.json", "/moe/num_dense_layers",
                     "accepted: one of the two"},
        BadModelCase{"dense_layers_cover_all.json", "/moe/num_dense_layers", "leave no MoE layer"},
        BadModelCase{"shared_ffn_without_shared_experts.json", "/moe/shared_expert_ffn_hidden",
                     "num_shared_experts is 0"},
        BadModelCase{"groups_without_topk_groups.json", "/moe/topk_groups",
                     "required with the other of num_groups / topk_groups"},
        BadModelCase{"groups_not_dividing_experts.json", "/moe/num_groups",
                     "8 experts do not split into 3 equal groups; accepted: a divisor of 8"},
        BadModelCase{"topk_groups_too_few.json", "/moe/topk_groups",
                     "1 groups of 2 experts cannot hold top_k 4; accepted: 2..4"},
        BadModelCase{"topk_groups_exceed_groups.json", "/moe/topk_groups",
                     "5 exceeds num_groups 4; accepted: 1..4"},
        BadModelCase{"unknown_router_dtype.json", "/moe/router_dtype", "unknown value 'fp16'"},
        BadModelCase{"dense_layers_need_ffn.json", "/ffn_hidden_size",
                     "must be > 0 because the model has 1 dense layers"},
        BadModelCase{"unknown_mlp.json", "/mlp",
                     "unknown value 'relu' (did you mean 'gelu'?); accepted: swiglu, gelu"},
        BadModelCase{"unknown_norm.json", "/norm", "unknown value 'batchnorm'"},
        BadModelCase{"unknown_position_embedding.json", "/position_embedding",
                     "unknown value 'sinusoidal'; accepted: rope, alibi, learned"},
        BadModelCase{"missing_field.json", "/vocab_size", "required field is missing"},
        BadModelCase{"empty_name.json", "/name", "must be a non-empty string"},
        BadModelCase{"head_dim_required.json", "/head_dim",
                     "is required because the hidden size 250 is not divisible"}),
    [](const ::testing::TestParamInfo<BadModelCase>& param_info) {
      std::string name = param_info.param.file.substr(0, param_info.param.file.find('.'));
      for (char& c : name) {
        if (c == '_') c = 'X';
      }
      return name;
    });

// DeepSeek-V3's node-limited routing: 256 experts in 8 groups, each token from its best 4
// (Hugging Face config n_group 8, topk_group 4).
TEST(ModelSpecTest, DeepSeekV3CarriesGroupLimitedRouting) {
  absl::StatusOr<ModelSpec> m = ResolveModel("deepseek-v3");
  ASSERT_THAT(m, IsOk());
  ASSERT_TRUE(m->moe.has_value());
  EXPECT_EQ(m->moe->num_groups, 8);
  EXPECT_EQ(m->moe->topk_groups, 4);
  absl::StatusOr<ModelSpec> mixtral = ResolveModel("mixtral-8x7b");
  ASSERT_THAT(mixtral, IsOk());
  EXPECT_EQ(mixtral->moe->num_groups, 0);
}

// The DeepSeek recipes compute the router's logits in fp32 (Megatron-Bridge's DeepSeekModelProvider
// sets moe_router_dtype "fp32"); Qwen3's and Mixtral's keep Megatron-Core's default, the
// activations' dtype.
TEST(ModelSpecTest, DeepSeekRoutersComputeInFp32) {
  for (const char* name : {"deepseek-v3", "deepseek-v2-lite"}) {
    absl::StatusOr<ModelSpec> m = ResolveModel(name);
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ(m->moe->router_dtype, DType::kFp32) << name;
  }
  for (const char* name : {"qwen3-30b-a3b", "qwen3-235b-a22b", "mixtral-8x7b"}) {
    absl::StatusOr<ModelSpec> m = ResolveModel(name);
    ASSERT_THAT(m, IsOk());
    EXPECT_EQ(m->moe->router_dtype, DType::kBf16) << name;
  }
}

// DeepSeek-V3 trains one MTP module (num_nextn_predict_layers 1): an MoE layer (the last layer's
// kind) with the 2h -> h projection and two norms; the 671B / 37B of the main model stay.
TEST(ModelSpecTest, DeepSeekV3CarriesOneMtpModule) {
  absl::StatusOr<ModelSpec> m = ResolveModel("deepseek-v3");
  ASSERT_THAT(m, IsOk());
  EXPECT_EQ(m->mtp_layers, 1);
  EXPECT_TRUE(m->MtpIsMoe());
  const double h = 7168;
  const double common = MlaParams(h, 128, 1536, 512, 128, 64, 128) + 2 * h;
  const double expert = 3 * h * 2048, router = 256 * h;
  EXPECT_THAT(m->MtpParameters(false),
              IsNearRel(common + router + 257 * expert + 2 * h * h + 2 * h, 1e-12));
  EXPECT_THAT(m->MtpParameters(true),
              IsNearRel(common + router + 9 * expert + 2 * h * h + 2 * h, 1e-12));
  EXPECT_THAT(m->TotalParameters(), IsNearRel(671e9, 0.01));
  // Bounds: 0..16 modules.
  json value = json::parse(R"({"name": "x", "num_layers": 2, "hidden_size": 64,
      "ffn_hidden_size": 128, "num_attention_heads": 4, "num_kv_heads": 4, "vocab_size": 100,
      "mlp": "swiglu", "mtp_layers": 17})");
  EXPECT_THAT(ParseModelJson(value, "m.json", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.json: /mtp_layers:"), HasSubstr("must be <= 16"))));
  value["mtp_layers"] = -1;
  EXPECT_THAT(ParseModelJson(value, "m.json", ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/mtp_layers:"), HasSubstr("must be >= 0"))));
}

TEST(LoadModelFileTest, UnreadableFileIsNotFound) {
  const std::string path = TestData("does_not_exist.json");
  EXPECT_THAT(LoadModelFile(path), StatusIs(absl::StatusCode::kNotFound,
                                            AllOf(HasSubstr(path), HasSubstr("cannot open"))));
}

TEST(LoadModelFileTest, SyntaxErrorNamesFileAndLine) {
  const std::string path = TestData("invalid_syntax.json");
  EXPECT_THAT(LoadModelFile(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                            AllOf(HasSubstr(path), HasSubstr("line 3"))));
}

// ---------------------------------------------------------------------------------------------
// ValidateModel on specs built in code.

ModelSpec TinySpec() {
  ModelSpec model;
  model.name = "tiny";
  model.num_layers = 4;
  model.hidden_size = 256;
  model.ffn_hidden_size = 512;
  model.num_attention_heads = 8;
  model.num_kv_heads = 2;
  model.head_dim = 32;
  model.vocab_size = 1000;
  return model;
}

MoeSpec SmallMoe(int64_t num_experts, int64_t top_k) {
  MoeSpec moe;
  moe.num_experts = num_experts;
  moe.top_k = top_k;
  moe.expert_ffn_hidden = 64;
  return moe;
}

TEST(ValidateModelTest, AcceptsValidSpec) {
  EXPECT_THAT(ValidateModel(TinySpec(), "code"), IsOk());
}

TEST(ValidateModelTest, RejectsZeroKvHeads) {
  ModelSpec model = TinySpec();
  model.num_kv_heads = 0;
  EXPECT_THAT(ValidateModel(model, "code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("code: /num_kv_heads:"), HasSubstr("must be > 0"))));
}

TEST(ValidateModelTest, RejectsNonPositiveHeadDim) {
  ModelSpec model = TinySpec();
  model.head_dim = 0;
  EXPECT_THAT(ValidateModel(model, "code"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("code: /head_dim:")));
}

TEST(ValidateModelTest, RejectsPatternOfWrongLength) {
  ModelSpec model = TinySpec();
  model.moe = SmallMoe(4, 1);
  model.moe->layer_pattern = {true, true};
  EXPECT_THAT(ValidateModel(model, "code"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("code: /moe/layer_pattern:"), HasSubstr("has 2 entries"))));
}

TEST(ValidateModelTest, RejectsTopKAboveExperts) {
  ModelSpec model = TinySpec();
  model.moe = SmallMoe(4, 5);
  EXPECT_THAT(ValidateModel(model, "code"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("code: /moe/top_k:")));
}

// ---------------------------------------------------------------------------------------------
// The library: names, paths, the directory override.

TEST(ResolveModelTest, UnknownNameListsValidNames) {
  EXPECT_THAT(
      ResolveModel("llama9-1t"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("unknown model 'llama9-1t'"), HasSubstr("; valid: "),
                     HasSubstr("deepseek-v3"),
                     HasSubstr("llama3.1-8b"), HasSubstr("mpt-7b"))));
}

TEST(ResolveModelTest, PathIsLoadedAsAFile) {
  absl::StatusOr<ModelSpec> model = ResolveModel(TestData("library/tiny-dense.json"));
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->name, "tiny-dense");
}

TEST(ResolveModelTest, MissingPathIsNotFound) {
  EXPECT_THAT(ResolveModel("no_such_dir/model.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no_such_dir/model.json")));
  EXPECT_THAT(ResolveModel("model.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("model.json")));
}

TEST(ResolveModelTest, BadLibraryFileIsNotReportedAsUnknownName) {
  EXPECT_THAT(ResolveModel(TestData("heads_not_divisible.json")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/num_kv_heads")));
}

// Sets $PROJECTOR_MODELS_DIR for one test and restores it.
class ScopedModelsDir {
 public:
  explicit ScopedModelsDir(const std::string& dir) {
    if (const char* old = std::getenv("PROJECTOR_MODELS_DIR")) old_ = old;
    setenv("PROJECTOR_MODELS_DIR", dir.c_str(), 1);
  }
  ~ScopedModelsDir() {
    if (old_.has_value()) {
      setenv("PROJECTOR_MODELS_DIR", old_->c_str(), 1);
    } else {
      unsetenv("PROJECTOR_MODELS_DIR");
    }
  }

 private:
  std::optional<std::string> old_;
};

TEST(ModelLibraryDirTest, EnvironmentOverridesTheDefault) {
  const std::string dir = TestData("library");
  ScopedModelsDir scoped(dir);
  EXPECT_EQ(ModelLibraryDir(), dir);
  EXPECT_EQ(ListLibraryModels(), std::vector<std::string>{"tiny-dense"});
  EXPECT_THAT(ResolveModel("tiny-dense"), IsOk());
  EXPECT_THAT(ResolveModel("llama3.1-8b"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("unknown model 'llama3.1-8b'; valid: tiny-dense"),
                             Not(HasSubstr("mpt")))));
}

TEST(ModelLibraryDirTest, DefaultIsTheSourceTree) {
  ScopedModelsDir scoped("");
  EXPECT_EQ(ModelLibraryDir(), std::string(PROJECTOR_SOURCE_DIR) + "/models");
}

}  // namespace
}  // namespace projector
