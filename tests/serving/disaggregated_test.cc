#include "serving/disaggregated.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "serving/dp_attention.h"
#include "tests/testing/serving_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

Deployment Llama70bOnH100(int64_t tp) {
  return testing::LibraryDeployment("llama3.1-70b", "h100-sxm", tp);
}

double PassSeconds(const Deployment& d, const BatchPass& pass) {
  std::unique_ptr<PassCostModel> cost = *PassCostModel::Make(d);
  std::vector<Seconds> stages(1);
  EXPECT_THAT(cost->StageTimes(pass, stages), IsOk());
  return stages[0].value();
}

// Llama-3.1-70B keeps 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 bytes = 327,680 bytes per
// token, whatever the TP that holds it.
TEST(KvTransferTest, BytesAreTheWholeCacheOfThePrompt) {
  EXPECT_DOUBLE_EQ(KvTransferBytes(Llama70bOnH100(4), 2048).value(), 327680.0 * 2048);
  EXPECT_DOUBLE_EQ(KvTransferBytes(Llama70bOnH100(8), 1).value(), 327680.0);
}

// The bytes cross min(prefill TP, decode TP) GPUs' shares of the node's NICs at the profile's
// efficiency, after the scale-out latency.
TEST(KvTransferTest, TimeOverTheSendingGpusNics) {
  const HardwareProfile hw = *ResolveHardwareProfile("h100-sxm");
  const double per_gpu = hw.scale_out.per_nic_bandwidth.value() *
                         static_cast<double>(hw.scale_out.nics_per_node) * hw.scale_out.efficiency /
                         static_cast<double>(hw.gpus_per_node);
  const Bytes bytes(1e9);
  EXPECT_NEAR(KvTransferTime(hw, 4, 8, bytes).value(),
              hw.scale_out.latency.value() + 1e9 / (4 * per_gpu), 1e-12);
  EXPECT_NEAR(KvTransferTime(hw, 8, 2, bytes).value(),
              hw.scale_out.latency.value() + 1e9 / (2 * per_gpu), 1e-12);
}

// One request: its first token after the prefill pool's pass over its prompt; then its cache
// crosses the network, and the decode pool emits the other tokens, one decode pass each over
// a cache of prompt + k tokens: E2E = T_prefill + t_transfer + sum_{k=1}^{O-1} T_decode(P + k).
TEST(DisaggregatedTest, OneRequestByHand) {
  DisaggregatedOptions o;
  o.prefill = {.deployment = Llama70bOnH100(8), .replicas = 1};
  o.decode = {.deployment = Llama70bOnH100(4), .replicas = 1};
  const std::vector<Request> one = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 20}};
  absl::StatusOr<DisaggregatedResult> r = ServeDisaggregated(o, one);
  ASSERT_THAT(r, IsOk());
  BatchPass prefill;
  prefill.prefills.push_back({.new_tokens = 1000, .context = 0});
  prefill.emitting = 1;
  const double ttft = PassSeconds(o.prefill.deployment, prefill);
  const double transfer =
      KvTransferTime(o.prefill.deployment.hw, 8, 4, KvTransferBytes(o.decode.deployment, 1000))
          .value();
  double decode = 0;
  for (int64_t k = 1; k < 20; ++k) {
    BatchPass step;
    step.decode_sequences = 1;
    step.decode_kv_tokens = 1000 + k;
    step.emitting = 1;
    decode += PassSeconds(o.decode.deployment, step);
  }
  EXPECT_NEAR(r->metrics.ttft_ms.mean, 1e3 * ttft, 1e-9);
  EXPECT_NEAR(r->metrics.e2e_ms.mean, 1e3 * (ttft + transfer + decode), 1e-6);
  EXPECT_NEAR(r->transfer_ms.mean, 1e3 * transfer, 1e-9);
  EXPECT_EQ(r->gpus, 12);
}

// DeepSeek-V2-Lite with whole experts on 4 H100: `prefill_replicas` TP4 prefill replicas and one
// decode replica of `ranks` attention ranks.
DisaggregatedOptions LiteWithDecodeRanks(int64_t ranks, int64_t prefill_replicas) {
  DisaggregatedOptions o;
  o.prefill.deployment = testing::LibraryDeployment("deepseek-v2-lite", "h100-sxm", 4);
  o.prefill.deployment.expert_parallel = true;
  o.prefill.replicas = prefill_replicas;
  o.decode.deployment = o.prefill.deployment;
  o.decode.deployment.dp_attention = ranks;
  return o;
}

// A decode pool with data-parallel attention: DeepSeek-V2-Lite, prefill TP4, decode TP4 as 4
// attention ranks of TP1. One request lands on rank 0 after its transfer, which crosses one
// GPU's share of the NICs (a rank's cache lives on its TP1 GPU: min(4, 1) senders); each of its
// 9 decode steps is a lock-step pass with the other ranks idle.
TEST(DisaggregatedTest, DecodePoolWithDataParallelAttention) {
  const DisaggregatedOptions o = LiteWithDecodeRanks(4, 1);
  const Deployment& prefill = o.prefill.deployment;
  const Deployment& decode = o.decode.deployment;
  const std::vector<Request> one = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 10}};
  absl::StatusOr<DisaggregatedResult> r = ServeDisaggregated(o, one);
  ASSERT_THAT(r, IsOk());
  BatchPass first;
  first.prefills.push_back({.new_tokens = 1000, .context = 0});
  first.emitting = 1;
  const double ttft = PassSeconds(prefill, first);
  const double transfer =
      KvTransferTime(prefill.hw, 4, 1, KvTransferBytes(decode, 1000)).value();
  std::unique_ptr<DpAttentionCost> dp = *DpAttentionCost::Make(decode);
  std::vector<BatchPass> passes(4);
  double steps = 0;
  for (int64_t k = 1; k < 10; ++k) {
    passes[0].decode_sequences = 1;
    passes[0].decode_kv_tokens = 1000 + k;
    passes[0].emitting = 1;
    steps += dp->PassTime(passes)->value();
  }
  EXPECT_NEAR(r->metrics.e2e_ms.mean, 1e3 * (ttft + transfer + steps), 1e-6);
  EXPECT_EQ(r->gpus, 8);
}

// Under data-parallel attention each rank receives on its own GPUs' NICs: two requests finishing
// together on two prefill replicas go to ranks 0 and 1 of the one decode replica and both land
// t after (with one rank they would queue: t and 2t, as TransfersQueueOnTheReceivingReplicasNics
// derives), and each is served by the rank it was sent to.
TEST(DisaggregatedTest, EachAttentionRankReceivesOnItsOwnNics) {
  const DisaggregatedOptions o = LiteWithDecodeRanks(2, 2);
  const Deployment& prefill = o.prefill.deployment;
  const Deployment& decode = o.decode.deployment;
  const std::vector<Request> two = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 20},
      {.id = 1, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 20}};
  const double t = KvTransferTime(prefill.hw, 4, 2, KvTransferBytes(decode, 1000)).value();
  absl::StatusOr<DisaggregatedResult> r = ServeDisaggregated(o, two);
  ASSERT_THAT(r, IsOk());
  EXPECT_NEAR(r->transfer_ms.mean, 1e3 * t, 1e-9);
  EXPECT_NEAR(r->transfer_ms.p99, 1e3 * t, 1e-9);
  EXPECT_EQ(r->metrics.completed, 2);
}

// Transfers queue at both ends. Two identical requests at t = 0 on two prefill replicas finish
// together at T; with one decode replica its NICs take one cache at a time: the first lands at
// T + t, the second at T + 2t (mean transfer 1.5t; p99 by linear interpolation between the two,
// t + 0.99·t = 1.99t). With two decode replicas each receives one: both land at T + t.
TEST(DisaggregatedTest, TransfersQueueOnTheReceivingReplicasNics) {
  DisaggregatedOptions o;
  o.prefill = {.deployment = Llama70bOnH100(8), .replicas = 2};
  o.decode = {.deployment = Llama70bOnH100(4), .replicas = 1};
  const std::vector<Request> two = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 20},
      {.id = 1, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 20}};
  const double t =
      KvTransferTime(o.prefill.deployment.hw, 8, 4, KvTransferBytes(o.decode.deployment, 1000))
          .value();
  absl::StatusOr<DisaggregatedResult> one_receiver = ServeDisaggregated(o, two);
  ASSERT_THAT(one_receiver, IsOk());
  EXPECT_NEAR(one_receiver->transfer_ms.mean, 1e3 * 1.5 * t, 1e-9);
  EXPECT_NEAR(one_receiver->transfer_ms.p99, 1e3 * 1.99 * t, 1e-9);
  EXPECT_EQ(one_receiver->metrics.completed, 2);
  o.decode.replicas = 2;
  absl::StatusOr<DisaggregatedResult> two_receivers = ServeDisaggregated(o, two);
  ASSERT_THAT(two_receivers, IsOk());
  EXPECT_NEAR(two_receivers->transfer_ms.mean, 1e3 * t, 1e-9);
  EXPECT_NEAR(two_receivers->transfer_ms.p99, 1e3 * t, 1e-9);
}

// Under load the decode pool's steps are never stalled by a prefill, so TPOT is lower than in
// an aggregated deployment of the same GPUs, and every request completes.
TEST(DisaggregatedTest, DecodeIsNotStalledByPrefills) {
  WorkloadSpec w;
  w.qps = 4;
  w.num_requests = 300;
  w.input = {.distribution = LengthDistribution::kFixed, .mean = 2048};
  w.output = {.distribution = LengthDistribution::kFixed, .mean = 128};
  const std::vector<Request> requests = GenerateRequests(w);
  DisaggregatedOptions o;
  o.prefill = {.deployment = Llama70bOnH100(4), .replicas = 1};
  o.decode = {.deployment = Llama70bOnH100(4), .replicas = 1};
  absl::StatusOr<DisaggregatedResult> split = ServeDisaggregated(o, requests);
  absl::StatusOr<ServeResult> together =
      Serve(ServeOptions{.deployment = Llama70bOnH100(4), .engine = {}, .replicas = 2}, requests);
  ASSERT_THAT(split, IsOk());
  ASSERT_THAT(together, IsOk());
  EXPECT_EQ(split->metrics.completed, 300);
  EXPECT_LT(split->metrics.tpot_ms.p90, together->metrics.tpot_ms.p90);
}

TEST(DisaggregatedTest, BadPoolsAreRefused) {
  DisaggregatedOptions o;
  o.prefill = {.deployment = Llama70bOnH100(4), .replicas = 0};
  o.decode = {.deployment = Llama70bOnH100(4), .replicas = 1};
  const std::vector<Request> one = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 10, .output_tokens = 2}};
  EXPECT_THAT(ServeDisaggregated(o, one),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replica")));
  o.prefill.replicas = 1;
  o.engine.batching = BatchingMode::kStatic;
  EXPECT_THAT(ServeDisaggregated(o, one),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("continuous")));
  o.engine.batching = BatchingMode::kContinuous;
  o.prefill.deployment.tp = 1;  // 70B in bf16 does not fit one H100
  EXPECT_THAT(ServeDisaggregated(o, one),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("prefill pool: ")));
}

}  // namespace
}  // namespace projector
