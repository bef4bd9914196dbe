#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::CountPhase;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;
using Case = ::projector::testing::ProfilerCase;

TEST(PaddedVocabSizeTest, MegatronPadsToMultipleOf128TimesTp) {
  ModelSpec m = testing::Llama31_8B();
  EXPECT_EQ(PaddedVocabSize(m, 1), 128256);  // 1002·128
  EXPECT_EQ(PaddedVocabSize(m, 8), 129024);  // 126·1024
  m.vocab_size = 50257;
  EXPECT_EQ(PaddedVocabSize(m, 1), 50304);
}

// Lookup forward (memory op); backward is a weight-gradient scatter-add, no dgrad.
TEST(ProfileEmbeddingTest, LookupAndScatterAddBackward) {
  Case c(testing::Llama31_8B());
  c.parallel.tp = 8;
  c.training.seq_len = 4096;
  absl::StatusOr<ModuleProfile> p = ProfileEmbedding(c.Ctx());
  ASSERT_THAT(p, IsOk());
  EXPECT_EQ(p->module, "embedding");
  const Op* lookup = FindOp(p->ops, "embedding_lookup", OpPhase::kForward);
  ASSERT_NE(lookup, nullptr);
  EXPECT_EQ(lookup->kind, OpKind::kMemory);
  EXPECT_GT(lookup->bytes.value(), 2.0 * 4096 * 4096);  // at least the T×h bf16 output
  EXPECT_NE(FindOp(p->ops, "embedding_lookup", OpPhase::kBackwardWgrad), nullptr);
  EXPECT_EQ(CountPhase(p->ops, OpPhase::kBackwardDgrad), 0);
  EXPECT_THAT(p->dense_parameters, IsNearRel(129024.0 / 8 * 4096, 1e-12));
  EXPECT_EQ(p->tokens, 4096);
}

// Hidden dropout on the embeddings, over the T/t sequence-parallel tokens: forward reads e and
// writes e and the 1-byte mask, backward reads dy and the mask and writes dx, (2e + 1)·T/t·h
// each way; the mask is kept: T/t·h bytes beside the 8-byte token ids.
TEST(ProfileEmbeddingTest, HiddenDropoutOverSequenceParallelTokens) {
  Case c(testing::GptMha());
  c.parallel.tp = 4;
  c.parallel.sequence_parallel = true;
  c.training.seq_len = 2048;
  c.training.micro_batch = 2;
  c.training.hidden_dropout = 0.1;
  absl::StatusOr<ModuleProfile> p = ProfileEmbedding(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const double tokens = 4096, elements = tokens / 4 * 2048;
  for (OpPhase phase : {OpPhase::kForward, OpPhase::kBackwardDgrad}) {
    const Op* dropout = FindOp(p->ops, "embedding_dropout", phase);
    ASSERT_NE(dropout, nullptr);
    EXPECT_THAT(dropout->bytes.value(), IsNearRel(5 * elements, 1e-12));
  }
  EXPECT_THAT(p->activation_bytes.value(), IsNearRel(8 * tokens + elements, 1e-12));
  c.training.hidden_dropout = 0;
  absl::StatusOr<ModuleProfile> none = ProfileEmbedding(c.Ctx());
  ASSERT_THAT(none, IsOk());
  EXPECT_EQ(FindOp(none->ops, "embedding_dropout", OpPhase::kForward), nullptr);
  EXPECT_THAT(none->activation_bytes.value(), IsNearRel(8 * tokens, 1e-12));
}

// Learned absolute positions (gpt3-1.3b): a seq_len × h table, a parameter on every TP rank,
// looked up and added to the token embeddings: forward e·(2·T·h + s·h); backward the table's
// gradient, dY summed over the micro-batch, zero-filled table written and accumulated into the
// fp32 main_grad: e·T·h + (2e + 8)·s·h. T = 2·1024 tokens, s = 1024, h = 2048, e = 2.
TEST(ProfileEmbeddingTest, LearnedPositionsAddATableAndItsGradient) {
  absl::StatusOr<ModelSpec> gpt = ResolveModel("gpt3-1.3b");
  ASSERT_THAT(gpt, IsOk());
  Case c(*gpt);
  c.training.seq_len = 1024;
  c.training.micro_batch = 2;
  c.training.hidden_dropout = 0;
  absl::StatusOr<ModuleProfile> p = ProfileEmbedding(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const double T = 2048, s = 1024, h = 2048;
  const Op* add = FindOp(p->ops, "position_embedding", OpPhase::kForward);
  const Op* grad = FindOp(p->ops, "position_embedding", OpPhase::kBackwardWgrad);
  ASSERT_NE(add, nullptr);
  ASSERT_NE(grad, nullptr);
  EXPECT_THAT(add->bytes.value(), IsNearRel(2 * (2 * T * h + s * h), 1e-12));
  EXPECT_THAT(grad->bytes.value(), IsNearRel(2 * T * h + 12 * s * h, 1e-12));
  EXPECT_THAT(p->dense_parameters,
              IsNearRel(testing::D(PaddedVocabSize(*gpt, 1)) * h + s * h, 1e-12));
  // RoPE models have no table.
  Case llama(testing::Llama31_8B());
  absl::StatusOr<ModuleProfile> rope = ProfileEmbedding(llama.Ctx());
  ASSERT_THAT(rope, IsOk());
  EXPECT_EQ(FindOp(rope->ops, "position_embedding", OpPhase::kForward), nullptr);
}

TEST(ProfileEmbeddingTest, ZeroVocabIsInvalid) {
  Case c(testing::Llama31_8B());
  c.model.vocab_size = 0;
  EXPECT_THAT(ProfileEmbedding(c.Ctx()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab_size")));
}

}  // namespace
}  // namespace projector
