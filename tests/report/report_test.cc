#include "report/report.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fake_backends.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/toy_scenario.h"

namespace projector {
namespace {

using ::projector::testing::FakeBackends;
using ::projector::testing::IsOk;
using ::projector::testing::ToyScenario;
using ::testing::HasSubstr;
using ::testing::Not;

Projection ProjectToy(Scenario& s) {
  FakeBackends fakes;
  auto p = Project(s, fakes.Refs());
  EXPECT_THAT(p, IsOk());
  return *p;
}

void ExpectNumbers(const nlohmann::json& obj, std::initializer_list<const char*> keys) {
  for (const char* k : keys) {
    ASSERT_TRUE(obj.contains(k)) << k;
    EXPECT_TRUE(obj[k].is_number()) << k;
  }
}

TEST(ProjectionJsonTest, EveryDocumentedFieldIsPresentWithItsType) {
  Scenario s = ToyScenario();
  s.model = projector::testing::ToyMoeModel();
  s.parallel.ep = 2;
  Projection p = ProjectToy(s);
  nlohmann::json j = ProjectionJson(s, p);
  for (const char* k :
       {"scenario", "model", "gpu", "layout", "schedule", "attention_kernel", "mfu_formula"}) {
    ASSERT_TRUE(j.contains(k)) << k;
    EXPECT_TRUE(j[k].is_string()) << k;
  }
  ExpectNumbers(j, {"num_gpus", "micro_batches", "global_batch", "seq_len", "step_time_s",
                    "tokens_per_s_per_gpu", "tokens_per_s", "model_flops_per_step",
                    "tflops_per_gpu", "peak_tflops_per_gpu", "mfu", "clock_scaled_share",
                    "peak_memory_bytes"});
  EXPECT_TRUE(j["fits_in_memory"].is_boolean());
  EXPECT_TRUE(j["defaults_used"].is_array());
  ExpectNumbers(j["breakdown"],
                {"compute_s", "exposed_tp_comm_s", "exposed_cp_comm_s", "exposed_ep_comm_s",
                 "pipeline_bubble_s", "p2p_s", "exposed_dp_comm_s", "exposed_fsdp_comm_s",
                 "fsdp_copies_s", "optimizer_s"});
  ASSERT_TRUE(j["layers"].is_array());
  ASSERT_EQ(j["layers"].size(), 2u);
  EXPECT_EQ(j["layers"][0]["kind"], "dense");
  EXPECT_EQ(j["layers"][1]["kind"], "moe");
  for (const auto& l : j["layers"]) {
    ExpectNumbers(l, {"count", "forward_s", "backward_s", "recompute_s", "total_s",
                      "activation_bytes"});
  }
  ASSERT_TRUE(j["modules"].is_array());
  for (const auto& m : j["modules"]) {
    EXPECT_TRUE(m["layer"].is_string());
    EXPECT_TRUE(m["module"].is_string());
    ExpectNumbers(m, {"forward_s", "backward_s", "recompute_s"});
  }
  const auto& mem = j["memory"];
  ExpectNumbers(mem, {"peak_bytes", "peak_stage", "capacity_bytes"});
  EXPECT_TRUE(mem["fits"].is_boolean());
  ASSERT_TRUE(mem["stages"].is_array());
  ASSERT_FALSE(mem["stages"].empty());
  ExpectNumbers(mem["stages"][0],
                {"stage", "parameters", "weights_bytes", "gradients_bytes",
                 "optimizer_state_bytes", "activations_bytes", "workspace_bytes", "total_bytes",
                 "in_flight_micro_batches"});
  EXPECT_FALSE(j.contains("measured_tokens_per_s_per_gpu"));
  EXPECT_FALSE(j.contains("error_pct"));
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), p.step_time.value());
}

// The trace of a 2-stage pipeline: every pass of every rank once, in order and without
// overlap on its rank, inside the step; the ZB-H1 schedule adds the W passes.
TEST(TimelineTraceTest, EveryPassOfEveryRankOnceWithinTheStep) {
  for (PipelineSchedule schedule : {PipelineSchedule::kOneFOneB, PipelineSchedule::kZeroBubbleH1}) {
    Scenario s = ToyScenario();
    s.parallel.pp = 2;
    s.parallel.dp = 4;
    s.parallel.pipeline_schedule = schedule;
    s.training.global_batch = 16;  // m = 4
    FakeBackends fakes;
    ProjectionOptions options;
    options.keep_timeline = true;
    auto p = Project(s, fakes.Refs(), options);
    ASSERT_THAT(p, IsOk());
    const nlohmann::json trace = TimelineTraceJson(s, *p);
    EXPECT_EQ(trace["displayTimeUnit"], "ms");
    const int passes_per_rank = schedule == PipelineSchedule::kZeroBubbleH1 ? 3 * 4 : 2 * 4;
    std::vector<int> passes(2, 0), tails(2, 0), reduces(2, 0);
    std::vector<double> last_end(4, 0.0);  // per thread: rank r computes on 2r, reduces on 2r+1
    for (const nlohmann::json& e : trace["traceEvents"]) {
      if (e["ph"] == "M") continue;
      ASSERT_EQ(e["ph"], "X");
      const int tid = e["tid"].get<int>();
      ASSERT_TRUE(tid >= 0 && tid < 4) << e.dump();
      const size_t rank = static_cast<size_t>(tid / 2);
      const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
      EXPECT_GE(dur, 0.0);
      EXPECT_GE(ts + 1e-6, last_end[static_cast<size_t>(tid)]) << e.dump();  // no overlap
      last_end[static_cast<size_t>(tid)] = ts + dur;
      const std::string cat = e["cat"];
      EXPECT_EQ(tid % 2 == 1, cat == "dp_reduce") << e.dump();
      if (cat == "dp_reduce") {
        ++reduces[rank];
      } else if (cat == "dp_comm" || cat == "optimizer") {
        ++tails[rank];
      } else {
        ++passes[rank];
        const std::string name = e["name"];
        EXPECT_EQ(name, (cat == "forward"    ? "F"
                         : cat == "backward" ? "B"
                                             : "W") +
                            std::to_string(e["args"]["micro_batch"].get<int>()));
      }
    }
    // Events are appended per rank in replay order only within a rank; they are all there.
    EXPECT_EQ(passes[0], passes_per_rank);
    EXPECT_EQ(passes[1], passes_per_rank);
    EXPECT_GE(tails[0], 1);    // the optimizer at least
    EXPECT_GE(reduces[0], 1);  // DP 4: every rank reduces its gradient buckets
    EXPECT_GE(reduces[1], 1);
    for (double end : last_end) {
      EXPECT_LE(end, ToMicroseconds(p->step_time) * (1 + 1e-9));
    }
  }
}

TEST(TimelineTraceTest, NoTimelineWithoutTheOption) {
  Scenario s = ToyScenario();
  Projection p = ProjectToy(s);
  EXPECT_TRUE(p.timeline.empty());
}

TEST(ProjectionJsonTest, MeasuredTgsAddsMeasurementAndError) {
  Scenario s = ToyScenario();
  s.measured_tokens_per_s_per_gpu = 1000.0;
  Projection p = ProjectToy(s);
  nlohmann::json j = ProjectionJson(s, p);
  EXPECT_DOUBLE_EQ(j["measured_tokens_per_s_per_gpu"].get<double>(), 1000.0);
  EXPECT_TRUE(j["error_pct"].is_number());
}

TEST(ProjectionTextTest, ShowsTheHeadlineNumbersAndTheFitFlag) {
  Scenario s = ToyScenario();
  s.measured_tokens_per_s_per_gpu = 1000.0;
  s.hw.gpu.hbm_capacity = Gigabytes(1);
  Projection p = ProjectToy(s);
  std::string text = ProjectionText(s, p);
  EXPECT_THAT(text, HasSubstr("tokens/s/GPU (TGS)"));
  EXPECT_THAT(text, HasSubstr("TFLOP/s/GPU"));
  EXPECT_THAT(text, HasSubstr("MFU"));
  EXPECT_THAT(text, HasSubstr("pipeline bubble"));
  EXPECT_THAT(text, HasSubstr("dense layer"));
  EXPECT_THAT(text, HasSubstr("measured TGS"));
  EXPECT_THAT(text, HasSubstr("DOES NOT FIT"));
}

TEST(ProjectionTextTest, NamesTheAttentionKernelAndWhyAutoChoseIt) {
  Scenario s = ToyScenario();
  auto h100 = ResolveHardwareProfile("h100-sxm");
  ASSERT_THAT(h100, IsOk());
  s.hw = *h100;
  s.parallel.fsdp = true;
  ASSERT_THAT(ResolveKernels(s, "toy"), IsOk());
  Projection p = ProjectToy(s);
  const std::string text = ProjectionText(s, p);
  EXPECT_THAT(text, HasSubstr("recompute none, llm-foundry stack: fa2 attention, fused loss, 2 "
                              "train-metric passes, eager elementwise, FSDP1\n"));
  EXPECT_THAT(text,
              HasSubstr("  defaults used:\n    - stack=llm-foundry (auto: an FSDP-only layout is "
                        "taken as a PyTorch-native stack, MosaicML's llm-foundry; --stack "
                        "megatron, llm-foundry or torchtitan for another)\n    - "
                        "attention_kernel=fa2 (auto: the llm-foundry stack runs PyTorch SDPA, "
                        "which runs fa2 on h100-sxm)\n    - loss_kernel=fused (auto: the "
                        "llm-foundry stack runs a fused cross-entropy"));
  const nlohmann::json j = ProjectionJson(s, p);
  EXPECT_EQ(j["attention_kernel"], "fa2");
  EXPECT_THAT(j["defaults_used"].get<std::vector<std::string>>(),
              ::testing::Contains(HasSubstr("attention_kernel=fa2 (auto:")));
}

// An explicit loss kernel is not a default: the report names it and lists no loss note; the
// Megatron-style layout (TP 2 with FSDP) resolves auto to megatron.
TEST(ProjectionTextTest, NamesTheLossKernelAndListsOnlyAnAutoChoice) {
  Scenario s = ToyScenario();
  s.parallel.fsdp = true;
  s.training.loss_kernel = LossKernel::kPyTorch;
  ASSERT_THAT(ResolveKernels(s, "toy"), IsOk());
  Projection p = ProjectToy(s);
  std::string text = ProjectionText(s, p);
  EXPECT_THAT(text, HasSubstr("attention, pytorch loss"));
  EXPECT_THAT(text, Not(HasSubstr("loss_kernel=")));
  EXPECT_EQ(ScenarioToJson(s)["training"]["loss_kernel"], "pytorch");

  s.training.loss_kernel = LossKernel::kAuto;
  s.parallel.tp = 2;
  s.parallel.dp /= 2;
  ASSERT_THAT(ResolveKernels(s, "toy"), IsOk());
  EXPECT_THAT(s.defaults_used,
              ::testing::Contains(HasSubstr("loss_kernel=megatron (auto: the megatron stack runs "
                                            "Megatron's")));
  EXPECT_EQ(ScenarioToJson(s)["training"]["loss_kernel"], "megatron");
}

// The train-metric passes that run are named on the training line ("1 train-metric pass", none
// when 0); only an auto count gets a defaults note.
TEST(ProjectionTextTest, NamesTheTrainMetricPassesAndListsOnlyAnAutoChoice) {
  Scenario s = ToyScenario();
  s.training.train_metric_passes = 1;
  ASSERT_THAT(ResolveKernels(s, "toy"), IsOk());
  Projection p = ProjectToy(s);
  std::string text = ProjectionText(s, p);
  EXPECT_THAT(text, HasSubstr("megatron loss, 1 train-metric pass\n"));
  EXPECT_THAT(text, Not(HasSubstr("train_metric_passes=")));

  s.training.train_metric_passes = kAutoTrainMetricPasses;
  ASSERT_THAT(ResolveKernels(s, "toy"), IsOk());
  p = ProjectToy(s);
  text = ProjectionText(s, p);
  EXPECT_THAT(text, HasSubstr("megatron loss\n"));
  EXPECT_THAT(text,
              HasSubstr("train_metric_passes=0 (auto: the megatron stack evaluates no metric"));
}

}  // namespace
}  // namespace projector
