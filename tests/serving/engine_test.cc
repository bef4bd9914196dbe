#include "serving/engine.h"

#include <cmath>
#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "profilers/inference_profiler.h"
#include "serving/serve.h"
#include "tests/testing/serving_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

Deployment Llama8bOnH100(int64_t tp = 1, int64_t pp = 1) {
  return testing::LibraryDeployment("llama3.1-8b", "h100-sxm", tp, pp);
}

std::unique_ptr<PassCostModel> Cost(const Deployment& d) {
  absl::StatusOr<std::unique_ptr<PassCostModel>> cost = PassCostModel::Make(d);
  EXPECT_THAT(cost, IsOk());
  return *std::move(cost);
}

double PassSeconds(PassCostModel& cost, const BatchPass& pass) {
  std::vector<Seconds> stages(static_cast<size_t>(cost.deployment().pp));
  EXPECT_THAT(cost.StageTimes(pass, stages), IsOk());
  double t = 0;
  for (Seconds s : stages) t += s.value();
  return t;
}

BatchPass Prefill(int64_t tokens) {
  BatchPass p;
  p.prefills.push_back({.new_tokens = tokens, .context = 0});
  p.emitting = 1;
  return p;
}

BatchPass Decode(int64_t kv_tokens) {
  BatchPass p;
  p.decode_sequences = 1;
  p.decode_kv_tokens = kv_tokens;
  p.emitting = 1;
  return p;
}

// A request whose prompt starts with `prefix` tokens of prefix group `group`.
Request Prefixed(int64_t id, double arrival_s, int64_t prompt, int64_t output, int64_t group,
                 int64_t prefix) {
  return {.id = id,
          .arrival_s = arrival_s,
          .prompt_tokens = prompt,
          .output_tokens = output,
          .prefix_group = group,
          .prefix_tokens = prefix};
}

// One request alone: its first token comes after one prefill pass of its prompt, and each
// further token after one decode pass over its cache (prompt + tokens so far):
// TTFT = T_prefill(P), E2E = TTFT + sum_{k=1}^{O-1} T_decode(P + k).
TEST(EngineTest, SingleRequestIsOnePrefillThenDecodes) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  const std::vector<Request> one = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 50}};
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, EngineConfig{}, one);
  ASSERT_THAT(run, IsOk());
  const RequestRecord& r = run->requests[0];
  const double ttft = PassSeconds(*cost, Prefill(1000));
  double decode = 0;
  for (int64_t k = 1; k < 50; ++k) decode += PassSeconds(*cost, Decode(1000 + k));
  EXPECT_NEAR(r.first_token_s, ttft, 1e-12);
  EXPECT_NEAR(r.finish_s, ttft + decode, 1e-9);
  EXPECT_EQ(run->passes.size(), 50u);
}

// Kernels of one decode pass: each layer's token-linear ops and its two decode-attention
// kernels, the embedding and the output head.
double DecodeLaunches(const Deployment& d) {
  const InferenceContext ctx = d.Context();
  double launches = 0;
  auto count = [&launches](const OpList& ops, double times) {
    for (const Op& op : ops) {
      launches += times * static_cast<double>(op.kind == OpKind::kMemory ? op.memory.launches : 1);
    }
  };
  count(*InferenceLayerOps(ctx, 1, false), 32);
  launches += 2 * 32;
  count(*InferenceEmbeddingOps(ctx, 1), 1);
  count(*InferenceOutputOps(ctx, 1), 1);
  return launches;
}

// By hand: a decode step of one request reads every weight once, 2 bytes x 8.03e9 parameters
// = 16.06 GB, at the sustained HBM bandwidth (3.35 TB/s x the profile's streaming efficiency),
// and pays the launch overhead of its ~450 kernels (2.8 us each on the profile); the tiny
// activations and the partial waves of the small GEMMs stay within 10% of that. A 2048-token
// prefill does
// 2 x 6.98e9 (layer parameters) x 2048 = 28.6 TFLOP of GEMMs at no more than the bf16 peak
// (989 TFLOP/s), so it takes at least 28.9 ms, and the GEMMs' efficiency and attention keep it
// under twice that.
TEST(EngineTest, SingleRequestLatencyByHand) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  const double weights = 2.0 * d.model.TotalParameters();
  const double bandwidth = d.hw.gpu.hbm_bandwidth.value() * d.hw.gpu.hbm_efficiency;
  const double tpot = PassSeconds(*cost, Decode(2049));
  const double launch = d.hw.gpu.kernel_launch_overhead.value() * DecodeLaunches(d);
  EXPECT_GT(tpot, weights / bandwidth + launch);
  EXPECT_LT(tpot, 1.1 * (weights / bandwidth + launch));
  const double layer_params = 32.0 * (4096.0 * 6144 + 4096.0 * 4096 + 3.0 * 4096 * 14336);
  const double flops = 2.0 * layer_params * 2048;
  const double peak = d.hw.gpu.MatrixPeak(DType::kBf16, d.hw.gpu.sustained_clock).value();
  const double ttft = PassSeconds(*cost, Prefill(2048));
  EXPECT_GT(ttft, flops / peak);
  EXPECT_LT(ttft, 2.0 * flops / peak);
}

// KV capacity by hand, Llama-3.1-8B bf16 on one H100 (79.65 GiB): 90% of HBM less the weights
// (2 bytes x the 8.03e9 parameters but the final norm's 4096), the profiling pass's
// activations (2 bytes x 8192 tokens x (2 x 4096 + 3 x 14336) plus 256 sampled rows x 128,256
// logits x (2 + 4) bytes) and 2 GiB of runtime, in blocks of 16 tokens x 32 layers x 2,048 K
// and V elements x 2 bytes = 2 MiB.
TEST(KvCacheSizingTest, BlocksByHand) {
  const Deployment d = Llama8bOnH100();
  absl::StatusOr<KvCacheSizing> kv = SizeKvCache(d, KvCacheConfig{}, 8192, 256);
  ASSERT_THAT(kv, IsOk());
  const double weights = 2.0 * (d.model.TotalParameters() - 4096);
  const double activations = 2.0 * 8192 * (2 * 4096 + 3 * 14336) + 256.0 * 128256 * 6;
  const double free = 0.9 * d.hw.gpu.hbm_capacity.value() - weights - activations - 2 * kGib;
  const double block = 16.0 * 32 * 2048 * 2;
  EXPECT_NEAR(kv->weights.value(), weights, 1.0);
  EXPECT_NEAR(kv->activations.value(), activations, 1.0);
  EXPECT_EQ(kv->blocks, static_cast<int64_t>(std::floor(free / block)));
  // fp8 KV holds twice the blocks (give or take the floor).
  Deployment fp8 = d;
  fp8.kv_dtype = DType::kFp8;
  absl::StatusOr<KvCacheSizing> kv8 = SizeKvCache(fp8, KvCacheConfig{}, 8192, 256);
  ASSERT_THAT(kv8, IsOk());
  EXPECT_NEAR(static_cast<double>(kv8->blocks), 2.0 * static_cast<double>(kv->blocks), 1.0);
}

// Llama-3.1-70B in bf16 (131 GiB) cannot sit on one 80 GB H100; the message says by how much
// and that TP2 would fit (65.7 GiB of weights per GPU, with 1.7 GiB of activations and 2 GiB of
// runtime, under the 71.7 GiB budget).
TEST(KvCacheSizingTest, ModelThatDoesNotFitNamesTheLayoutThatWould) {
  Deployment d = Llama8bOnH100();
  d.model = *ResolveModel("llama3.1-70b");
  EXPECT_THAT(SizeKvCache(d, KvCacheConfig{}, 8192, 256),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("does not fit"), HasSubstr("GiB short"),
                                        HasSubstr("--tp 2 would fit"))));
}

// M/D/1 at low load: one request per pass (max_num_seqs 1), one output token each, so every
// request is served by one prefill pass of deterministic length S; with Poisson arrivals at
// utilisation rho = lambda S the mean wait is rho S / (2 (1 - rho)) (Pollaczek-Khinchine), so
// the mean TTFT is S (1 + rho / (2 (1 - rho))): 1.5 S at rho = 0.5 (within 4% over 20,000
// requests).
TEST(EngineTest, MD1QueueAtHalfLoad) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  const double s = PassSeconds(*cost, Prefill(512));
  WorkloadSpec w;
  w.arrival = ArrivalKind::kPoisson;
  w.qps = 0.5 / s;
  w.num_requests = 20000;
  w.input = {.distribution = LengthDistribution::kFixed, .mean = 512};
  w.output = {.distribution = LengthDistribution::kFixed, .mean = 1};
  w.seed = 3;
  const std::vector<Request> requests = GenerateRequests(w);
  EngineConfig config;
  config.max_num_seqs = 1;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  double sum = 0;
  for (const RequestRecord& r : run->requests) sum += r.first_token_s - r.arrival_s;
  EXPECT_NEAR(sum / 20000.0, 1.5 * s, 0.04 * 1.5 * s);
}

// A cache too small for the requests in flight: the scheduler preempts (recompute) and still
// finishes every request, never holding more blocks than exist.
TEST(EngineTest, PreemptsWhenTheCacheIsFullAndFinishesEverything) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  EngineConfig config;
  config.kv.memory_utilization = 0.25;  // about 1.8 GiB of cache: ~14,000 tokens
  std::vector<Request> requests;
  for (int64_t i = 0; i < 64; ++i) {
    requests.push_back({.id = i, .arrival_s = 0, .prompt_tokens = 512, .output_tokens = 512});
  }
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  EXPECT_LT(run->kv.Tokens(), 64 * 1024);
  EXPECT_GT(run->preemptions, 0);
  for (const PassSample& p : run->passes) EXPECT_LE(p.kv_blocks_used, run->kv.blocks);
  for (const RequestRecord& r : run->requests) {
    EXPECT_GE(r.first_token_s, r.arrival_s);
    EXPECT_GT(r.finish_s, r.first_token_s);
  }
}

// Prefix caching, by hand. Two requests of one prefix group, one after the other (concurrency
// 1): a prompt of 3,000 tokens whose first 1,000 are the group's (62 full blocks of 16 = 992
// tokens cached; the last 8 prefix tokens share a block with the request's own). The first
// computes everything: TTFT = T_prefill(3,000). The second finds 992 tokens cached and
// prefills the other 2,008 over them: TTFT = T(2,008 new tokens at context 992), and every
// decode step is the same as the first's. Hit rate 992 / 6,000 tokens looked up. Without
// prefix caching both take T_prefill(3,000); a request of another group hits nothing.
TEST(EngineTest, PrefixCachingPrefillsOnlyWhatIsNotCached) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 3; ++i) {
    requests.push_back(Prefixed(i, 0, 3000, 4, i < 2 ? 7 : 8, 1000));
  }
  EngineConfig config;
  config.concurrency = 1;
  config.prefix_caching = true;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  const double full = PassSeconds(*cost, Prefill(3000));
  BatchPass rest;
  rest.prefills.push_back({.new_tokens = 3000 - 992, .context = 992});
  rest.emitting = 1;
  const double cached = PassSeconds(*cost, rest);
  ASSERT_LT(cached, full);
  const RequestRecord& first = run->requests[0];
  const RequestRecord& second = run->requests[1];
  const RequestRecord& other = run->requests[2];
  EXPECT_NEAR(first.first_token_s - first.arrival_s, full, 1e-12);
  EXPECT_NEAR(second.first_token_s - second.arrival_s, cached, 1e-12);
  EXPECT_NEAR(other.first_token_s - other.arrival_s, full, 1e-12);
  EXPECT_NEAR(second.finish_s - second.first_token_s, first.finish_s - first.first_token_s, 1e-12);
  EXPECT_EQ(first.cached_tokens, 0);
  EXPECT_EQ(second.cached_tokens, 992);
  EXPECT_EQ(other.cached_tokens, 0);
  EXPECT_EQ(run->prefix_cache.query_tokens, 3 * 3000);
  EXPECT_EQ(run->prefix_cache.hit_tokens, 992);
  EXPECT_EQ(run->prefix_cache.evictions, 0);

  config.prefix_caching = false;
  absl::StatusOr<ReplicaRun> plain = RunReplica(*cost, config, requests);
  ASSERT_THAT(plain, IsOk());
  EXPECT_NEAR(plain->requests[1].first_token_s - plain->requests[1].arrival_s, full, 1e-12);
  EXPECT_EQ(plain->prefix_cache.query_tokens, 0);
}

// A block is cached as soon as it is computed (vLLM caches every full block): a request admitted
// while another of its group is still prefilling the shared prefix reuses the blocks done so
// far. Two 3,500-token prompts, all of one group's prefix, both at t = 0, a budget of 1,024
// tokens a pass: the first prefills 1,024, 1,024, 1,024 and 428 tokens; the second is admitted
// in that fourth pass with the budget left (596), when the first has computed 3,072 tokens =
// 192 full blocks of 16, so it finds 3,072 tokens cached (none if blocks were cached only once
// the first had computed its whole prefix).
TEST(EngineTest, PrefixBlocksAreSharedAsSoonAsTheyAreComputed) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 2; ++i) requests.push_back(Prefixed(i, 0, 3500, 2, 5, 3500));
  EngineConfig config;
  config.prefix_caching = true;
  config.max_batched_tokens = 1024;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->requests[0].cached_tokens, 0);
  EXPECT_EQ(run->requests[1].cached_tokens, 3072);
  EXPECT_EQ(run->prefix_cache.hit_tokens, 3072);
  EXPECT_EQ(run->prefix_cache.query_tokens, 2 * 3500);
}

// A prompt that is all prefix still computes its last block: of a 1,024-token prompt that is
// all the group's (64 full blocks), 63 blocks are reused and the last 16 tokens prefilled, so
// the pass that emits the first token has work to do (vLLM's rule).
TEST(EngineTest, PrefixCachingLeavesTheLastTokenToCompute) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 2; ++i) {
    requests.push_back(Prefixed(i, 0, 1024, 2, 0, 1024));
  }
  EngineConfig config;
  config.concurrency = 1;
  config.prefix_caching = true;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  EXPECT_EQ(run->requests[1].cached_tokens, 63 * 16);
  BatchPass last_block;
  last_block.prefills.push_back({.new_tokens = 16, .context = 63 * 16});
  last_block.emitting = 1;
  EXPECT_NEAR(run->requests[1].first_token_s - run->requests[1].arrival_s,
              PassSeconds(*cost, last_block), 1e-12);
}

// A cache too small to keep every group's prefix: unread prefixes are evicted, least recently
// used first, instead of preempting running requests, and every request still finishes. Eight
// groups of 4,096-token prefixes (256 blocks each) in a cache of roughly 14,000 tokens hold at
// most three at once.
TEST(EngineTest, PrefixCachingEvictsUnreadPrefixesWhenTheCacheIsFull) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 32; ++i) {
    requests.push_back(Prefixed(i, 0.05 * static_cast<double>(i), 4096 + 256, 16, i % 8, 4096));
  }
  EngineConfig config;
  config.kv.memory_utilization = 0.25;
  config.prefix_caching = true;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  EXPECT_LT(run->kv.Tokens(), 8 * 4096);
  EXPECT_GT(run->prefix_cache.evictions, 0);
  for (const PassSample& p : run->passes) EXPECT_LE(p.kv_blocks_used, run->kv.blocks);
  for (const RequestRecord& r : run->requests) EXPECT_GT(r.finish_s, r.first_token_s);
  EXPECT_LE(run->prefix_cache.hit_tokens, run->prefix_cache.query_tokens);
}

// A closed-loop client of one: requests run one after another, each as if alone.
TEST(EngineTest, ConcurrencyOneServesOneAtATime) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 3; ++i) {
    requests.push_back({.id = i, .arrival_s = 0, .prompt_tokens = 256, .output_tokens = 8});
  }
  EngineConfig config;
  config.concurrency = 1;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  const double e2e = run->requests[0].finish_s;
  EXPECT_NEAR(run->requests[1].arrival_s, e2e, 1e-12);
  EXPECT_NEAR(run->requests[2].finish_s, 3 * e2e, 1e-9);
  EXPECT_NEAR(run->requests[2].first_token_s - run->requests[2].arrival_s,
              run->requests[0].first_token_s, 1e-12);
}

// A static batch prefills its prompts together and decodes to its longest output: every
// request gets its first token at the same time, a shorter one finishes earlier but the batch
// holds its slot, and the next batch starts after the last token of this one.
TEST(EngineTest, StaticBatchesRunToTheLongestOutput) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  std::vector<Request> requests;
  for (int64_t i = 0; i < 4; ++i) {
    requests.push_back(
        {.id = i, .arrival_s = 0, .prompt_tokens = 128, .output_tokens = i == 0 ? 4 : 8});
  }
  EngineConfig config;
  config.batching = BatchingMode::kStatic;
  config.max_num_seqs = 2;
  absl::StatusOr<ReplicaRun> run = RunReplica(*cost, config, requests);
  ASSERT_THAT(run, IsOk());
  const std::vector<RequestRecord>& r = run->requests;
  EXPECT_EQ(r[0].first_token_s, r[1].first_token_s);
  EXPECT_LT(r[0].finish_s, r[1].finish_s);
  EXPECT_GT(r[2].first_token_s, r[1].finish_s);
  EXPECT_EQ(run->passes.size(), 16u);  // two batches of 8 passes (1 prefill + 7 decodes)
  // The first pass is the joint prefill: 2 x 128 new tokens.
  EXPECT_EQ(run->passes[0].batch_tokens, 256);
}

// Two pipeline stages: a lone request's first token takes both stages' time in turn; under
// load two batches are in flight at once, so the replica (twice the GPUs) serves well over
// 1.5 times the tokens per second of one stage.
TEST(EngineTest, PipelineStagesOverlapBatches) {
  const std::vector<Request> one = {
      {.id = 0, .arrival_s = 0, .prompt_tokens = 512, .output_tokens = 2}};
  std::unique_ptr<PassCostModel> pp2 = Cost(Llama8bOnH100(1, 2));
  absl::StatusOr<ReplicaRun> lone = RunReplica(*pp2, EngineConfig{}, one);
  ASSERT_THAT(lone, IsOk());
  EXPECT_NEAR(lone->requests[0].first_token_s, PassSeconds(*pp2, Prefill(512)), 1e-12);

  std::vector<Request> many;
  for (int64_t i = 0; i < 512; ++i) {
    many.push_back({.id = i, .arrival_s = 0, .prompt_tokens = 128, .output_tokens = 128});
  }
  EngineConfig config;
  config.max_num_seqs = 64;
  std::unique_ptr<PassCostModel> pp1 = Cost(Llama8bOnH100(1, 1));
  ServeOptions o1{.deployment = Llama8bOnH100(1, 1), .engine = config, .replicas = 1};
  ServeOptions o2{.deployment = Llama8bOnH100(1, 2), .engine = config, .replicas = 1};
  absl::StatusOr<ServeResult> r1 = Serve(o1, many);
  absl::StatusOr<ServeResult> r2 = Serve(o2, many);
  ASSERT_THAT(r1, IsOk());
  ASSERT_THAT(r2, IsOk());
  EXPECT_GT(r2->metrics.output_tokens_per_s, 1.5 * r1->metrics.output_tokens_per_s);
}

TEST(EngineTest, SameWorkloadSameResult) {
  WorkloadSpec w;
  w.qps = 20;
  w.num_requests = 300;
  w.input = {.distribution = LengthDistribution::kLognormal, .mean = 400, .spread = 1};
  w.output = {.distribution = LengthDistribution::kLognormal, .mean = 100, .spread = 1};
  w.seed = 11;
  const ServeOptions o{.deployment = Llama8bOnH100(), .engine = {}, .replicas = 2};
  absl::StatusOr<ServeResult> a = Serve(o, GenerateRequests(w));
  absl::StatusOr<ServeResult> b = Serve(o, GenerateRequests(w));
  ASSERT_THAT(a, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(a->metrics.ttft_ms.p99, b->metrics.ttft_ms.p99);
  EXPECT_EQ(a->metrics.e2e_ms.mean, b->metrics.e2e_ms.mean);
  EXPECT_EQ(a->metrics.completed, 300);
  EXPECT_EQ(a->gpus, 2);
}

TEST(EngineTest, BadInputIsRefused) {
  const Deployment d = Llama8bOnH100();
  std::unique_ptr<PassCostModel> cost = Cost(d);
  const std::vector<Request> huge = {
      {.id = 7, .arrival_s = 0, .prompt_tokens = 5000000, .output_tokens = 10}};
  EXPECT_THAT(RunReplica(*cost, EngineConfig{}, huge),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("request 7 needs")));
  EngineConfig bad;
  bad.max_num_seqs = 0;
  EXPECT_THAT(RunReplica(*cost, bad, huge),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max-num-seqs")));
  EngineConfig no_chunk;
  no_chunk.chunked_prefill = false;
  no_chunk.max_batched_tokens = 256;
  const std::vector<Request> long_prompt = {
      {.id = 3, .arrival_s = 0, .prompt_tokens = 1000, .output_tokens = 10}};
  EXPECT_THAT(RunReplica(*cost, no_chunk, long_prompt),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("max-batched-tokens")));
  Deployment odd = d;
  odd.tp = 3;
  EXPECT_THAT(PassCostModel::Make(odd),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not divide")));
  EXPECT_THAT(Serve(ServeOptions{.deployment = d, .engine = {}, .replicas = 0}, huge),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replicas")));
}

TEST(SummarizeTest, PercentilesInterpolateLikeNumpy) {
  std::vector<double> v = {4, 1, 3, 2, 5};
  const LatencyStats s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.p50, 3.0);
  EXPECT_DOUBLE_EQ(s.p90, 4.6);   // rank 3.6 between 4 and 5
  EXPECT_DOUBLE_EQ(s.p99, 4.96);  // rank 3.96
  std::vector<double> empty;
  EXPECT_EQ(Summarize(empty).count, 0);
}

// vLLM's get_pp_indices: 32 layers over 3 stages give 11, 11, 10 (the remainder before the
// last stage), 80 over 3 give 27, 27, 26.
TEST(SplitStagesTest, RemainderGoesBeforeTheLastStage) {
  ModelSpec m = *ResolveModel("llama3.1-8b");
  std::vector<StageLayers> s = SplitStages(m, 3);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].count, 11);
  EXPECT_EQ(s[1].count, 11);
  EXPECT_EQ(s[2].count, 10);
  EXPECT_EQ(s[2].first, 22);
  m.num_layers = 80;
  s = SplitStages(m, 3);
  EXPECT_EQ(s[0].count + s[1].count + s[2].count, 80);
  EXPECT_EQ(s[2].count, 26);
}

}  // namespace
}  // namespace projector
