#include "serving/dp_attention.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "serving/engine.h"
#include "serving/kv_cache.h"
#include "serving/pass_events.h"
#include "serving/serve.h"
#include "tests/testing/serving_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// DeepSeek-V2-Lite (27 layers: 1 dense, 26 MoE of 64 experts top-6, MLA) on 4 H100, fp8
// weights, experts spread whole over the 4 GPUs.
Deployment Group(int64_t dp_attention) {
  Deployment d = testing::LibraryDeployment("deepseek-v2-lite", "h100-sxm", 4, 1);
  d.weight_dtype = DType::kFp8;
  d.expert_parallel = true;
  d.dp_attention = dp_attention;
  return d;
}

std::unique_ptr<PassCostModel> Model(const Deployment& d) {
  absl::StatusOr<std::unique_ptr<PassCostModel>> m = PassCostModel::Make(d);
  EXPECT_THAT(m, IsOk());
  return *std::move(m);
}

BatchPass Prefill(int64_t tokens) {
  BatchPass p;
  p.prefills.push_back({.new_tokens = tokens, .context = 0});
  p.emitting = 1;
  return p;
}

// One rank's side of the pass priced from the TP1 attention rank's own model, the MoE from the
// TP4 group's: with L_d dense and L_m MoE layers,
//   T = L_d·(dense linear + kernels) + L_m·(attention projections + kernels
//       + group experts(T_all) + group all-reduce(T_all)) + embedding and head,
// the attention rank at TP1 having no all-reduce of its own.
double ExpectedOneRankBusy(const BatchPass& pass, int64_t all_tokens) {
  const Deployment d = Group(4);
  std::unique_ptr<PassCostModel> rank = Model(d.AttentionRank());
  Deployment whole = d;
  whole.dp_attention = 1;
  std::unique_ptr<PassCostModel> group = Model(whole);
  const int64_t tokens = pass.NewTokens();
  double kernels =
      rank->DecodeAttention(pass.decode_sequences, pass.decode_kv_tokens)->value();
  for (const PrefillChunk& chunk : pass.prefills) {
    kernels += rank->PrefillAttention(chunk)->value();
  }
  const PassCostModel::LayerParts dense = *rank->Parts(tokens, false);
  const PassCostModel::LayerParts moe = *rank->Parts(tokens, true);
  const PassCostModel::LayerParts experts = *group->Parts(all_tokens, true);
  EXPECT_EQ(dense.all_reduce.value(), 0.0);
  const double dense_layers = 1, moe_layers = 26;
  return dense_layers * (dense.Linear().value() + kernels) +
         moe_layers * (moe.attention_linear.value() + kernels + experts.mlp_linear.value() +
                       experts.all_reduce.value()) +
         rank->Ends(pass, 0)->Total().value();
}

TEST(DpAttentionTest, AnIdleRankWaitsAndTheExpertsSeeEveryRanksTokens) {
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(Group(4));
  ASSERT_THAT(cost, IsOk());
  std::vector<BatchPass> passes(4);
  passes[0] = Prefill(1024);
  absl::StatusOr<Seconds> one = (*cost)->PassTime(passes);
  ASSERT_THAT(one, IsOk());
  EXPECT_NEAR(one->value(), ExpectedOneRankBusy(passes[0], 1024), 1e-12);
  // A second, lighter rank adds its tokens to the experts' work only: the busy rank still
  // sets every layer's attention side.
  passes[2] = Prefill(256);
  absl::StatusOr<Seconds> two = (*cost)->PassTime(passes);
  ASSERT_THAT(two, IsOk());
  EXPECT_NEAR(two->value(), ExpectedOneRankBusy(passes[0], 1280), 1e-12);
  // Which rank is busy does not matter.
  std::swap(passes[0], passes[3]);
  EXPECT_NEAR((*cost)->PassTime(passes)->value(), two->value(), 1e-12);
  passes.assign(4, BatchPass{});
  EXPECT_THAT((*cost)->PassTime(passes), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one new token")));
}

// Each rank holds the whole attention (weights at TP1) but a quarter of the experts, and caches
// the MLA latent of its own requests only: four ranks hold more tokens than the TP4 group, which
// caches every request's latent on every GPU.
TEST(DpAttentionTest, EachRankCachesItsOwnRequests) {
  const KvCacheConfig config;
  absl::StatusOr<KvCacheSizing> rank = SizeKvCache(Group(4).AttentionRank(), config, 8192, 256);
  absl::StatusOr<KvCacheSizing> tp = SizeKvCache(Group(1), config, 8192, 256);
  ASSERT_THAT(rank, IsOk());
  ASSERT_THAT(tp, IsOk());
  EXPECT_GT(rank->weights.value(), tp->weights.value());
  EXPECT_GT(4 * rank->Tokens(), tp->Tokens());
}

// DeepEP's low-latency buffers (DeepEP csrc/config.hpp LowLatencyLayout). DeepSeek-V3 at
// SGLang's default 128 tokens a rank: dispatch messages 16 + max(2·7168, 7168 + 56·4) = 14,352
// bytes, combine 14,336; send max(128·14,352, 256·128·14,336) = 469,762,048; receive
// max(256·128·14,352, 256·128·14,336) = 470,286,336; signalling 256·4; twice each:
// 1,880,098,816 bytes. DeepSeek-V2-Lite at 256 tokens (the engine's max-num-seqs): messages
// 16 + 4,096 and 4,096 bytes over 64·256 slots: 2·(67,108,864 + 67,371,008 + 256) =
// 268,960,256. The cache gives them up under auto (decode-only passes run the kernels), keeps
// them under normal.
TEST(DpAttentionTest, DeepEpLowLatencyBuffersComeOutOfTheCache) {
  EXPECT_DOUBLE_EQ(DeepEpLowLatencyBufferBytes(7168, 256, 128).value(), 1880098816.0);
  EXPECT_DOUBLE_EQ(DeepEpLowLatencyBufferBytes(2048, 64, 256).value(), 268960256.0);
  Deployment rank = Group(4).AttentionRank();
  rank.deepep = true;
  const KvCacheConfig config;
  absl::StatusOr<KvCacheSizing> low_latency = SizeKvCache(rank, config, 8192, 256);
  rank.deepep_mode = DeepEpMode::kNormal;
  absl::StatusOr<KvCacheSizing> normal = SizeKvCache(rank, config, 8192, 256);
  ASSERT_THAT(low_latency, IsOk());
  ASSERT_THAT(normal, IsOk());
  EXPECT_DOUBLE_EQ(low_latency->deepep_buffers.value(), 268960256.0);
  EXPECT_EQ(low_latency->deepep_buffer_tokens, 256);
  EXPECT_EQ(normal->deepep_buffers.value(), 0.0);
  const double freed_blocks = 268960256.0 / normal->per_block.value();
  EXPECT_NEAR(static_cast<double>(normal->blocks - low_latency->blocks), freed_blocks, 1.0);
  EXPECT_THAT(DescribeKvCache(*low_latency),
              HasSubstr("0.3 GiB DeepEP low-latency buffers (256 tokens a rank)"));
  // Low-latency kernels for every pass need room for a whole prefill pass a rank.
  rank.deepep_mode = DeepEpMode::kLowLatency;
  absl::StatusOr<KvCacheSizing> always = SizeKvCache(rank, config, 8192, 256);
  ASSERT_THAT(always, IsOk());
  EXPECT_EQ(always->deepep_buffer_tokens, 8192);
}

// SGLang's auto mode: the normal kernels when some rank prefills, the low-latency ones when every
// rank only decodes. 64 decoding requests a rank on 4 H100 (one node): each MoE layer sends the
// busiest rank's 64·6 copies of 2,048 elements, 3/4 of them to the node's other GPUs at
// 450·0.8 GB/s, in fp8 with a scale per 128 (1.03125 bytes an element: 811,008 bytes) and back
// in bf16 (1,572,864 bytes), each with one NVLink latency (0.45 us) and a launch (2.8 us):
// 2,383,872·0.75 / 360e9 + 6.5 us = 11.466 us a layer, 26 MoE layers. The normal kernels send
// fewer bytes (a copy once per destination rank) but pay 2.5 us per peer: 24.3 us a layer.
TEST(DpAttentionTest, DecodeOnlyPassesRunDeepEpLowLatencyKernels) {
  Deployment d = Group(4);
  d.deepep = true;
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(d);
  ASSERT_THAT(cost, IsOk());
  BatchPass decode;
  decode.decode_sequences = 64;
  decode.decode_kv_tokens = 64 * 1000;
  decode.emitting = 64;
  std::vector<BatchPass> passes(4, decode);
  EXPECT_EQ((*cost)->DeepEpKernels(passes), DeepEpMode::kLowLatency);
  const double per_layer = 2383872.0 * 0.75 / 360e9 + 2 * (0.45 + 2.8) * 1e-6;
  const double low_latency = (*cost)->Breakdown(passes)->tp_comm.value();
  EXPECT_NEAR(low_latency, 26 * per_layer, 1e-12);
  std::vector<BatchPass> mixed = passes;
  mixed[3] = Prefill(64);
  EXPECT_EQ((*cost)->DeepEpKernels(mixed), DeepEpMode::kNormal);
  d.deepep_mode = DeepEpMode::kNormal;
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> normal = DpAttentionCost::Make(d);
  ASSERT_THAT(normal, IsOk());
  EXPECT_EQ((*normal)->DeepEpKernels(passes), DeepEpMode::kNormal);
  // A copy once per destination rank: 4·(1 − C(48,6)/C(64,6)) of the 6 copies, plus 3 peers.
  const double ranks_reached = 4 * (1 - 8835488640.0 / 53981544960.0);
  const double normal_layer =
      2383872.0 * ranks_reached / 6 * 0.75 / 360e9 + 2 * (0.45 + 2.8 + 3 * 2.5) * 1e-6;
  EXPECT_NEAR((*normal)->Breakdown(passes)->tp_comm.value(), 26 * normal_layer, 1e-12);
  d.deepep_mode = DeepEpMode::kLowLatency;
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> always = DpAttentionCost::Make(d);
  ASSERT_THAT(always, IsOk());
  EXPECT_EQ((*always)->DeepEpKernels(mixed), DeepEpMode::kLowLatency);
  // The high level of detail prices the same kernels.
  EventDpPassTimer events(**cost);
  EXPECT_NEAR(events.PassTime(passes)->value(), (*cost)->PassTime(passes)->value(),
              1e-9 * (*cost)->PassTime(passes)->value());
}

// Two-batch overlap's split: 3 decoding sequences (300 cached tokens) and a 10-token prompt
// chunk (13 tokens): the first half takes ceil(13/2) = 7, the 3 decodes and 4 prompt tokens;
// the second the prompt's other 6 tokens with those 4 as context. A one-token pass leaves the
// second half empty.
TEST(DpAttentionTest, TwoBatchOverlapSplitsAPassInHalves) {
  BatchPass pass;
  pass.decode_sequences = 3;
  pass.decode_kv_tokens = 300;
  pass.prefills.push_back({.new_tokens = 10, .context = 0});
  const auto [first, second] = SplitPass(pass);
  EXPECT_EQ(first.decode_sequences, 3);
  EXPECT_EQ(first.decode_kv_tokens, 300);
  ASSERT_EQ(first.prefills.size(), 1u);
  EXPECT_EQ(first.prefills[0].new_tokens, 4);
  EXPECT_EQ(first.prefills[0].context, 0);
  EXPECT_EQ(second.decode_sequences, 0);
  ASSERT_EQ(second.prefills.size(), 1u);
  EXPECT_EQ(second.prefills[0].new_tokens, 6);
  EXPECT_EQ(second.prefills[0].context, 4);
  BatchPass decode;
  decode.decode_sequences = 5;
  decode.decode_kv_tokens = 1000;
  const auto [a, b] = SplitPass(decode);
  EXPECT_EQ(a.decode_sequences, 3);
  EXPECT_EQ(a.decode_kv_tokens, 600);
  EXPECT_EQ(b.decode_sequences, 2);
  EXPECT_EQ(b.decode_kv_tokens, 400);
  BatchPass one;
  one.decode_sequences = 1;
  one.decode_kv_tokens = 10;
  EXPECT_EQ(SplitPass(one).second.NewTokens(), 0);
}

// With two-batch overlap each MoE layer takes the bound of a two-resource pipeline of the two
// halves: max(a1 + m1 + a2 + m2, d1 + c1 + d2 + c2, max_h(a_h + d_h + m_h + c_h)), with a_h the
// busiest rank's attention side of half h, m_h the experts over every rank's half, d_h and c_h
// DeepEP's dispatch and combine of the busiest half; the dense layer runs both halves in turn,
// the head the whole pass. Four ranks prefilling 512 tokens each (halves of 256).
TEST(DpAttentionTest, TwoBatchOverlapTakesTheBoundOfATwoMicroBatchPipeline) {
  Deployment d = Group(4);
  d.deepep = true;
  d.two_batch_overlap = true;
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(d);
  ASSERT_THAT(cost, IsOk());
  const std::vector<BatchPass> passes(4, Prefill(512));
  BatchPass half1, half2;
  half1.prefills.push_back({.new_tokens = 256, .context = 0});
  half2.prefills.push_back({.new_tokens = 256, .context = 256});
  double compute = 0, communication = 0, chain = 0, dense = 0;
  for (const BatchPass& half : {half1, half2}) {
    const DpAttentionCost::RankSide side = *(*cost)->Side(half);
    const double a = side.moe.Total().value();
    const double m = (*cost)->Experts(4 * 256)->mlp_linear.value();
    const DpAttentionCost::AllToAllTimes t = *(*cost)->DeepEpTimes(256, DeepEpMode::kNormal);
    const double sent = (t.dispatch + t.combine).value();
    compute += a + m;
    communication += sent;
    chain = std::max(chain, a + m + sent);
    dense += side.dense.Total().value();
  }
  const double layer = std::max({compute, communication, chain});
  const double head = (*cost)->Side(passes[0])->head.Total().value();
  EXPECT_NEAR((*cost)->PassTime(passes)->value(), dense + 26 * layer + head, 1e-12);
  EXPECT_NEAR((*cost)->Breakdown(passes)->tp_comm.value(),
              26 * std::max(0.0, std::max(communication, chain) - compute), 1e-12);
  // As events the halves' work runs in SGLang's order on each GPU's stream: never under that
  // bound, never over both halves' compute and communication one after the other.
  EventDpPassTimer events(**cost);
  absl::StatusOr<Seconds> replayed = events.PassTime(passes);
  ASSERT_THAT(replayed, IsOk());
  const double medium = (*cost)->PassTime(passes)->value();
  EXPECT_GE(replayed->value(), medium * (1 - 1e-12));
  EXPECT_LE(replayed->value(), dense + 26 * (compute + communication) + head + 1e-12);
  // Without DeepEP there is nothing to overlap: refused.
  d.deepep = false;
  EXPECT_THAT(DpAttentionCost::Make(d),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("add --deepep")));
}

// Two requests at t = 0 go to ranks 0 and 1 and prefill in one lock-step pass: both first tokens
// come when that pass ends. A third request alone later finds the other ranks idle.
TEST(DpAttentionTest, RanksRunEachPassInLockStep) {
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(Group(4));
  ASSERT_THAT(cost, IsOk());
  const std::vector<Request> requests = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 1},
      {.id = 1, .arrival_s = 0, .prompt_tokens = 200, .output_tokens = 1},
      {.id = 2, .arrival_s = 10, .prompt_tokens = 200, .output_tokens = 1}};
  EngineConfig config;
  absl::StatusOr<std::vector<ReplicaRun>> runs = RunDpAttention(**cost, config, requests);
  ASSERT_THAT(runs, IsOk());
  ASSERT_EQ(runs->size(), 4u);
  std::vector<BatchPass> passes(4);
  passes[0] = Prefill(1000);
  passes[1] = Prefill(200);
  const double joint = (*cost)->PassTime(passes)->value();
  passes[0].Clear();
  passes[1].Clear();
  passes[2] = Prefill(200);
  const double alone = (*cost)->PassTime(passes)->value();
  ASSERT_EQ((*runs)[0].requests.size(), 1u);
  ASSERT_EQ((*runs)[1].requests.size(), 1u);
  ASSERT_EQ((*runs)[2].requests.size(), 1u);
  EXPECT_TRUE((*runs)[3].requests.empty());
  EXPECT_NEAR((*runs)[0].requests[0].first_token_s, joint, 1e-12);
  EXPECT_NEAR((*runs)[1].requests[0].first_token_s, joint, 1e-12);
  EXPECT_NEAR((*runs)[2].requests[0].first_token_s, 10 + alone, 1e-12);
  EXPECT_LT(alone, joint);
}

// A client limit of one request in flight spans the ranks: the second request (rank 1) is sent
// when the first (rank 0) has finished, and prefills alone.
TEST(DpAttentionTest, TheClientsConcurrencyLimitSpansTheRanks) {
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(Group(2));
  ASSERT_THAT(cost, IsOk());
  const std::vector<Request> requests = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 1},
      {.id = 1, .arrival_s = 0, .prompt_tokens = 200, .output_tokens = 1}};
  EngineConfig config;
  config.concurrency = 1;
  absl::StatusOr<std::vector<ReplicaRun>> runs = RunDpAttention(**cost, config, requests);
  ASSERT_THAT(runs, IsOk());
  std::vector<BatchPass> passes(2);
  passes[0] = Prefill(1000);
  const double first = (*cost)->PassTime(passes)->value();
  passes[0].Clear();
  passes[1] = Prefill(200);
  const double second = (*cost)->PassTime(passes)->value();
  EXPECT_NEAR((*runs)[0].requests[0].finish_s, first, 1e-12);
  EXPECT_NEAR((*runs)[1].requests[0].arrival_s, first, 1e-12);
  EXPECT_NEAR((*runs)[1].requests[0].finish_s, first + second, 1e-12);
}

// With DeepEP the MoE's communication follows the busiest rank's tokens (what it sends and
// receives back); gathering follows every rank's. A lighter second rank adds to the gathered
// traffic, not to DeepEP's.
TEST(DpAttentionTest, DeepEpCommunicationFollowsTheBusiestRank) {
  Deployment with = Group(4);
  with.deepep = true;
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> deepep = DpAttentionCost::Make(with);
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> gather = DpAttentionCost::Make(Group(4));
  ASSERT_THAT(deepep, IsOk());
  ASSERT_THAT(gather, IsOk());
  std::vector<BatchPass> one(4), two(4);
  one[0] = Prefill(2048);
  two[0] = Prefill(2048);
  two[1] = Prefill(512);
  const double deepep_one = (*deepep)->Breakdown(one)->tp_comm.value();
  const double deepep_two = (*deepep)->Breakdown(two)->tp_comm.value();
  const double gather_one = (*gather)->Breakdown(one)->tp_comm.value();
  const double gather_two = (*gather)->Breakdown(two)->tp_comm.value();
  EXPECT_NEAR(deepep_two, deepep_one, 1e-15);
  EXPECT_GT(gather_two, gather_one);
  Deployment no_ep = Group(4);
  no_ep.expert_parallel = false;
  no_ep.deepep = true;
  EXPECT_THAT(DpAttentionCost::Make(no_ep),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--expert-parallel")));
}

// The high level of detail replays the pass as events: with every rank doing the same work the
// ranks never wait for each other and the makespan is the medium level's sum; with one rank
// busier the others' ring steps go ahead while it computes and dense layers do not wait, so
// the pass is at most the medium level's; a GPU twice as slow lengthens it.
TEST(DpAttentionTest, EventsAgreeWithTheMediumLevelWhenRanksAreBalanced) {
  for (const bool deepep : {false, true}) {
    Deployment d = Group(4);
    d.deepep = deepep;
    absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(d);
    ASSERT_THAT(cost, IsOk());
    EventDpPassTimer events(**cost);
    std::vector<BatchPass> balanced(4, Prefill(512));
    const double medium = (*cost)->PassTime(balanced)->value();
    absl::StatusOr<Seconds> high = events.PassTime(balanced);
    ASSERT_THAT(high, IsOk());
    EXPECT_NEAR(high->value(), medium, 1e-9 * medium) << "deepep " << deepep;
    std::vector<BatchPass> skewed(4, Prefill(128));
    skewed[2] = Prefill(2048);
    EXPECT_LE(events.PassTime(skewed)->value(), (*cost)->PassTime(skewed)->value() * (1 + 1e-12));
    EventDpPassTimer slow(**cost, SlowGpu{.gpu = 1, .factor = 2.0});
    EXPECT_GT(slow.PassTime(balanced)->value(), medium * 1.5);
    EXPECT_GT(events.events(), 0);
  }
}

// A request bound to a rank (Request::dp_rank) is served there, whatever the round robin says.
TEST(DpAttentionTest, ABoundRequestRunsOnItsRank) {
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(Group(4));
  ASSERT_THAT(cost, IsOk());
  const std::vector<Request> requests = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 100, .output_tokens = 3, .dp_rank = 2},
      {.id = 1, .arrival_s = 0, .prompt_tokens = 100, .output_tokens = 3, .dp_rank = 2},
      {.id = 2, .arrival_s = 0, .prompt_tokens = 100, .output_tokens = 3}};
  absl::StatusOr<std::vector<ReplicaRun>> runs = RunDpAttention(**cost, EngineConfig{}, requests);
  ASSERT_THAT(runs, IsOk());
  EXPECT_EQ((*runs)[2].requests.size(), 3u);  // the third request's round-robin rank is 2 too
  EXPECT_TRUE((*runs)[0].requests.empty());
}

TEST(DpAttentionTest, BadLayoutsAreInvalidArguments) {
  Deployment dense = testing::LibraryDeployment("llama3.1-8b", "h100-sxm", 4, 1);
  dense.dp_attention = 4;
  EXPECT_THAT(DpAttentionCost::Make(dense),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--replicas")));
  EXPECT_THAT(DpAttentionCost::Make(Group(3)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("do not divide tp=4")));
  Deployment staged = Group(2);
  staged.pp = 2;
  EXPECT_THAT(DpAttentionCost::Make(staged),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without pipeline stages")));
  absl::StatusOr<std::unique_ptr<DpAttentionCost>> cost = DpAttentionCost::Make(Group(2));
  ASSERT_THAT(cost, IsOk());
  EngineConfig config;
  config.batching = BatchingMode::kStatic;
  const std::vector<Request> one = {{.id = 0, .arrival_s = 0, .prompt_tokens = 10, .output_tokens = 2}};
  EXPECT_THAT(RunDpAttention(**cost, config, one),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batching")));
  config.batching = BatchingMode::kContinuous;
  config.lod = LevelOfDetail::kHigh;
  config.slow_gpu = SlowGpu{.gpu = 4, .factor = 2.0};
  EXPECT_THAT(RunDpAttention(**cost, config, one),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slow-gpu: GPU 4")));
}

// Through Serve: every request completes, and the GPUs counted are the group's.
TEST(DpAttentionTest, ServeRunsEveryRankAndCountsTheGroupsGpus) {
  ServeOptions options;
  options.deployment = Group(4);
  ASSERT_THAT(ResolveServingKernels(options.deployment), IsOk());
  std::vector<Request> requests;
  for (int64_t i = 0; i < 64; ++i) {
    requests.push_back({.id = i,
                        .arrival_s = 0.05 * static_cast<double>(i),
                        .prompt_tokens = 512,
                        .output_tokens = 64});
  }
  absl::StatusOr<ServeResult> r = Serve(options, requests);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->metrics.completed, 64);
  EXPECT_EQ(r->gpus, 4);
  EXPECT_EQ(r->anatomy.size(), 2u);
}

}  // namespace
}  // namespace projector
