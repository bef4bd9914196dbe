// The event replay of a step (--lod high) against the analytical projection (medium): without
// contention the two are the same schedule, so the step time and the pipeline makespan agree to
// rounding, for every schedule and for P2P on its own stream or as a rendezvous.
#include "studies/lod_high.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_registry.h"
#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/scenario_flags.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

// The flags' scenario, projected at the high level of detail.
absl::StatusOr<HighLodResult> High(const std::vector<std::pair<const char*, const char*>>& given) {
  PROJECTOR_ASSIGN_OR_RETURN(const Scenario s, ScenarioFromFlags(GivenFlags(given)));
  PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(s.backends, s.hw));
  return ProjectAtHighLod(s, RefsOf(set));
}

struct Layout {
  std::string name;
  std::vector<std::pair<const char*, const char*>> flags;
};

TEST(HighLodTest, WithoutContentionTheEventReplayIsTheMediumStep) {
  const std::vector<Layout> layouts = {
      {"one stage, DP 8", {{"num-gpus", "8"}}},
      {"1F1B, rendezvous P2P across nodes",
       {{"num-gpus", "32"}, {"pp", "4"}, {"tp", "8"}, {"global-batch", "16"}}},
      {"interleaved, P2P on its own stream",
       {{"num-gpus", "32"}, {"pp", "4"}, {"vpp", "2"}, {"tp", "8"}, {"global-batch", "16"}}},
      {"zero bubble",
       {{"num-gpus", "16"},
        {"pp", "4"},
        {"tp", "4"},
        {"global-batch", "16"},
        {"pipeline-schedule", "zb-h1"}}},
      {"DP tail and distributed optimizer",
       {{"num-gpus", "64"}, {"pp", "2"}, {"tp", "8"}, {"global-batch", "32"}}},
  };
  for (const Layout& l : layouts) {
    std::vector<std::pair<const char*, const char*>> flags = {
        {"model", "llama3.1-8b"}, {"gpu-arch", "h100-sxm"}, {"seq-len", "4096"}};
    flags.insert(flags.end(), l.flags.begin(), l.flags.end());
    absl::StatusOr<HighLodResult> r = High(flags);
    ASSERT_THAT(r, IsOk()) << l.name;
    EXPECT_THAT(r->pipeline_time.value(), IsNearRel(r->medium.pipeline_time.value(), 1e-9))
        << l.name;
    EXPECT_THAT(r->step_time.value(), IsNearRel(r->medium.step_time.value(), 1e-9)) << l.name;
    EXPECT_NEAR(r->DifferencePct(), 0.0, 1e-6) << l.name;
    EXPECT_GT(r->events, 0) << l.name;
    EXPECT_EQ(r->events, r->tasks) << l.name;
    ASSERT_EQ(r->resource_use.size(), static_cast<size_t>(r->resources)) << l.name;
    for (const ResourceUse& u : r->resource_use) {
      EXPECT_LE(u.busy.value(), r->step_time.value() * (1 + 1e-12)) << l.name << " " << u.name;
    }
    // One stage: its stream runs passes and tail back to back, busy the whole step.
    if (r->resources == 1) {
      EXPECT_THAT(r->resource_use[0].busy.value(), IsNearRel(r->step_time.value(), 1e-9));
    }
  }
}

// The pass count the replay takes: a 1F1B step of pp 4 and 8 micro-batches holds 4 · 8 · 2
// passes, 3 · 8 · 2 rendezvous receives (every pass but stage 0's forwards and stage 3's
// backwards waits for a neighbour) and 4 tails: 116 tasks on 4 streams.
TEST(HighLodTest, CountsItsTasksAndResources) {
  absl::StatusOr<HighLodResult> r = High({{"model", "llama3.1-8b"},
                                          {"gpu-arch", "h100-sxm"},
                                          {"num-gpus", "32"},
                                          {"pp", "4"},
                                          {"tp", "8"},
                                          {"seq-len", "4096"},
                                          {"global-batch", "8"}});
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->medium.micro_batches, 8);
  EXPECT_EQ(r->resources, 4);
  EXPECT_EQ(r->tasks, 4 * 8 * 2 + 3 * 8 * 2 + 4);
}

// A straggler. On one pipeline stage (pp 1, DP 8) every pass runs on the slow rank's stream back
// to back, so a factor F adds (F − 1) · the passes' time and leaves the tail: step' = step +
// (F − 1) · pipeline. Factor 1 changes nothing. Global rank 31 of TP8 · PP4 sits on stage
// 31 / 8 = 3.
TEST(HighLodTest, AStragglerSlowsItsStageAndTheStepWaitsForIt) {
  auto run = [](std::vector<std::pair<const char*, const char*>> flags,
                std::optional<SlowRank> slow) -> absl::StatusOr<HighLodResult> {
    PROJECTOR_ASSIGN_OR_RETURN(const Scenario s, ScenarioFromFlags(GivenFlags(flags)));
    PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(s.backends, s.hw));
    return ProjectAtHighLod(s, RefsOf(set), {}, slow);
  };
  const std::vector<std::pair<const char*, const char*>> one_stage = {{"model", "llama3.1-8b"},
                                                                      {"gpu-arch", "h100-sxm"},
                                                                      {"num-gpus", "8"},
                                                                      {"seq-len", "4096"},
                                                                      {"global-batch", "32"}};
  absl::StatusOr<HighLodResult> twice = run(one_stage, SlowRank{.rank = 3, .factor = 2});
  ASSERT_THAT(twice, IsOk());
  EXPECT_EQ(twice->slow_stage, 0);
  EXPECT_THAT(twice->step_time.value(), IsNearRel(twice->step_time_without_straggler.value() +
                                                      twice->medium.pipeline_time.value(),
                                                  1e-9));
  absl::StatusOr<HighLodResult> same = run(one_stage, SlowRank{.rank = 3, .factor = 1});
  ASSERT_THAT(same, IsOk());
  EXPECT_THAT(same->step_time.value(), IsNearRel(same->medium.step_time.value(), 1e-9));
  EXPECT_NEAR(same->StragglerSlowdownPct(), 0.0, 1e-9);

  absl::StatusOr<HighLodResult> last = run({{"model", "llama3.1-8b"},
                                            {"gpu-arch", "h100-sxm"},
                                            {"num-gpus", "32"},
                                            {"pp", "4"},
                                            {"tp", "8"},
                                            {"seq-len", "4096"},
                                            {"global-batch", "16"}},
                                           SlowRank{.rank = 31, .factor = 1.5});
  ASSERT_THAT(last, IsOk());
  EXPECT_EQ(last->slow_stage, 3);
  EXPECT_GT(last->step_time, last->step_time_without_straggler);
  EXPECT_GT(last->StragglerSlowdownPct(), 0.0);

  EXPECT_THAT(run(one_stage, SlowRank{.rank = 8, .factor = 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--slow-rank: rank 8 does not exist; the ranks are 0 to 7")));
  EXPECT_THAT(run(one_stage, SlowRank{.rank = 0, .factor = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--slow-rank: the factor must be a finite number > 0")));
}

TEST(HighLodTest, AStepBeyondTheReplayBudgetIsRefusedNamingTheFlag) {
  EXPECT_THAT(High({{"model", "llama3.1-8b"},
                    {"gpu-arch", "h100-sxm"},
                    {"num-gpus", "8"},
                    {"pp", "8"},
                    {"seq-len", "2048"},
                    {"global-batch", "125000"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--lod high: the step replays 2000000 passes")));
}

}  // namespace
}  // namespace projector
