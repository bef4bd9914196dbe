#include "studies/search.h"

#include <atomic>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projection/projection.h"
#include "report/search_report.h"
#include "scenario/scenario_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

int64_t Removed(const SearchResult& r, SearchConstraint c) {
  return r.removed[static_cast<size_t>(c)];
}

int64_t Removed(const std::array<int64_t, kNumSearchConstraints>& removed, SearchConstraint c) {
  return removed[static_cast<size_t>(c)];
}

// A two-layer GQA model (4 heads, 2 kv heads) on 8 GPUs of one 8-GPU node, seq 16, global
// batch 4: small enough to count every removal by hand.
Scenario TinyScenario() {
  Scenario s;
  s.name = "tiny";
  s.model.name = "tiny";
  s.model.num_layers = 2;
  s.model.hidden_size = 256;
  s.model.ffn_hidden_size = 512;
  s.model.num_attention_heads = 4;
  s.model.num_kv_heads = 2;
  s.model.head_dim = 64;
  s.model.vocab_size = 1024;
  auto hw = ResolveHardwareProfile("h100-sxm");
  EXPECT_THAT(hw, IsOk());
  s.hw = *hw;
  s.hw.gpus_per_node = 8;
  s.num_gpus = 8;
  s.training.seq_len = 16;
  s.training.global_batch = 4;
  s.parallel.dp = 8;
  return s;
}

// TinyScenario with a library model swapped in.
Scenario TinyScenarioWith(const std::string& name) {
  Scenario s = TinyScenario();
  auto model = ResolveModel(name);
  EXPECT_THAT(model, IsOk());
  if (model.ok()) s.model = *model;
  return s;
}

// TinyScenario with 4 experts of 256, top-2, in every layer.
Scenario TinyMoeScenario() {
  Scenario s = TinyScenario();
  MoeSpec moe;
  moe.num_experts = 4;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 256;
  s.model.moe = moe;
  return s;
}

SearchSpace TinySpace() {
  SearchSpace space;
  space.tp = {1, 2, 4, 8};
  space.pp = {1, 2};
  space.vpp = {1, 2};
  space.cp = {1};
  space.ep = {1};
  space.etp = {1};
  space.micro_batch = {1, 2};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.sequence_parallel = {false, true};
  space.sharding = {DpSharding::kNone, DpSharding::kDistributedOptimizer};
  space.turbo_grouped_gemm = {true};
  space.deepep = {false};
  return space;
}

// Deterministic fake: throughput grows with TP and falls with PP; memory 200 GB / (tp·pp).
LayoutMetrics FakeMetrics(const Scenario& s) {
  const ParallelConfig& p = s.parallel;
  LayoutMetrics m;
  m.tokens_per_s_per_gpu =
      1000.0 * static_cast<double>(p.tp) / static_cast<double>(p.pp) +
      (s.training.recompute == Recompute::kNone ? 10.0 : 0.0) +
      static_cast<double>(s.training.micro_batch) + (p.sequence_parallel ? 0.5 : 0.0) +
      (p.distributed_optimizer ? 0.25 : 0.0);
  m.step_time = Seconds(1.0 / m.tokens_per_s_per_gpu);
  m.peak_memory_per_gpu = Gigabytes(200.0 / static_cast<double>(p.tp * p.pp));
  m.breakdown[0] = Seconds(1.0);
  m.breakdown[4] = Seconds(static_cast<double>(p.pp) - 0.5);
  return m;
}

// An evaluator of FakeMetrics; it never abandons a layout and composes nothing.
LayoutEvaluator FakeEvaluatorOf(std::function<absl::StatusOr<LayoutMetrics>(const Scenario&)> f) {
  LayoutEvaluator e;
  e.project = [f](const Scenario& s, const ComposedModel*, Seconds) { return f(s); };
  return e;
}
const LayoutEvaluator FakeEvaluate =
    FakeEvaluatorOf([](const Scenario& s) -> absl::StatusOr<LayoutMetrics> { return FakeMetrics(s); });

SearchOptions Options(SearchSpace space, std::optional<Bytes> limit = std::nullopt) {
  SearchOptions o;
  o.space = std::move(space);
  o.memory_limit = limit;
  o.threads = 2;
  // The fake metrics have no per-layer passes to bound a layout or another split by.
  o.prune = false;
  o.explore_splits = false;
  return o;
}

// Hand count for TinySpace on TinyScenario. Enumerated: tp 4 · pp 2 · vpp 2 · mb 2 ·
// recompute 2 · sp 2 · sharding 2 = 256; each (tp, pp, vpp) has 2·2·2·2 = 16 inner points.
//   gpu_count      (tp8, pp2): 16 ∤ 8                          -> 2 vpp · 16       = 32
//   tp_heads       (tp8, pp1): 4 heads % 8                     -> 2 vpp · 16       = 32
//   sp_without_tp  tp1, SP on: (pp1|pp2) · 2 vpp · 8          -> 32
//   vpp_without_pp pp1, vpp2: tp1 8 (SP-on gone) + tp2 16 + tp4 16 = 40
//   layers_pp_vpp  none: pp2 vpp2 puts 2 layers on 4 virtual stages by Megatron's embedding/
//                  loss-aware split ((2 + 2) % 4 = 0), as `project` does
//   global_batch   4 % (mb·dp): tp1 pp1 dp8: all 8; tp1 pp2 dp4: mb2 half of 8, for vpp 1 and
//                  2 = 8; tp2 pp1 dp4: mb2 half of 16 = 8; dp2 and dp1 always divide  -> 24;
//                  and interleaved (vpp 2) with 4/(mb·dp) micro-batches not divisible by pp 2:
//                  tp1 dp4 mb1 (1 micro-batch, SP off): 4; tp2 dp2 mb2 (1): 8     -> +12 = 36
//   sharding_without_dp  tp4 pp2 dp1 with distopt: half of 16, for vpp 1 and 2  -> 16
//   survivors: 256 − (32+32+32+40+36+16) = 68.
TEST(SearchTest, EnumerationCountsMatchHandDerivation) {
  Scenario base = TinyScenario();
  SearchSpace space = TinySpace();
  EXPECT_EQ(space.Size(), 256);
  std::array<int64_t, kNumSearchConstraints> removed{};
  std::vector<SearchCandidate> candidates = EnumerateCandidates(base, space, &removed);
  EXPECT_EQ(candidates.size(), 68u);
  EXPECT_EQ(Removed(removed, SearchConstraint::kGpuCount), 32);
  EXPECT_EQ(Removed(removed, SearchConstraint::kTpCrossNode), 0);
  EXPECT_EQ(Removed(removed, SearchConstraint::kTpHeads), 32);
  EXPECT_EQ(Removed(removed, SearchConstraint::kSpWithoutTp), 32);
  EXPECT_EQ(Removed(removed, SearchConstraint::kSeqCp), 0);
  EXPECT_EQ(Removed(removed, SearchConstraint::kSeqTpSp), 0);
  EXPECT_EQ(Removed(removed, SearchConstraint::kVppWithoutPp), 40);
  EXPECT_EQ(Removed(removed, SearchConstraint::kLayersPpVpp), 0);
  EXPECT_EQ(Removed(removed, SearchConstraint::kGlobalBatch), 36);
  EXPECT_EQ(Removed(removed, SearchConstraint::kShardingWithoutDp), 16);
  int64_t total = 0;
  for (int64_t n : removed) total += n;
  EXPECT_EQ(total + 68, 256);
}

TEST(SearchTest, EverySurvivorPassesScenarioValidation) {
  Scenario base = TinyScenario();
  Scenario s = base;
  for (const SearchCandidate& c : EnumerateCandidates(base, TinySpace())) {
    ApplyCandidate(c, 1.0, s);
    EXPECT_THAT(ValidateScenario(s, "test"), IsOk()) << CandidateLabel(c);
  }
}

TEST(SearchTest, CrossNodeTpIsRemovedUnlessAllowed) {
  Scenario base = TinyScenario();
  base.hw.gpus_per_node = 2;  // 4 nodes of 2
  SearchSpace space = TinySpace();
  space.tp = {4};
  space.pp = {1};
  space.vpp = {1};
  std::array<int64_t, kNumSearchConstraints> removed{};
  EXPECT_TRUE(EnumerateCandidates(base, space, &removed).empty());
  EXPECT_EQ(Removed(removed, SearchConstraint::kTpCrossNode), space.Size());
  space.allow_cross_node_tp = true;
  EXPECT_FALSE(EnumerateCandidates(base, space).empty());
}

// tp·pp·cp of three divisors of 2^24 GPUs is 2^72 here: it overflows 64 bits, and the
// enumeration must count it under gpu_count rather than divide by the wrapped product.
TEST(SearchTest, ModelParallelProductBeyondTheGpuCountIsRemovedWithoutOverflow) {
  Scenario base = TinyScenario();
  base.num_gpus = int64_t{1} << 24;
  SearchSpace space = TinySpace();
  space.tp = {int64_t{1} << 24};
  space.pp = {int64_t{1} << 24};
  space.vpp = {1};
  space.cp = {int64_t{1} << 24};
  std::array<int64_t, kNumSearchConstraints> removed{};
  EXPECT_TRUE(EnumerateCandidates(base, space, &removed).empty());
  EXPECT_EQ(Removed(removed, SearchConstraint::kGpuCount), space.Size());
}

// A requested MoE imbalance is capped per layout by what its EP allows (MaxMoeImbalance): 4
// experts, top-2: EP 1 → 1 (no rank to be busier than another), EP 2 → 2·min(2, 2)/2 = 2,
// EP 4 → 4·min(2, 1)/2 = 2; a smaller request passes unchanged.
TEST(SearchTest, MoeImbalanceIsCappedPerLayout) {
  Scenario s = TinyMoeScenario();
  s.training.global_batch = 8;
  for (auto [ep, requested, applied] :
       {std::tuple<int64_t, double, double>{1, 3.0, 1.0}, {2, 3.0, 2.0}, {4, 3.0, 2.0},
        {4, 1.5, 1.5}}) {
    SearchCandidate c;
    c.parallel.dp = 8;
    c.parallel.ep = ep;
    c.micro_batch = 1;
    ApplyCandidate(c, requested, s);
    EXPECT_DOUBLE_EQ(s.training.moe_imbalance, applied) << "ep " << ep;
    EXPECT_THAT(ValidateScenario(s, "test"), IsOk()) << "ep " << ep;
  }
}

TEST(SearchTest, MoeConstraintsAndDuplicateSwitches) {
  Scenario base = TinyMoeScenario();
  SearchSpace space = TinySpace();
  space.tp = {1};
  space.pp = {1};
  space.vpp = {1};
  space.micro_batch = {1};
  space.recompute = {Recompute::kNone};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kNone};
  space.ep = {1, 3, 4, 8};
  space.etp = {1};
  space.turbo_grouped_gemm = {true, false};
  space.deepep = {false, true};
  base.training.global_batch = 8;  // dp 8, mb 1
  // 4 ep · 2 grouped-GEMM · 2 DeepEP = 16.
  //   experts_ep: ep3 (4 % 3) and ep8 (4 % 8), 4 points each            -> 8
  //   moe_switch_redundant: ep1 with DeepEP on (turbo, legacy)           -> 2
  //                         ep4 = one local expert, legacy (off, on)     -> 2
  //   survivors: ep1 turbo/legacy without DeepEP, ep4 turbo with/without -> 4
  std::array<int64_t, kNumSearchConstraints> removed{};
  std::vector<SearchCandidate> c = EnumerateCandidates(base, space, &removed);
  EXPECT_EQ(Removed(removed, SearchConstraint::kExpertsEp), 8);
  EXPECT_EQ(Removed(removed, SearchConstraint::kMoeSwitchRedundant), 4);
  EXPECT_EQ(c.size(), 4u);  // ep1 turbo/legacy without DeepEP, ep4 turbo with/without DeepEP
}

// Selective recompute takes each module set as a point of its own; the other modes one each:
// recompute {none, selective, full} with two module sets = 4 points per layout. Each candidate
// applies its set, and a non-selective one keeps the default.
TEST(SearchTest, RecomputeModuleSetsArePointsOfSelective) {
  Scenario base = TinyMoeScenario();
  base.training.stack = TrainingStack::kMegatron;
  SearchSpace space = TinySpace();
  space.tp = {1};
  space.pp = {1};
  space.vpp = {1};
  space.micro_batch = {1};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kNone};
  space.recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  const RecomputeModules cheap = RecomputeBit(RecomputeModule::kMoeAct) |
                                 RecomputeBit(RecomputeModule::kLayernorm);
  space.selective_modules = {kDefaultRecomputeModules, cheap};
  base.training.global_batch = 8;
  EXPECT_EQ(space.RecomputePoints(), 4);
  EXPECT_EQ(space.Size(), 4);
  std::vector<SearchCandidate> c = EnumerateCandidates(base, space);
  ASSERT_EQ(c.size(), 4u);
  std::vector<std::string> labels;
  Scenario s = base;
  for (const SearchCandidate& k : c) {
    ApplyCandidate(k, 1.0, s);
    EXPECT_EQ(s.training.recompute, k.recompute);
    EXPECT_EQ(s.training.recompute_modules, k.recompute_modules);
    EXPECT_THAT(ValidateScenario(s, "test"), IsOk()) << CandidateLabel(k);
    labels.push_back(RecomputePhrase(k.recompute, k.recompute_modules));
  }
  EXPECT_THAT(labels, ::testing::ElementsAre("none", "selective", "selective (layernorm,moe_act)",
                                             "full"));
}

// The lab of seeds/004: dp·tp·sp = 64 over powers of two, pp 1, recompute on/off = 56 points.
// With the lab's sp as CP, the GPU-count constraint leaves exactly those 56.
TEST(SearchTest, SeedLabSpaceHasFiftySixPoints) {
  Scenario base = TinyScenarioWith("llama2-70b");
  base.num_gpus = 64;
  base.training.seq_len = 1024;
  base.training.global_batch = 512;
  SearchSpace space = TinySpace();
  space.tp = {1, 2, 4, 8, 16, 32, 64};
  space.cp = {1, 2, 4, 8, 16, 32, 64};
  space.pp = {1};
  space.vpp = {1};
  space.micro_batch = {1};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kNone};
  space.allow_cross_node_tp = true;
  std::array<int64_t, kNumSearchConstraints> removed{};
  std::vector<SearchCandidate> c = EnumerateCandidates(base, space, &removed);
  EXPECT_EQ(space.Size(), 98);
  EXPECT_EQ(space.Size() - Removed(removed, SearchConstraint::kGpuCount), 56);
  // Llama-2-70B's 64 heads / 8 kv heads split over every TP up to 64: nothing else removed.
  EXPECT_EQ(c.size(), 56u);
}

TEST(SearchTest, RanksByObjectiveAndIsDeterministicAcrossThreadCounts) {
  Scenario base = TinyScenario();
  SearchOptions o = Options(TinySpace());
  auto r = SearchLayouts(base, o, FakeEvaluate);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->candidates_enumerated, 256);
  EXPECT_EQ(r->candidates_evaluated, 68);  // EnumerationCountsMatchHandDerivation
  EXPECT_EQ(r->ranked.size(), 68u);
  for (size_t i = 1; i < r->ranked.size(); ++i) {
    EXPECT_GE(r->ranked[i - 1].metrics.tokens_per_s_per_gpu,
              r->ranked[i].metrics.tokens_per_s_per_gpu);
  }
  // Best by the fake: tp4 pp1, no recompute, mb2, SP on, distopt.
  const SearchCandidate& best = r->ranked.front().candidate;
  EXPECT_EQ(best.parallel.tp, 4);
  EXPECT_EQ(best.parallel.pp, 1);
  EXPECT_EQ(best.micro_batch, 2);
  EXPECT_EQ(best.recompute, Recompute::kNone);
  EXPECT_TRUE(best.parallel.sequence_parallel);
  EXPECT_TRUE(best.parallel.distributed_optimizer);
  EXPECT_EQ(DominantCost(r->ranked.front().metrics), "compute");

  o.threads = 1;
  auto r1 = SearchLayouts(base, o, FakeEvaluate);
  ASSERT_THAT(r1, IsOk());
  ASSERT_EQ(r1->ranked.size(), r->ranked.size());
  for (size_t i = 0; i < r->ranked.size(); ++i) {
    EXPECT_EQ(CandidateLabel(r1->ranked[i].candidate), CandidateLabel(r->ranked[i].candidate));
  }

  o.objective = SearchObjective::kMemory;
  auto rm = SearchLayouts(base, o, FakeEvaluate);
  ASSERT_THAT(rm, IsOk());
  for (size_t i = 1; i < rm->ranked.size(); ++i) {
    EXPECT_LE(rm->ranked[i - 1].metrics.peak_memory_per_gpu,
              rm->ranked[i].metrics.peak_memory_per_gpu);
  }
  o.objective = SearchObjective::kStepTime;
  auto rs = SearchLayouts(base, o, FakeEvaluate);
  ASSERT_THAT(rs, IsOk());
  EXPECT_EQ(CandidateLabel(rs->ranked.front().candidate), CandidateLabel(best));
}

// Peaks are 200 GB / (tp·pp): with a 30 GB limit only tp·pp = 8 (25 GB) survives.
TEST(SearchTest, MemoryLimitRemovesAndCounts) {
  Scenario base = TinyScenario();
  auto all = SearchLayouts(base, Options(TinySpace()), FakeEvaluate);
  ASSERT_THAT(all, IsOk());
  int64_t above = 0;
  for (const RankedLayout& l : all->ranked) {
    if (l.candidate.parallel.tp * l.candidate.parallel.pp < 8) ++above;
  }
  auto limited = SearchLayouts(base, Options(TinySpace(), Gigabytes(30)), FakeEvaluate);
  ASSERT_THAT(limited, IsOk());
  EXPECT_EQ(Removed(*limited, SearchConstraint::kMemory), above);
  EXPECT_EQ(static_cast<int64_t>(limited->ranked.size()), 68 - above);
  for (const RankedLayout& l : limited->ranked) {
    EXPECT_LE(l.metrics.peak_memory_per_gpu, Gigabytes(30));
    EXPECT_TRUE(l.fits_memory);
  }
}

TEST(SearchTest, NoLimitKeepsAndMarksLayoutsAboveTheDefaultLimit) {
  Scenario base = TinyScenario();
  auto r = SearchLayouts(base, Options(TinySpace()), FakeEvaluate);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(Removed(*r, SearchConstraint::kMemory), 0);
  EXPECT_EQ(r->memory_check, DefaultMemoryLimit(base.hw));
  bool marked = false;
  for (const RankedLayout& l : r->ranked) {
    EXPECT_EQ(l.fits_memory, l.metrics.peak_memory_per_gpu <= DefaultMemoryLimit(base.hw));
    marked = marked || !l.fits_memory;
  }
  EXPECT_TRUE(marked);  // tp·pp = 2 needs 100 GB on an 80 GB H100
}

TEST(SearchTest, DefaultMemoryLimitIsHbmLessFivePercent) {
  Scenario base = TinyScenario();
  EXPECT_NEAR(DefaultMemoryLimit(base.hw).value(), 0.95 * base.hw.gpu.hbm_capacity.value(), 1);
}

TEST(SearchTest, NoLayoutFitsNamesMemoryAndTheLowestPeak) {
  Scenario base = TinyScenario();
  auto r = SearchLayouts(base, Options(TinySpace(), Gigabytes(1)), FakeEvaluate);
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kFailedPrecondition,
                          AllOf(HasSubstr("no valid layout"), HasSubstr("'memory'"),
                                // 200/(tp·pp) = 25 GB at tp·pp = 8: 25e9 / 2^30 = 23.3 GiB.
                                HasSubstr("removed the last 68"),
                                HasSubstr("lowest peak was 23.3 GiB"),
                                HasSubstr("--memory-limit-gb"))));
}

TEST(SearchTest, NoLayoutNamesTheLastPreCheckConstraint) {
  Scenario base = TinyScenario();
  SearchSpace space = TinySpace();
  space.tp = {8};
  space.pp = {1};
  auto r = SearchLayouts(base, Options(space), FakeEvaluate);
  // tp8: 4 heads % 8 removes every point.
  EXPECT_THAT(r, StatusIs(absl::StatusCode::kFailedPrecondition,
                          AllOf(HasSubstr("'tp_heads'"), HasSubstr("4 heads"),
                                HasSubstr("--tp-values"))));
}

TEST(SearchTest, ProjectionErrorsAreCountedAndNamed) {
  Scenario base = TinyScenario();
  LayoutEvaluator failing = FakeEvaluatorOf([](const Scenario& s) -> absl::StatusOr<LayoutMetrics> {
    if (s.parallel.pp > 1) return absl::UnimplementedError("pp not supported here");
    return FakeMetrics(s);
  });
  auto r = SearchLayouts(base, Options(TinySpace()), failing);
  ASSERT_THAT(r, IsOk());
  int64_t pp2 = 0;
  for (const SearchCandidate& c : EnumerateCandidates(base, TinySpace())) {
    pp2 += c.parallel.pp > 1;
  }
  EXPECT_EQ(Removed(*r, SearchConstraint::kProjectionError), pp2);
  EXPECT_THAT(r->first_projection_error, HasSubstr("pp not supported here"));

  SearchSpace only_pp2 = TinySpace();
  only_pp2.pp = {2};
  EXPECT_THAT(SearchLayouts(base, Options(only_pp2), failing),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("'projection_error'"), HasSubstr("pp not supported"))));
}

TEST(SearchTest, EmptyValueListIsInvalidArgument) {
  SearchSpace space = TinySpace();
  space.micro_batch.clear();
  EXPECT_THAT(SearchLayouts(TinyScenario(), Options(space), FakeEvaluate),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("micro-batch")));
}

TEST(SearchTest, JsonCarriesCountsAndAllLayouts) {
  Scenario base = TinyScenario();
  auto r = SearchLayouts(base, Options(TinySpace()), FakeEvaluate);
  ASSERT_THAT(r, IsOk());
  nlohmann::json j = SearchResultToJson(base, *r);
  EXPECT_EQ(j["candidates_enumerated"], 256);
  EXPECT_EQ(j["candidates_evaluated"], 68);
  EXPECT_TRUE(j["elapsed_s"].is_number());
  EXPECT_EQ(j["removed"]["gpu_count"], 32);
  EXPECT_EQ(j["removed"]["memory"], 0);
  EXPECT_TRUE(j["memory_limit_bytes"].is_null());
  EXPECT_EQ(j["layouts"].size(), 68u);
  EXPECT_EQ(j["layouts"][0]["rank"], 1);
  EXPECT_THAT(j["best_command"].get<std::string>(), HasSubstr("project "));
}

TEST(SearchTest, TextShowsTopKAndTheBestCommand) {
  Scenario base = TinyScenario();
  auto r = SearchLayouts(base, Options(TinySpace()), FakeEvaluate);
  ASSERT_THAT(r, IsOk());
  std::string text = FormatSearchText(base, *r, 3);
  EXPECT_THAT(text, AllOf(HasSubstr("256 enumerated"), HasSubstr("68 evaluated"),
                          HasSubstr("gpu_count 32"), HasSubstr("Best layout"),
                          HasSubstr("--tp 4 --pp 1 --cp 1 --dp 2 --sequence-parallel "
                                    "--distributed-optimizer --fsdp=false")));
  EXPECT_NE(text.find("   3  "), std::string::npos);
  EXPECT_EQ(text.find("   4  "), std::string::npos);
}

TEST(SearchTest, ParsesObjectiveAndSharding) {
  EXPECT_THAT(ParseSearchObjective("step-time"), IsOk());
  EXPECT_THAT(ParseSearchObjective("speed"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tgs, step-time, memory")));
  EXPECT_THAT(ParseDpSharding("zero3"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dp, distopt, fsdp")));
}

// The search must rank exactly as projecting each layout on its own does.
TEST(SearchTest, BestLayoutEqualsBruteForceOverProject) {
  Scenario base = TinyScenarioWith("llama3.1-8b");
  base.training.seq_len = 4096;
  base.training.global_batch = 16;
  SearchSpace space = DefaultSearchSpace(base);
  space.vpp = {1, 2};
  space.micro_batch = {1, 2};
  space.cp = {1, 2};
  SearchOptions o = Options(space);
  auto r = SearchLayouts(base, o);
  ASSERT_THAT(r, IsOk());
  ASSERT_FALSE(r->ranked.empty());

  auto set = MakeBackendSet(base.backends, base.hw);
  ASSERT_THAT(set, IsOk());
  BackendRefs refs{.gemm = *set->gemm,
                   .attention = *set->attention,
                   .memory = *set->memory,
                   .collective = *set->collective};
  double best_tgs = -1;
  std::string best_label;
  int64_t projected = 0;
  Scenario s = base;
  for (const SearchCandidate& c : EnumerateCandidates(base, space)) {
    ApplyCandidate(c, 1.0, s);
    if (!ValidateScenario(s, "brute force").ok()) continue;
    auto p = Project(s, refs);
    if (!p.ok()) continue;
    ++projected;
    if (p->tokens_per_s_per_gpu > best_tgs) {
      best_tgs = p->tokens_per_s_per_gpu;
      best_label = CandidateLabel(c);
    }
  }
  EXPECT_EQ(static_cast<int64_t>(r->ranked.size()), projected);
  EXPECT_EQ(CandidateLabel(r->ranked.front().candidate), best_label);
  EXPECT_DOUBLE_EQ(r->ranked.front().metrics.tokens_per_s_per_gpu, best_tgs);
}

// With attention_kernel "auto", an FSDP layout on H100 runs PyTorch SDPA's FA2 and a
// distributed-optimizer one the profile's FA3 (ResolveKernels): the search must time
// each candidate with the kernel `project` would use for that layout.
TEST(SearchTest, AutoAttentionKernelFollowsEachCandidatesSharding) {
  Scenario base = TinyScenarioWith("llama3.1-8b");
  base.training.seq_len = 8192;
  base.training.global_batch = 8;
  ASSERT_THAT(ResolveKernels(base, "test"), IsOk());
  SearchSpace space = DefaultSearchSpace(base);
  space.tp = {1};
  space.pp = {1};
  space.vpp = {1};
  space.cp = {1};
  space.micro_batch = {1};
  space.recompute = {Recompute::kFull};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kDistributedOptimizer, DpSharding::kFsdp};
  auto r = SearchLayouts(base, Options(space));
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->ranked.size(), 2u);
  for (const RankedLayout& l : r->ranked) {
    Scenario s = base;
    ApplyCandidate(l.candidate, 1.0, s);
    ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
    EXPECT_EQ(s.attention_kernel_used, l.candidate.parallel.fsdp ? "fa2" : "fa3");
    auto set = MakeBackendSet(s.backends, s.hw);
    ASSERT_THAT(set, IsOk());
    auto p = Project(s, BackendRefs{.gemm = *set->gemm,
                                    .attention = *set->attention,
                                    .memory = *set->memory,
                                    .collective = *set->collective});
    ASSERT_THAT(p, IsOk());
    EXPECT_DOUBLE_EQ(l.metrics.tokens_per_s_per_gpu, p->tokens_per_s_per_gpu)
        << CandidateLabel(l.candidate);
  }
}

// Every split the scenario accepts with each stage at least max(1, vpp) layers and the middle
// stages at one size, less the one evaluated: counted by brute force over all (first, last).
TEST(SearchTest, AlternativeSplitsAreEveryAcceptedSplitButTheEvaluatedOne) {
  for (int64_t layers : {13, 32, 61}) {
    for (int64_t pp : {2, 3, 4, 8}) {
      for (int64_t vpp : {1, 2}) {
        ModelSpec model;
        model.num_layers = layers;
        const auto own = DefaultStageSplit(model, pp, vpp);
        if (!own) continue;
        ParallelConfig p;
        p.pp = pp;
        p.vpp = vpp;
        p.first_stage_layers = own->first;
        p.last_stage_layers = own->second;
        const int64_t least = vpp;
        int64_t brute = 0;
        for (int64_t first = least; first <= layers; ++first) {
          for (int64_t last = least; last <= layers; ++last) {
            if (!UnevenSplitAccepted(layers, pp, vpp, first, last)) continue;
            const int64_t middle = pp > 2 ? (layers - first - last) / (pp - 2) : least;
            if (middle < least) continue;
            const bool evaluated = (first == own->first && last == own->second) ||
                                   (own->first == 0 && layers % (pp * vpp) == 0 &&
                                    first == layers / pp && last == layers / pp);
            brute += !evaluated;
          }
        }
        EXPECT_EQ(CountAlternativeSplits(layers, p), brute)
            << layers << " layers, pp " << pp << " vpp " << vpp;
      }
    }
  }
  // 32 layers on pp 2: first + last = 32, each 1..31, less the evaluated 16/16: 30.
  ParallelConfig two;
  two.pp = 2;
  EXPECT_EQ(CountAlternativeSplits(32, two), 30);
}

// The passes run on a work team's lanes in guided chunks, the pruned pass in batches judged
// against the threshold at their start: the result (counts, ranking, figures) is the same on one
// lane as on three, which is what lets MPI ranks share a search (issue 29).
TEST(SearchTest, ResultDoesNotDependOnTheLanes) {
  Scenario base = TinyScenarioWith("llama3.1-8b");
  base.training.seq_len = 4096;
  base.training.global_batch = 32;
  SearchOptions o;
  o.space = DefaultSearchSpace(base);
  o.space.tp = {1, 2, 4};
  o.space.pp = {1, 2, 4};
  o.exact_top = 5;
  o.threads = 1;
  auto one = SearchLayouts(base, o);
  o.threads = 3;
  auto three = SearchLayouts(base, o);
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(three, IsOk());
  EXPECT_EQ(one->threads, 1);
  EXPECT_EQ(three->threads, 3);
  EXPECT_GT(Removed(*one, SearchConstraint::kBound), 0);  // the pruning took part
  EXPECT_EQ(one->candidates_evaluated, three->candidates_evaluated);
  EXPECT_EQ(one->splits_enumerated, three->splits_enumerated);
  EXPECT_EQ(one->removed, three->removed);
  ASSERT_EQ(one->ranked.size(), three->ranked.size());
  for (size_t i = 0; i < one->ranked.size(); ++i) {
    EXPECT_EQ(CandidateLabel(one->ranked[i].candidate), CandidateLabel(three->ranked[i].candidate));
    EXPECT_EQ(one->ranked[i].metrics.step_time.value(), three->ranked[i].metrics.step_time.value());
  }
}

// The bound prunes only what cannot reach the top K: the best K of a pruned search, splits
// included, are those of projecting every layout and every split to the end.
TEST(SearchTest, PruningKeepsTheExhaustiveTopK) {
  Scenario base = TinyScenarioWith("llama3.1-8b");
  base.training.seq_len = 4096;
  base.training.global_batch = 32;
  SearchSpace space = DefaultSearchSpace(base);
  space.tp = {1, 2};
  space.pp = {2, 4};
  space.vpp = {1, 2};
  space.cp = {1};
  space.micro_batch = {1};
  space.recompute = {Recompute::kNone, Recompute::kFull};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kDistributedOptimizer};
  SearchOptions o;
  o.space = space;
  o.threads = 2;
  o.exact_top = 5;
  o.memory_limit = DefaultMemoryLimit(base.hw);
  auto pruned = SearchLayouts(base, o);
  o.prune = false;
  auto every = SearchLayouts(base, o);
  ASSERT_THAT(pruned, IsOk());
  ASSERT_THAT(every, IsOk());
  EXPECT_GT(every->splits_enumerated, 100);
  EXPECT_EQ(every->candidates_enumerated, pruned->candidates_enumerated);
  EXPECT_LT(pruned->candidates_evaluated, every->candidates_evaluated / 4);
  EXPECT_EQ(Removed(*every, SearchConstraint::kBound), 0);
  ASSERT_GE(pruned->ranked.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(CandidateLabel(pruned->ranked[i].candidate),
              CandidateLabel(every->ranked[i].candidate));
    EXPECT_EQ(pruned->ranked[i].metrics.step_time.value(),
              every->ranked[i].metrics.step_time.value());
  }
  // The counts still add up: every enumerated point is ranked or removed once.
  int64_t removed = 0;
  for (int64_t n : pruned->removed) removed += n;
  EXPECT_EQ(removed + static_cast<int64_t>(pruned->ranked.size()), pruned->candidates_enumerated);
}

// Llama-3.1-70B on 8 H100 (80 layers) fits no layout without FSDP: PP2 with the distributed
// optimizer holds 2 + 4 + 12/dp bytes for each of its 70.6e9/(tp·2) parameters per GPU.
//   TP2 PP2 DP2: 17.6e9 · 12 B = 211 GB (196 GiB) of state; its peak, ~215 GiB, is the lowest;
//   TP1 PP2 DP4: 35.3e9 ·  9 B = 318 GB (296 GiB): any split of it peaks at least at
//                2 GiB + 1.05 · 296 GiB ≈ 313 GiB (PeakLowerBoundOverSplits), over the limit
//                and over the lowest peak, so its 78 other splits (first stage 1..79 layers but
//                the evaluated 40) are removed for memory without a projection.
// The search then reports exactly what projecting every split reports.
TEST(SearchTest, SplitsWhoseStateAloneIsOverTheLimitAreRemovedUnprojected) {
  Scenario base = TinyScenarioWith("llama3.1-70b");
  base.num_gpus = 8;
  base.training.seq_len = 4096;
  base.training.global_batch = 16;
  SearchSpace space = DefaultSearchSpace(base);
  space.tp = {1, 2};
  space.pp = {2};
  space.vpp = {1};
  space.cp = {1};
  space.micro_batch = {1};
  space.recompute = {Recompute::kFull};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kDistributedOptimizer};
  auto set = MakeBackendSet(base.backends, base.hw);
  ASSERT_THAT(set, IsOk());
  SearchOptions o;
  o.space = space;
  o.threads = 2;
  o.memory_limit = DefaultMemoryLimit(base.hw);
  const BackendRefs refs = RefsOf(*set);  // ProjectionEvaluator keeps a reference to it
  const LayoutEvaluator projection = ProjectionEvaluator(refs, o.memory_limit);
  std::atomic<int64_t> projected{0};
  LayoutEvaluator counting = projection;
  counting.project = [&](const Scenario& s, const ComposedModel* c, Seconds at) {
    ++projected;
    return projection.project(s, c, at);
  };
  auto pruned = SearchLayouts(base, o, counting);
  const int64_t projected_pruned = projected.exchange(0);
  o.prune = false;
  auto every = SearchLayouts(base, o, counting);
  const int64_t projected_every = projected.load();
  ASSERT_FALSE(pruned.ok());
  ASSERT_FALSE(every.ok());
  EXPECT_THAT(std::string(pruned.status().message()), HasSubstr("lowest peak was"));
  EXPECT_EQ(pruned.status().message(), every.status().message());
  EXPECT_EQ(projected_every, 2 + 2 * 78);
  EXPECT_EQ(projected_every - projected_pruned, 78);
}

// The two cases: the search's best is at least as fast as the layout people run by hand.
absl::StatusOr<Scenario> SearchBase(std::vector<std::pair<const char*, const char*>> given) {
  FlagValues flags;
  for (const auto& [name, value] : given) flags.Add(name, value);
  return ScenarioFromFlags(flags, ScenarioUse::kSearchBase);
}

double HandLayoutTgs(std::vector<std::pair<const char*, const char*>> given) {
  FlagValues flags;
  for (const auto& [name, value] : given) flags.Add(name, value);
  absl::StatusOr<Scenario> s = ScenarioFromFlags(flags);
  EXPECT_THAT(s, IsOk());
  if (!s.ok()) return 0;
  absl::StatusOr<Projection> p = Project(*s);
  EXPECT_THAT(p, IsOk());
  return p.ok() ? p->tokens_per_s_per_gpu : 0;
}

// Meta's Llama 3.1 405B layout on 16,384 H100 (TP8 PP16 VPP4, 126 layers over 64 virtual
// stages by the embedding/loss-aware split), in the default search space.
TEST(SearchTest, FindsAtLeastMetasLlama405bLayout) {
  auto base = SearchBase({{"model", "llama3.1-405b"}, {"gpu-arch", "h100-sxm"},
                          {"num-gpus", "16384"}, {"seq-len", "8192"}, {"global-batch", "2048"}});
  ASSERT_THAT(base, IsOk());
  const double hand = HandLayoutTgs({{"model", "llama3.1-405b"}, {"gpu-arch", "h100-sxm"},
                                     {"num-gpus", "16384"}, {"seq-len", "8192"},
                                     {"global-batch", "2048"}, {"tp", "8"}, {"pp", "16"},
                                     {"vpp", "4"}, {"sequence-parallel", "true"},
                                     {"recompute", "full"}});
  SearchOptions o;
  o.space = DefaultSearchSpace(*base);
  o.memory_limit = DefaultMemoryLimit(base->hw);
  auto r = SearchLayouts(*base, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_GT(hand, 100.0);
  EXPECT_GE(r->ranked.front().metrics.tokens_per_s_per_gpu, hand);
}

// DeepSeek-V3's layout on 2,048 H800 (PP16 EP64 with DeepEP, 4 layers on the first stage and 1
// on the last), in a space around it; without a memory limit, as the hand layout is projected.
TEST(SearchTest, FindsAtLeastDeepSeekV3sLayout) {
  const std::vector<std::pair<const char*, const char*>> job = {
      {"model", "deepseek-v3"}, {"gpu-arch", "h800"},     {"num-gpus", "2048"},
      {"seq-len", "4096"},      {"global-batch", "15360"}, {"precision", "fp8"}};
  auto base = SearchBase(job);
  ASSERT_THAT(base, IsOk());
  auto hand_flags = job;
  for (const auto& f : std::vector<std::pair<const char*, const char*>>{
           {"tp", "1"}, {"pp", "16"}, {"ep", "64"}, {"deepep", "true"},
           {"first-stage-layers", "4"}, {"last-stage-layers", "1"}}) {
    hand_flags.push_back(f);
  }
  const double hand = HandLayoutTgs(hand_flags);
  SearchOptions o;
  o.space = DefaultSearchSpace(*base);
  o.space.tp = {1, 2};
  o.space.pp = {8, 16};
  o.space.vpp = {1};
  o.space.cp = {1};
  o.space.ep = {32, 64};
  o.space.etp = {1};
  o.space.micro_batch = {1};
  o.space.recompute = {Recompute::kNone};
  o.space.sharding = {DpSharding::kDistributedOptimizer};
  o.space.turbo_grouped_gemm = {true};
  auto r = SearchLayouts(*base, o);
  ASSERT_THAT(r, IsOk());
  EXPECT_GT(hand, 1000.0);
  EXPECT_GE(r->ranked.front().metrics.tokens_per_s_per_gpu, hand);
}

// The memory hint names only what the space lacks: TinySpace has full recompute, no FSDP, PP up
// to 2 (the tiny model's 2 layers allow no deeper pipeline) and TP up to 8 (the node).
TEST(SearchTest, MemoryHintSuggestsOnlyWhatTheSpaceLacks) {
  Scenario base = TinyScenario();
  auto r = SearchLayouts(base, Options(TinySpace(), Gigabytes(1)), FakeEvaluate);
  ASSERT_FALSE(r.ok());
  const std::string message(r.status().message());
  EXPECT_THAT(message, HasSubstr("widen the space with --sharding-values fsdp"));
  EXPECT_THAT(message, Not(HasSubstr("--pp-values")));
  EXPECT_THAT(message, Not(HasSubstr("--recompute-values")));
  EXPECT_THAT(message, Not(HasSubstr("--tp-values")));
}

TEST(SearchTest, DifferenceFromNamesEveryFieldThatDiffers) {
  SearchCandidate best;
  best.parallel.tp = 4;
  best.parallel.pp = 32;
  best.parallel.vpp = 4;
  best.parallel.cp = 4;
  best.parallel.sequence_parallel = true;
  best.parallel.distributed_optimizer = true;
  EXPECT_EQ(DifferenceFrom(best, best), "same layout");
  SearchCandidate c = best;
  c.parallel.pp = 16;
  c.parallel.cp = 8;
  c.parallel.first_stage_layers = 7;
  c.parallel.last_stage_layers = 7;
  c.micro_batch = 2;
  c.recompute = Recompute::kFull;
  c.parallel.sequence_parallel = false;
  c.parallel.distributed_optimizer = false;
  c.parallel.fsdp = true;
  EXPECT_EQ(DifferenceFrom(best, c),
            "PP 32→16, CP 4→8, mb 1→2, split 0/0→7/7, recompute none→full, SP on→off, "
            "DistOpt→FSDP");
}

}  // namespace
}  // namespace projector
