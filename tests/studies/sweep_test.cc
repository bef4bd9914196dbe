// The design-space sweep (studies/sweep.h): every point of layouts × networks evaluated once, in
// index order, with the figures a single projection gives; a resumed sweep evaluates only what
// its file lacks and ends with the same points; a file of another sweep is refused.
#include "studies/sweep.h"

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "network/hardware_network.h"
#include "projection/projection.h"
#include "scenario/scenario_flags.h"
#include "studies/lod_high.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// Llama-3.1-8B on one 8-GPU H100 node, TP 2 or 4 at micro-batch 1 or 2 with the distributed
// optimizer (all four fit), nothing else varied; on its own
// network and on the same network as a file.
struct Fixture {
  Scenario base;
  SweepOptions options;
  SearchSpace space;
  std::vector<SearchCandidate> candidates;
  Bytes memory_limit;
  std::vector<SweepGpu> Gpus() const {
    return {SweepGpu{.base = base, .candidates = candidates, .memory_limit = memory_limit}};
  }
};

Fixture SmallSweep(bool high = false, const char* gpu = "h100-sxm") {
  absl::StatusOr<Scenario> base = ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                                                {"gpu-arch", gpu},
                                                                {"num-gpus", "8"},
                                                                {"seq-len", "4096"},
                                                                {"global-batch", "32"}}),
                                                    ScenarioUse::kSearchBase);
  EXPECT_THAT(base, IsOk());
  Fixture f{.base = *base, .options = {}, .space = {}, .candidates = {}, .memory_limit = {}};
  SearchSpace& space = f.space;
  space = DefaultSearchSpace(f.base);
  space.tp = {2, 4};
  space.pp = {1};
  space.vpp = {1};
  space.cp = {1};
  space.micro_batch = {1, 2};
  space.recompute = {Recompute::kNone};
  space.sequence_parallel = {false};
  space.sharding = {DpSharding::kDistributedOptimizer};
  absl::StatusOr<NetworkSpec> node = NetworkFromHardware(f.base.hw, 8);
  EXPECT_THAT(node, IsOk());
  f.options.networks = {{.label = "builtin", .spec = nullptr},
                        {.label = "node.json", .spec = std::make_shared<NetworkSpec>(*node)}};
  f.options.high_lod = high;
  f.memory_limit = DefaultMemoryLimit(f.base.hw);
  f.options.stop_above_limit = true;
  f.candidates = EnumerateCandidates(f.base, f.space);
  return f;
}

absl::StatusOr<SweepSummary> RunAll(const Fixture& f, const SweepPoints& done,
                                    std::vector<nlohmann::json>& lines) {
  return RunSweep(f.Gpus(), f.options, done, [&](std::string_view line) {
    lines.push_back(nlohmann::json::parse(line));
    return absl::OkStatus();
  });
}

// 4 layouts × 2 networks: 8 points, index = network · 4 + layout, each with the tokens/s/GPU
// of its own projection.
TEST(SweepTest, EveryPointIsEvaluatedOnceInIndexOrderAsItsProjection) {
  const Fixture f = SmallSweep();
  ASSERT_EQ(f.candidates.size(), 4u);
  std::vector<nlohmann::json> lines;
  absl::StatusOr<SweepSummary> summary = RunAll(f, {}, lines);
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->points, 8);
  EXPECT_EQ(summary->evaluated, 8);
  EXPECT_EQ(summary->resumed, 0);
  EXPECT_EQ(summary->failed, 0);
  ASSERT_EQ(lines.size(), 8u);
  for (int64_t i = 0; i < 8; ++i) {
    const nlohmann::json& line = lines[static_cast<size_t>(i)];
    EXPECT_EQ(line["index"], i);
    EXPECT_EQ(line["network"], i < 4 ? "builtin" : "node.json");
    EXPECT_EQ(line["parallel"]["tp"], f.candidates[static_cast<size_t>(i % 4)].parallel.tp);
    Scenario s = f.base;
    ApplyCandidate(f.candidates[static_cast<size_t>(i % 4)], f.base.training.moe_imbalance, s);
    s.backends.network = f.options.networks[static_cast<size_t>(i / 4)].spec;
    absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
    ASSERT_THAT(set, IsOk());
    absl::StatusOr<Projection> p = Project(s, RefsOf(*set));
    ASSERT_THAT(p, IsOk());
    ASSERT_TRUE(line["tokens_per_s_per_gpu"].is_number()) << i;
    EXPECT_THAT(line["tokens_per_s_per_gpu"].get<double>(),
                IsNearRel(p->tokens_per_s_per_gpu, 1e-12))
        << i;
    EXPECT_TRUE(line["fits"].get<bool>());
  }
  ASSERT_FALSE(summary->best.empty());
  for (size_t k = 1; k < summary->best.size(); ++k) {
    EXPECT_GE(summary->best[k - 1]["tokens_per_s_per_gpu"].get<double>(),
              summary->best[k]["tokens_per_s_per_gpu"].get<double>());
  }
}

// Two GPU types: H100's 8 points (4 layouts × 2 networks), then MI300X's 8, each line naming its
// GPU and holding its own projection's tokens/s/GPU; the header lists each GPU's layouts.
TEST(SweepTest, GpuTypesAreADimensionGpuMajor) {
  const Fixture h100 = SmallSweep();
  const Fixture mi300x = SmallSweep(/*high=*/false, "mi300x");
  std::vector<SweepGpu> gpus = h100.Gpus();
  gpus.push_back(mi300x.Gpus().front());
  ASSERT_EQ(SweepPointCount(gpus, h100.options), 16);
  std::vector<nlohmann::json> lines;
  absl::StatusOr<SweepSummary> summary =
      RunSweep(gpus, h100.options, {}, [&](std::string_view line) {
        lines.push_back(nlohmann::json::parse(line));
        return absl::OkStatus();
      });
  ASSERT_THAT(summary, IsOk());
  ASSERT_EQ(lines.size(), 16u);
  for (int64_t i = 0; i < 16; ++i) {
    const nlohmann::json& line = lines[static_cast<size_t>(i)];
    EXPECT_EQ(line["index"], i);
    EXPECT_EQ(line["gpu_arch"], i < 8 ? "h100-sxm" : "mi300x") << i;
    EXPECT_EQ(line["network"], i % 8 < 4 ? "builtin" : "node.json") << i;
  }
  // Point 9: MI300X, builtin network, its second layout.
  Scenario s = mi300x.base;
  ApplyCandidate(mi300x.candidates[1], s.training.moe_imbalance, s);
  absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
  ASSERT_THAT(set, IsOk());
  absl::StatusOr<Projection> p = Project(s, RefsOf(*set));
  ASSERT_THAT(p, IsOk());
  EXPECT_THAT(lines[9]["tokens_per_s_per_gpu"].get<double>(),
              IsNearRel(p->tokens_per_s_per_gpu, 1e-12));
  const nlohmann::json header = SweepHeader(gpus, h100.options);
  ASSERT_EQ(header["sweep"]["gpus"].size(), 2u);
  EXPECT_EQ(header["sweep"]["gpus"][1]["gpu_arch"], "mi300x");
  EXPECT_EQ(header["sweep"]["gpus"][1]["candidates"].size(), 4u);
  EXPECT_EQ(header["sweep"]["points"], 16);
}

// The same lines in the same order on one worker and on three.
TEST(SweepTest, TheLinesDoNotDependOnTheThreads) {
  Fixture one = SmallSweep();
  one.options.threads = 1;
  Fixture three = SmallSweep();
  three.options.threads = 3;
  std::vector<nlohmann::json> a, b;
  ASSERT_THAT(RunAll(one, {}, a), IsOk());
  ASSERT_THAT(RunAll(three, {}, b), IsOk());
  ASSERT_EQ(a.size(), 8u);
  EXPECT_EQ(a, b);
}

// A sink that fails stops the sweep with its error.
TEST(SweepTest, AWriteErrorStopsTheSweep) {
  Fixture f = SmallSweep();
  f.options.threads = 2;
  int64_t written = 0;
  absl::StatusOr<SweepSummary> summary =
      RunSweep(f.Gpus(), f.options, {}, [&](std::string_view) {
        return ++written == 3 ? absl::InternalError("disk full") : absl::OkStatus();
      });
  EXPECT_THAT(summary, StatusIs(absl::StatusCode::kInternal, HasSubstr("disk full")));
  EXPECT_EQ(written, 3);
}

// Resumed with points 0, 1 and 4 done: only 2, 3, 5, 6 and 7 are evaluated, and the summary
// counts all eight.
TEST(SweepTest, AResumedSweepEvaluatesOnlyWhatItsFileLacks) {
  const Fixture f = SmallSweep();
  std::vector<nlohmann::json> all;
  ASSERT_THAT(RunAll(f, {}, all), IsOk());
  SweepPoints done;
  for (const int64_t i : {0, 1, 4}) done.emplace(i, all[static_cast<size_t>(i)]);
  std::vector<nlohmann::json> rest;
  absl::StatusOr<SweepSummary> summary = RunAll(f, done, rest);
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->evaluated, 5);
  EXPECT_EQ(summary->resumed, 3);
  ASSERT_EQ(rest.size(), 5u);
  const std::vector<size_t> evaluated = {2, 3, 5, 6, 7};
  for (size_t k = 0; k < rest.size(); ++k) EXPECT_EQ(rest[k], all[evaluated[k]]) << k;
}

// A file: its header and two points, then a third cut short. Read back, the two points and the
// bytes of the whole lines; the same file is another sweep's for a different space.
TEST(SweepTest, ASweepFileIsReadBackAndAnotherSweepsIsRefused) {
  const Fixture f = SmallSweep();
  std::vector<nlohmann::json> lines;
  ASSERT_THAT(RunAll(f, {}, lines), IsOk());
  const nlohmann::json header = SweepHeader(f.Gpus(), f.options);
  const std::string path = ::testing::TempDir() + "/sweep_test.jsonl";
  const std::string whole = header.dump() + "\n" + lines[0].dump() + "\n" + lines[1].dump() + "\n";
  {
    std::ofstream out(path, std::ios::trunc);
    out << whole << lines[2].dump().substr(0, 20);
  }
  absl::StatusOr<SweepFile> file = ReadSweepFile(path, header);
  ASSERT_THAT(file, IsOk());
  EXPECT_EQ(file->points.size(), 2u);
  EXPECT_EQ(file->whole_bytes, whole.size());
  EXPECT_EQ(file->points.at(1), lines[1]);
  Fixture other = SmallSweep();
  other.space.tp = {2};
  other.candidates = EnumerateCandidates(other.base, other.space);
  EXPECT_THAT(
      ReadSweepFile(path, SweepHeader(other.Gpus(), other.options)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("was written by another sweep")));
  EXPECT_THAT(ReadSweepFile(path + ".missing", header),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("--resume: cannot read")));
  std::remove(path.c_str());
}

// At the high level of detail a point's step is the event replay's; under a memory limit below
// every layout's peak each point is recorded as not fitting, without a step.
TEST(SweepTest, HighLevelPointsAreReplayedAndPointsAboveTheLimitHaveNoStep) {
  const Fixture high = SmallSweep(/*high=*/true);
  std::vector<nlohmann::json> lines;
  ASSERT_THAT(RunAll(high, {}, lines), IsOk());
  Scenario s = high.base;
  ApplyCandidate(high.candidates[0], high.base.training.moe_imbalance, s);
  absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
  ASSERT_THAT(set, IsOk());
  absl::StatusOr<HighLodResult> r = ProjectAtHighLod(s, RefsOf(*set));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(lines[0]["lod"], "high");
  EXPECT_THAT(lines[0]["step_time_s"].get<double>(), IsNearRel(r->step_time.value(), 1e-12));

  Fixture tight = SmallSweep();
  tight.memory_limit = Gibibytes(1);
  std::vector<nlohmann::json> over;
  absl::StatusOr<SweepSummary> summary = RunAll(tight, {}, over);
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->over_memory, 8);
  EXPECT_TRUE(summary->best.empty());
  for (const nlohmann::json& line : over) {
    EXPECT_FALSE(line["fits"].get<bool>());
    EXPECT_TRUE(line["step_time_s"].is_null());
  }
}

}  // namespace
}  // namespace projector
