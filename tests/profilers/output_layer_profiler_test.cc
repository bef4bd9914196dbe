#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "tests/testing/models_and_op_queries.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::D;
using ::projector::testing::FindOp;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;
using Case = ::projector::testing::ProfilerCase;

// Output projection T × h × V/t forward, dgrad (T, h, V/t), wgrad (h, V/t, T), bf16 even
// under FP8; cross-entropy over T·V/t fp32 logits.
TEST(ProfileOutputLayerTest, VocabParallelProjectionAndLoss) {
  Case c(testing::Llama31_8B());
  c.parallel.tp = 8;
  c.parallel.sequence_parallel = true;
  c.training.seq_len = 4096;
  c.training.precision = DType::kFp8;
  absl::StatusOr<ModuleProfile> p = ProfileOutputLayer(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const int64_t v_l = 129024 / 8;
  EXPECT_EQ(FindOp(p->ops, "output_proj", OpPhase::kForward)->gemm,
            (GemmShape{.m = 4096, .n = v_l, .k = 4096}));
  EXPECT_EQ(FindOp(p->ops, "output_proj", OpPhase::kBackwardDgrad)->gemm,
            (GemmShape{.m = 4096, .n = 4096, .k = v_l, .transpose_b = true}));
  EXPECT_EQ(FindOp(p->ops, "output_proj", OpPhase::kBackwardWgrad)->gemm,
            (GemmShape{.m = 4096, .n = v_l, .k = 4096, .transpose_a = true}));
  const Op* ce = FindOp(p->ops, "cross_entropy", OpPhase::kForward);
  ASSERT_NE(ce, nullptr);
  EXPECT_EQ(ce->kind, OpKind::kMemory);
  EXPECT_THAT(ce->bytes.value(), IsNearRel(14.0 * 4096 * v_l, 1e-12));
  EXPECT_NE(FindOp(p->ops, "cross_entropy", OpPhase::kBackwardDgrad), nullptr);
  EXPECT_NE(FindOp(p->ops, "final_norm", OpPhase::kForward), nullptr);
  // Final norm over the SP shard, output weight V/t·h.
  EXPECT_THAT(p->dense_parameters, IsNearRel(4096 + D(v_l) * 4096, 1e-12));
  // Stored: norm input and projection input (SP-sharded bf16) + fp32 softmax.
  EXPECT_THAT(p->activation_bytes.value(),
              IsNearRel(2 * 2.0 * 512 * 4096 + 4.0 * 4096 * v_l, 1e-12));
}

// The loss kernel per layout and request, with the bytes per logit derived in
// CrossEntropyBytesPerLogit: megatron 14 + 6, 4 kept, 6 at the peak (bf16 logits + the fp32
// softmax made in place); pytorch 22 + 26 (eager under autocast: fp32 copy 6, log-softmax 3 reads
// + 1 write of fp32 16; backward zero-fill 4, log-softmax backward 16, cast to bf16 6), 4 kept,
// 14 at the peak (logits 2 + kept output, NLL gradient and new gradient 3 x 4); fused 2 + 4, 2
// kept, 4 at the peak. auto: fused for an FSDP-only layout, else megatron. The transient is
// peak - kept. T = 4096 tokens, V = 128256 (a multiple of 128: no padding at TP 1).
TEST(ProfileOutputLayerTest, LossKernelBytesPerLogit) {
  struct Want {
    bool fsdp;
    LossKernel request;
    double fwd, bwd, kept, peak;
  };
  for (const Want& w :
       {Want{false, LossKernel::kAuto, 14, 6, 4, 6}, Want{true, LossKernel::kAuto, 2, 4, 2, 4},
        Want{true, LossKernel::kMegatron, 14, 6, 4, 6},
        Want{false, LossKernel::kPyTorch, 22, 26, 4, 14},
        Want{true, LossKernel::kFused, 2, 4, 2, 4}}) {
    Case c(testing::Llama31_8B());
    c.parallel.fsdp = w.fsdp;
    c.training.seq_len = 4096;
    c.training.loss_kernel = w.request;
    absl::StatusOr<ModuleProfile> p = ProfileOutputLayer(c.Ctx());
    ASSERT_THAT(p, IsOk());
    const double logits = 4096.0 * 128256;
    SCOPED_TRACE(std::string(LossKernelName(w.request)) + (w.fsdp ? " fsdp" : ""));
    EXPECT_THAT(FindOp(p->ops, "cross_entropy", OpPhase::kForward)->bytes.value(),
                IsNearRel(w.fwd * logits, 1e-12));
    EXPECT_THAT(FindOp(p->ops, "cross_entropy", OpPhase::kBackwardDgrad)->bytes.value(),
                IsNearRel(w.bwd * logits, 1e-12));
    // Stored: the norm input and the projection input (bf16) + what the loss keeps. On the
    // FSDP-only layout (auto: llm-foundry, eager) the RMSNorm keeps its fp32 copy and its
    // normalised output instead of its input: 4 + 2 + 2 bytes per element.
    const double norm_kept = w.fsdp ? 4 + 2 + 2 : 2 * 2.0;
    EXPECT_THAT(p->activation_bytes.value(),
                IsNearRel(norm_kept * 4096 * 4096 + w.kept * logits, 1e-12));
    EXPECT_THAT(p->transient_bytes.value(), IsNearRel((w.peak - w.kept) * logits, 1e-12));
  }
}

// Train-metric passes: each is the eager loss's forward without grad, 6 (fp32 copy) + 16
// (log-softmax: 3 fp32 reads + 1 write) = 22 bytes per logit, in one "train_metrics" op after the
// backward; the logits, their fp32 copy and the log-softmax output, 2 + 4 + 4 = 10 bytes per
// logit, are alive at its peak. auto: 2 (Composer's LanguageCrossEntropy and LanguagePerplexity)
// for an FSDP-only layout, none otherwise; an explicit count applies to any layout and is not
// re-run by full recompute. T = 4096, V = 128256.
TEST(ProfileOutputLayerTest, TrainMetricPassesAfterTheBackward) {
  struct Want {
    bool fsdp;
    int64_t request;
    int64_t passes;
  };
  const double logits = 4096.0 * 128256;
  for (const Want& w :
       {Want{true, kAutoTrainMetricPasses, 2}, Want{false, kAutoTrainMetricPasses, 0},
        Want{true, 0, 0}, Want{false, 3, 3}}) {
    Case c(testing::Llama31_8B());
    c.parallel.fsdp = w.fsdp;
    c.training.seq_len = 4096;
    c.training.recompute = Recompute::kFull;
    c.training.train_metric_passes = w.request;
    absl::StatusOr<ModuleProfile> p = ProfileOutputLayer(c.Ctx());
    ASSERT_THAT(p, IsOk());
    SCOPED_TRACE(::testing::Message() << "fsdp " << w.fsdp << " request " << w.request);
    const Op* metrics = FindOp(p->ops, "train_metrics", OpPhase::kBackwardDgrad);
    int64_t metric_ops = 0;
    for (const Op& op : p->ops) metric_ops += op.name == "train_metrics";
    if (w.passes == 0) {
      EXPECT_EQ(metrics, nullptr);
      EXPECT_EQ(p->after_backward_bytes.value(), 0.0);
      continue;
    }
    ASSERT_NE(metrics, nullptr);
    EXPECT_EQ(metric_ops, 1);  // not in the recompute pass
    EXPECT_EQ(metrics->kind, OpKind::kMemory);
    EXPECT_THAT(metrics->bytes.value(), IsNearRel(22.0 * D(w.passes) * logits, 1e-12));
    EXPECT_THAT(p->after_backward_bytes.value(), IsNearRel(10.0 * logits, 1e-12));
  }
}

// Tied embeddings share the embedding's weight when both sit on one stage (pp == 1); with
// pp > 1 the last stage holds its own copy.
TEST(ProfileOutputLayerTest, TiedEmbeddingsCountedOnceOnOneStage) {
  Case c(testing::GptMha());
  c.model.tied_embeddings = true;
  absl::StatusOr<ModuleProfile> same_stage = ProfileOutputLayer(c.Ctx());
  c.parallel.pp = 4;
  absl::StatusOr<ModuleProfile> last_stage = ProfileOutputLayer(c.Ctx());
  ASSERT_THAT(same_stage, IsOk());
  ASSERT_THAT(last_stage, IsOk());
  EXPECT_THAT(same_stage->dense_parameters, IsNearRel(2 * 2048, 1e-12));  // LayerNorm only
  EXPECT_THAT(last_stage->dense_parameters, IsNearRel(2 * 2048 + 51200.0 * 2048, 1e-12));
  // The GEMMs run either way.
  EXPECT_NE(FindOp(same_stage->ops, "output_proj", OpPhase::kBackwardWgrad), nullptr);
}

// BERT-Large's masked-LM head (output_positions_fraction 0.15625): micro-batch 64 x seq 128 =
// 8,192 positions, of which ceil(8192 · 0.15625) = 1,280 get logits (20 per sequence, as
// max_predictions_per_seq); the loss runs over those 1,280 rows of the (padded) vocabulary, while
// the final norm still covers every position.
TEST(ProfileOutputLayerTest, MaskedLmHeadComputesLogitsForItsPositionsOnly) {
  absl::StatusOr<ModelSpec> bert = ResolveModel("bert-large");
  ASSERT_THAT(bert, IsOk());
  EXPECT_DOUBLE_EQ(bert->output_positions_fraction, 0.15625);
  EXPECT_FALSE(bert->causal_attention);
  Case c(*bert);
  c.training.seq_len = 128;
  c.training.micro_batch = 64;
  c.training.precision = DType::kFp16;
  absl::StatusOr<ModuleProfile> p = ProfileOutputLayer(c.Ctx());
  ASSERT_THAT(p, IsOk());
  const Op* proj = FindOp(p->ops, "output_proj", OpPhase::kForward);
  ASSERT_NE(proj, nullptr);
  EXPECT_EQ(proj->gemm.m, 1280);
  EXPECT_EQ(proj->gemm.k, 1024);
  const double v = static_cast<double>(proj->gemm.n);  // the padded vocabulary
  EXPECT_GE(v, 30522);
  EXPECT_THAT(FindOp(p->ops, "cross_entropy", OpPhase::kForward)->bytes.value(),
              IsNearRel(14.0 * 1280 * v, 1e-12));
  // LayerNorm over all 8,192 positions: read x, write y and 7 FLOPs per element.
  EXPECT_THAT(FindOp(p->ops, "final_norm", OpPhase::kForward)->flops.value(),
              IsNearRel(7.0 * 8192 * 1024, 1e-12));
  EXPECT_EQ(bert->OutputRows(8192), 1280);
  EXPECT_EQ(bert->OutputRows(1), 1);
}

TEST(ProfileOutputLayerTest, ZeroVocabIsInvalid) {
  Case c(testing::Llama31_8B());
  c.model.vocab_size = -1;
  EXPECT_THAT(ProfileOutputLayer(c.Ctx()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab_size")));
}

}  // namespace
}  // namespace projector
