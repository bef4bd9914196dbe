// Shipped data tested like code: every models/*.json loads and validates, and every model object
// of the public calibration cases loads and has a shipped library twin.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_spec.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;

std::string ShippedDir() { return std::string(PROJECTOR_SOURCE_DIR) + "/models"; }

// Enumerated at run time so a new file is tested without touching this test.
std::vector<std::string> ShippedModelFiles() {
  std::vector<std::string> stems;
  for (const auto& entry : std::filesystem::directory_iterator(ShippedDir())) {
    if (entry.path().extension() == ".json") stems.push_back(entry.path().stem().string());
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

class ShippedModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedModelTest, LoadsValidatesAndNamesItsSource) {
  const std::string path = ShippedDir() + "/" + GetParam() + ".json";
  absl::StatusOr<ModelSpec> model = LoadModelFile(path);
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(ValidateModel(*model, path), IsOk());
  EXPECT_EQ(model->name, GetParam()) << "the `name` of a shipped model is its file stem";
  EXPECT_FALSE(model->source.empty()) << path << " needs a `source`";
  EXPECT_NE(model->source, "inline");
  EXPECT_GT(model->TotalParameters(), 1e8);
  EXPECT_LE(model->ActiveParameters(), model->TotalParameters());
  if (!model->moe.has_value()) {
    EXPECT_DOUBLE_EQ(model->ActiveParameters(), model->TotalParameters());
  }
}

TEST_P(ShippedModelTest, ResolvesByName) {
  absl::StatusOr<ModelSpec> model = ResolveModel(GetParam());
  ASSERT_THAT(model, IsOk());
  EXPECT_EQ(model->name, GetParam());
}

std::string ParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Library, ShippedModelTest, ::testing::ValuesIn(ShippedModelFiles()),
                         ParamName);

TEST(ModelLibraryTest, ListsTheShippedModels) {
  const std::vector<std::string> names = ListLibraryModels();
  EXPECT_EQ(names, ShippedModelFiles());
  for (const char* required :
       {"llama2-7b", "llama2-13b", "llama2-70b", "llama3.1-8b", "llama3.1-70b", "llama3.1-405b",
        "llama3.3-70b", "qwen2.5-7b", "qwen2.5-72b", "mixtral-8x7b", "mixtral-8x22b",
        "deepseek-v2-lite", "deepseek-v3", "gpt3-175b", "mpt-7b", "megatron-gpt-1t"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), required), names.end()) << required;
  }
}

// ---------------------------------------------------------------------------------------------
// ../shared/calibration/public.jsonl (beside the clone in CI; skipped when absent).

struct CalibrationModel {
  std::string origin;  // "public.jsonl:<line>"
  ModelSpec model;
};

std::string CalibrationFile() { return std::string(PROJECTOR_CALIBRATION_DIR) + "/public.jsonl"; }

TEST(CalibrationModelTest, EveryCaseModelLoads) {
  std::ifstream in(CalibrationFile());
  if (!in) GTEST_SKIP() << CalibrationFile() << " not found";
  std::string line;
  int line_no = 0;
  int loaded = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string origin = absl::StrCat("public.jsonl:", line_no);
    absl::StatusOr<nlohmann::json> value = ParseJsonText(line, origin);
    ASSERT_THAT(value, IsOk());
    ASSERT_TRUE(value->contains("model")) << origin;
    absl::StatusOr<ModelSpec> model = ParseModelJson((*value)["model"], origin, "/model");
    ASSERT_THAT(model, IsOk()) << origin;
    EXPECT_THAT(ValidateModel(*model, origin), IsOk());
    EXPECT_EQ(model->source, "inline");
    ++loaded;
  }
  EXPECT_GT(loaded, 0);
}

// The shape fields the calibration schema states.
// The dense FFN size of a model whose every layer is an expert layer is never used (Qwen3 MoE
// configs carry one, the case files give the expert size there): it is not part of the shape.
bool DenseFfnUsed(const ModelSpec& m) { return !m.moe || m.moe->num_dense_layers > 0; }

bool SameShape(const ModelSpec& a, const ModelSpec& b) {
  const bool same_dense_ffn = a.ffn_hidden_size == b.ffn_hidden_size ||
                              (!DenseFfnUsed(a) && !DenseFfnUsed(b));
  return a.num_layers == b.num_layers && a.hidden_size == b.hidden_size && same_dense_ffn &&
         a.num_attention_heads == b.num_attention_heads &&
         a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
         a.vocab_size == b.vocab_size && a.mlp == b.mlp && a.moe.has_value() == b.moe.has_value() &&
         a.mla.has_value() == b.mla.has_value();
}

TEST(CalibrationModelTest, EveryCaseShapeHasALibraryModel) {
  std::ifstream in(CalibrationFile());
  if (!in) GTEST_SKIP() << CalibrationFile() << " not found";
  std::vector<ModelSpec> library;
  for (const std::string& name : ListLibraryModels()) {
    absl::StatusOr<ModelSpec> model = ResolveModel(name);
    ASSERT_THAT(model, IsOk());
    library.push_back(*model);
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string origin = absl::StrCat("public.jsonl:", line_no);
    absl::StatusOr<nlohmann::json> value = ParseJsonText(line, origin);
    if (!value.ok() || !value->contains("model")) continue;
    absl::StatusOr<ModelSpec> model = ParseModelJson((*value)["model"], origin, "/model");
    ASSERT_THAT(model, IsOk());
    // NVIDIA's dgxc-benchmarking runs Llama 3.1 405B cut to 8 and 62 layers on 32 and 128 GPUs;
    // those are the 126-layer library model with fewer layers.
    ModelSpec shape = *model;
    if (shape.num_layers < 126 && shape.hidden_size == 16384 && shape.vocab_size == 128256) {
      shape.num_layers = 126;
    }
    const bool found = std::any_of(library.begin(), library.end(), [&](const ModelSpec& lib) {
      return SameShape(lib, shape) && lib.tied_embeddings == shape.tied_embeddings &&
             lib.norm == shape.norm;
    });
    EXPECT_TRUE(found) << origin << ": no library model with the shape of '" << model->name << "'";
  }
}

}  // namespace
}  // namespace projector
