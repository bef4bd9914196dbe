// The --lod high section and trace of a projection report.
#include "report/lod_report.h"

#include <map>
#include <string>

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scenario/scenario_flags.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsOk;
using ::testing::HasSubstr;

// Interleaved 1F1B on pp 4, vpp 2, 16 micro-batches: the overlapped transfers run on links.
// Passes: 4 ranks · 2 chunks · 16 micro-batches · (F + B) = 256. Transfers: every forward but
// virtual stage 0's and every backward but stage 7's crosses to a neighbouring rank (with vpp 2
// on 4 ranks each stage's neighbour is on another rank): 2 · 16 · 7 = 224. Tails: 4. Tracks: 4
// rank streams and 8 link directions (the ring of stages wraps from rank 3 to rank 0).
TEST(LodReportTest, TheTraceHasAStreamPerRankAndALinkPerDirection) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(GivenFlags({{"model", "llama3.1-8b"},
                                                             {"gpu-arch", "h100-sxm"},
                                                             {"num-gpus", "32"},
                                                             {"pp", "4"},
                                                             {"vpp", "2"},
                                                             {"tp", "8"},
                                                             {"seq-len", "4096"},
                                                             {"global-batch", "16"}}));
  ASSERT_THAT(s, IsOk());
  absl::StatusOr<BackendSet> set = MakeBackendSet(s->backends, s->hw);
  ASSERT_THAT(set, IsOk());
  absl::StatusOr<HighLodResult> r = ProjectAtHighLod(*s, RefsOf(*set));
  ASSERT_THAT(r, IsOk());
  const nlohmann::json trace = HighLodTraceJson(*s, *r);
  std::map<std::string, int> by_cat;
  int threads = 0;
  std::map<std::string, int> counter_samples;
  int most_links_busy = 0;
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e["ph"] == "X") ++by_cat[e["cat"].get<std::string>()];
    if (e["name"] == "thread_name") ++threads;
    if (e["ph"] != "C") continue;
    ++counter_samples[e["name"].get<std::string>()];
    if (e["name"] == "links busy") {
      most_links_busy = std::max(most_links_busy, e["args"]["links"].get<int>());
    } else {
      const int n = e["args"]["transfers"].get<int>();
      EXPECT_TRUE(n == 0 || n == 1) << "a link carries one transfer at a time";
    }
  }
  // Link-use counters: a sample at each transfer's start and end, per link and over all links.
  EXPECT_EQ(counter_samples.size(), 8u + 1u);
  EXPECT_EQ(counter_samples["links busy"], 2 * 224);
  int per_link = 0;
  for (const auto& [name, samples] : counter_samples) {
    if (name != "links busy") per_link += samples;
  }
  EXPECT_EQ(per_link, 2 * 224);
  EXPECT_GE(most_links_busy, 2);
  EXPECT_LE(most_links_busy, 8);
  // The passes as their layers' pieces (projection/pass_plan.h): 32 layers on 8 chunks, 4 each;
  // a layer's pass is attention, norms and MLP (3 compute pieces) and an all-reduce after
  // each block (2 TP pieces); the embedding and the output add one compute piece to each pass
  // of their chunks, and a TP piece where they communicate: the embedding's forward all-reduce,
  // the output's cross-entropy all-reduces and its input gradient's (without sequence
  // parallelism the embedding's backward has none). 16 micro-batches: compute
  // 16 · (8 · 2 · 4 · 3 + 2 · 2) = 3136, TP 16 · (8 · 2 · 4 · 2 + 3) = 2096; with 224 transfers
  // and 4 tails, 5460 tasks.
  EXPECT_EQ(by_cat["pass"], 3136);
  EXPECT_EQ(by_cat["tp"], 2096);
  EXPECT_EQ(by_cat["p2p"], 224);
  EXPECT_EQ(by_cat["tail"], 4);
  EXPECT_EQ(threads, 4 + 8);
  EXPECT_THAT(HighLodText(*r),
              HasSubstr("events      5460 (5460 tasks on 12 streams and links)"));
  EXPECT_EQ(HighLodJson(*r)["events"], 5460);
  // 32 GPUs of TP8 · PP4: 4 pipeline ranks of 8 GPUs each.
  EXPECT_THAT(HighLodText(*r),
              HasSubstr("folded      32 GPUs as 4 pipeline ranks of 8 (their TP, CP and DP"));
  EXPECT_EQ(HighLodJson(*r)["gpus_per_rank"], 8);
  EXPECT_EQ(HighLodJson(*r)["resources_busy"].size(), 12u);
  EXPECT_THAT(HighLodText(*r), HasSubstr("busy        streams: rank 0 "));
  EXPECT_THAT(HighLodText(*r), HasSubstr("busiest links: rank "));
}

}  // namespace
}  // namespace projector
