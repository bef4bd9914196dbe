#include "serving/slo_search.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

ServeOptions Llama8bOnH100() {
  ServeOptions o;
  o.deployment.model = *ResolveModel("llama3.1-8b");
  o.deployment.hw = *ResolveHardwareProfile("h100-sxm");
  return o;
}

WorkloadSpec Workload() {
  WorkloadSpec w;
  w.num_requests = 400;
  w.input = {.distribution = LengthDistribution::kFixed, .mean = 1024};
  w.output = {.distribution = LengthDistribution::kFixed, .mean = 128};
  w.seed = 5;
  return w;
}

// The rate found meets the target, the next probe above it (within 1%) does not, and the rate
// is below the deployment's capacity (every request at once).
TEST(SloSearchTest, BisectsToTheHighestRateMeetingTheTarget) {
  const SloTarget slo{.ttft_ms = 200, .tpot_ms = 15, .percentile = 90};
  absl::StatusOr<SloSearchResult> r = MaxQpsUnderSlo(Llama8bOnH100(), Workload(), slo);
  ASSERT_THAT(r, IsOk());
  ASSERT_TRUE(r->found);
  EXPECT_TRUE(MeetsSlo(r->at_max, slo));
  EXPECT_LT(r->max_qps, r->capacity_qps);
  double lowest_failing = 1e30;
  for (const SloProbe& p : r->probes) {
    if (!p.meets) lowest_failing = std::min(lowest_failing, p.qps);
    if (p.meets) {
      EXPECT_LE(p.qps, r->max_qps);
    }
  }
  EXPECT_LE(lowest_failing / r->max_qps, 1.0101);
}

// On 1, 3 and 7 lanes the bisection runs 1, 2 and 3 levels of its tree at once and keeps the
// path the results take: the same probes in the same order and the same rate as one lane, for a
// target met in between, one met by every rate and one met by none.
TEST(SloSearchTest, SpeculativeBisectionGivesTheSequentialResult) {
  for (const SloTarget& slo : {SloTarget{.ttft_ms = 200, .tpot_ms = 15, .percentile = 90},
                               SloTarget{.ttft_ms = 1e9, .tpot_ms = 1e9, .percentile = 90},
                               SloTarget{.ttft_ms = 1, .tpot_ms = 1, .percentile = 90}}) {
    absl::StatusOr<SloSearchResult> one = MaxQpsUnderSlo(Llama8bOnH100(), Workload(), slo);
    ASSERT_THAT(one, IsOk());
    for (int lanes : {3, 7}) {
      absl::StatusOr<SloSearchResult> many =
          MaxQpsUnderSlo(Llama8bOnH100(), Workload(), slo, {.team = nullptr, .lanes = lanes});
      ASSERT_THAT(many, IsOk());
      EXPECT_EQ(many->found, one->found);
      EXPECT_EQ(many->max_qps, one->max_qps);
      EXPECT_EQ(many->capacity_qps, one->capacity_qps);
      EXPECT_EQ(many->why_not, one->why_not);
      ASSERT_EQ(many->probes.size(), one->probes.size()) << lanes;
      for (size_t i = 0; i < one->probes.size(); ++i) {
        EXPECT_EQ(many->probes[i].qps, one->probes[i].qps) << lanes << " " << i;
        EXPECT_EQ(many->probes[i].meets, one->probes[i].meets) << lanes << " " << i;
        EXPECT_EQ(many->probes[i].ttft_ms, one->probes[i].ttft_ms) << lanes << " " << i;
      }
      EXPECT_EQ(many->at_max.output_tokens_per_s, one->at_max.output_tokens_per_s);
    }
  }
}

// A target no rate can miss is met at 1.25 x capacity; one below a lone request's latency is
// met by no rate, and the reason names the percentile and the target.
TEST(SloSearchTest, LooseAndImpossibleTargets) {
  absl::StatusOr<SloSearchResult> loose =
      MaxQpsUnderSlo(Llama8bOnH100(), Workload(), {.ttft_ms = 1e9, .tpot_ms = 1e9});
  ASSERT_THAT(loose, IsOk());
  EXPECT_TRUE(loose->found);
  EXPECT_DOUBLE_EQ(loose->max_qps, 1.25 * loose->capacity_qps);
  EXPECT_EQ(loose->probes.size(), 1u);
  absl::StatusOr<SloSearchResult> none =
      MaxQpsUnderSlo(Llama8bOnH100(), Workload(), {.ttft_ms = 1, .tpot_ms = 1});
  ASSERT_THAT(none, IsOk());
  EXPECT_FALSE(none->found);
  EXPECT_THAT(none->why_not, HasSubstr("p90 TTFT"));
  EXPECT_THAT(none->why_not, HasSubstr("target 1.0"));
}

TEST(SloSearchTest, BadTargetsAreRefused) {
  EXPECT_THAT(ValidateSloTarget({.ttft_ms = 0, .tpot_ms = 10}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slo-ttft")));
  EXPECT_THAT(ValidateSloTarget({.ttft_ms = 10, .tpot_ms = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slo-tpot")));
  EXPECT_THAT(ValidateSloTarget({.ttft_ms = 10, .tpot_ms = 10, .percentile = 95}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("50, 90 or 99")));
}

// 8 GPUs for Llama-3.1-8B: every power-of-two TP x PP that divides 8 (TP up to the 8 GPUs of a
// node), the rest replicas; ranked by output tokens/s per GPU at the highest rate meeting the
// target, which a layout search must not get worse than the layout it ranks first.
TEST(SloSearchTest, LayoutSearchCoversEveryDivisorAndRanksByTokensPerGpu) {
  WorkloadSpec w = Workload();
  w.num_requests = 200;
  absl::StatusOr<std::vector<ServingLayout>> layouts =
      SearchServingLayouts(Llama8bOnH100(), w, {.ttft_ms = 300, .tpot_ms = 20}, 8);
  ASSERT_THAT(layouts, IsOk());
  EXPECT_EQ(layouts->size(), 10u);  // (tp, pp) with tp*pp | 8: 4 + 3 + 2 + 1
  for (size_t i = 1; i < layouts->size(); ++i) {
    if ((*layouts)[i].result.found) {
      EXPECT_GE((*layouts)[i - 1].output_tokens_per_s_per_gpu,
                (*layouts)[i].output_tokens_per_s_per_gpu);
    }
  }
  const ServingLayout& best = layouts->front();
  ASSERT_TRUE(best.result.found);
  EXPECT_EQ(best.tp * best.pp * best.replicas, 8);
}

// A MoE model's layouts also run attention data-parallel: on 8 GPUs the 10 TP x PP layouts and,
// at PP 1, 2 attention ranks of TP2, 2 and 4 of TP4, 2, 4 and 8 of TP8, each gathering and by
// DeepEP: 22 in all; the rank count always divides the TP.
TEST(SloSearchTest, MoeLayoutsIncludeDataParallelAttention) {
  ServeOptions o;
  o.deployment.model = *ResolveModel("deepseek-v2-lite");
  o.deployment.hw = *ResolveHardwareProfile("h100-sxm");
  o.deployment.expert_parallel = true;
  WorkloadSpec w = Workload();
  w.num_requests = 100;
  absl::StatusOr<std::vector<ServingLayout>> layouts =
      SearchServingLayouts(o, w, {.ttft_ms = 1000, .tpot_ms = 50}, 8);
  ASSERT_THAT(layouts, IsOk());
  EXPECT_EQ(layouts->size(), 22u);
  int with_ranks = 0, with_deepep = 0;
  for (const ServingLayout& l : *layouts) {
    EXPECT_TRUE(l.dp_attention > 1 || !l.deepep);
    if (l.dp_attention == 1) continue;
    ++with_ranks;
    with_deepep += l.deepep;
    EXPECT_EQ(l.pp, 1);
    EXPECT_EQ(l.tp % l.dp_attention, 0);
  }
  EXPECT_EQ(with_ranks, 12);
  EXPECT_EQ(with_deepep, 6);
  // Experts split over the TP ranks cannot be dispatched to: no DeepEP layouts.
  o.deployment.expert_parallel = false;
  layouts = SearchServingLayouts(o, w, {.ttft_ms = 1000, .tpot_ms = 50}, 8);
  ASSERT_THAT(layouts, IsOk());
  EXPECT_EQ(layouts->size(), 16u);
}

// 16 GPUs in TP4 prefill and TP2 decode replicas: 1 + 6, 2 + 4, 3 + 2 (4 + 0 leaves no decode
// pool), each ranked by its tokens per GPU; 10 GPUs cannot hold a TP8 prefill and a TP4 decode
// replica without a remainder.
TEST(SloSearchTest, PoolSplitsUseTheWholeBudget) {
  DisaggregatedOptions pools;
  pools.prefill.deployment = Llama8bOnH100().deployment;
  pools.prefill.deployment.tp = 4;
  pools.decode.deployment = Llama8bOnH100().deployment;
  pools.decode.deployment.tp = 2;
  WorkloadSpec w = Workload();
  w.num_requests = 150;
  absl::StatusOr<std::vector<PoolSplit>> splits =
      SearchPoolSplits(pools, w, {.ttft_ms = 500, .tpot_ms = 20}, 16);
  ASSERT_THAT(splits, IsOk());
  ASSERT_EQ(splits->size(), 3u);
  for (const PoolSplit& p : *splits) {
    EXPECT_EQ(4 * p.prefill_replicas + 2 * p.decode_replicas, 16);
  }
  for (size_t i = 1; i < splits->size(); ++i) {
    if ((*splits)[i].result.found) {
      EXPECT_GE((*splits)[i - 1].output_tokens_per_s_per_gpu,
                (*splits)[i].output_tokens_per_s_per_gpu);
    }
  }
  pools.prefill.deployment.tp = 8;
  pools.decode.deployment.tp = 4;
  EXPECT_THAT(SearchPoolSplits(pools, w, {.ttft_ms = 500, .tpot_ms = 20}, 10),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not split")));
}

}  // namespace
}  // namespace projector
