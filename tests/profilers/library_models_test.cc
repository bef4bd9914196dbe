// Every shipped model profiles without error at TP1, and its per-GPU parameters summed over
// the layers, embedding and output equal ModelSpec::TotalParameters (an independent count in
// models/) plus the one difference the profilers make on purpose: Megatron pads the vocabulary
// to a multiple of 128 (embedding and, when untied, output rows).
#include <cctype>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::D;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;

double LayerParameters(const LayerProfile& layer) {
  double p = 0;
  for (const ModuleProfile& m : layer.modules) p += m.dense_parameters + m.expert_parameters;
  return p;
}

class LibraryModelTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LibraryModelTest, ProfilesAndMatchesTotalParameters) {
  absl::StatusOr<ModelSpec> model = ResolveModel(GetParam());
  ASSERT_THAT(model, IsOk());
  testing::ProfilerCase c(*model);
  c.training.seq_len = 4096;
  c.training.micro_batch = 1;
  const ProfileContext ctx = c.Ctx(Recompute::kFull);
  double total = 0;
  const int64_t moe_layers = model->NumMoeLayers();
  const int64_t dense_layers = model->num_layers - moe_layers;
  for (bool is_moe : {false, true}) {
    const int64_t count = is_moe ? moe_layers : dense_layers;
    if (count == 0) continue;
    absl::StatusOr<LayerProfile> layer = ProfileLayer(ctx, is_moe);
    ASSERT_THAT(layer, IsOk());
    total += D(count) * LayerParameters(*layer);
  }
  absl::StatusOr<ModuleProfile> emb = ProfileEmbedding(ctx);
  absl::StatusOr<ModuleProfile> out = ProfileOutputLayer(ctx);
  ASSERT_THAT(emb, IsOk());
  ASSERT_THAT(out, IsOk());
  total += emb->dense_parameters + out->dense_parameters;
  const double padding = D(PaddedVocabSize(*model, 1) - model->vocab_size) *
                         D(model->hidden_size) * (model->tied_embeddings ? 1.0 : 2.0);
  // Learned absolute positions add a seq_len × hidden table, sized by the run (the model states
  // no maximum position).
  const double positions = model->position_embedding == PositionEmbedding::kLearned
                               ? 4096.0 * D(model->hidden_size)
                               : 0.0;
  EXPECT_THAT(total, IsNearRel(model->TotalParameters() + padding + positions, 1e-9));
}

INSTANTIATE_TEST_SUITE_P(Shipped, LibraryModelTest, ::testing::ValuesIn(ListLibraryModels()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           std::string name;
                           for (char ch : param_info.param) {
                             name += (std::isalnum(static_cast<unsigned char>(ch)) != 0) ? ch : '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace projector
