#include "serving/pass_events.h"

#include <memory>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "tests/testing/serving_fixtures.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;

Deployment Llama8b(int64_t tp, int64_t pp) {
  return testing::LibraryDeployment("llama3.1-8b", "h100-sxm", tp, pp);
}

// A pass mixing a prefill chunk and 12 decodes.
BatchPass Mixed() {
  BatchPass p;
  p.prefills.push_back({.new_tokens = 300, .context = 700});
  p.decode_sequences = 12;
  p.decode_kv_tokens = 12 * 1500;
  p.emitting = 12;
  return p;
}

// Without a straggler every task lasts what the medium level gives it and the ring steps of an
// all-reduce add up to it, so both levels give the same stage times.
TEST(EventPassTimerTest, HighEqualsMediumWithoutStragglers) {
  for (const auto& [tp, pp] : {std::pair{1, 1}, std::pair{4, 1}, std::pair{2, 2}}) {
    std::unique_ptr<PassCostModel> cost = *PassCostModel::Make(Llama8b(tp, pp));
    std::vector<Seconds> medium(static_cast<size_t>(pp)), high(static_cast<size_t>(pp));
    ASSERT_THAT(cost->StageTimes(Mixed(), medium), IsOk());
    EventPassTimer timer(*cost);
    ASSERT_THAT(timer.StageTimes(Mixed(), high), IsOk());
    for (size_t s = 0; s < medium.size(); ++s) {
      EXPECT_NEAR(high[s].value(), medium[s].value(), 1e-9 * medium[s].value())
          << "tp " << tp << " pp " << pp << " stage " << s;
    }
  }
}

// Events of one TP2 pass over Llama-3.1-8B's 32 layers: per layer and rank, the attention
// block, one prefill chunk, the decode attention and the MLP block (4 x 2 x 32 = 256); per
// layer, two all-reduces of 2(2 - 1) ring steps from each of the 2 ranks (8 x 32 = 256); the
// embedding and head task on each rank (2): 514.
TEST(EventPassTimerTest, EventsPerLayerAndRingStep) {
  std::unique_ptr<PassCostModel> cost = *PassCostModel::Make(Llama8b(2, 1));
  EventPassTimer timer(*cost);
  std::vector<Seconds> out(1);
  ASSERT_THAT(timer.StageTimes(Mixed(), out), IsOk());
  EXPECT_EQ(timer.events(), 514);
}

// A straggler on TP2 computing f times as long: every ring step waits for it, so the stage
// takes f x its compute plus the all-reduces: high(f) = f x (medium - all-reduces) +
// all-reduces, with 2 all-reduces per layer.
TEST(EventPassTimerTest, StragglerStretchesComputeNotTheAllReduces) {
  std::unique_ptr<PassCostModel> cost = *PassCostModel::Make(Llama8b(2, 1));
  std::vector<Seconds> medium(1), high(1);
  ASSERT_THAT(cost->StageTimes(Mixed(), medium), IsOk());
  const PassCostModel::LayerParts parts = *cost->Parts(Mixed().NewTokens(), false);
  const double all_reduces = 32 * 2 * parts.all_reduce.value();
  EventPassTimer timer(*cost, SlowGpu{.gpu = 1, .factor = 1.5});
  ASSERT_THAT(timer.StageTimes(Mixed(), high), IsOk());
  EXPECT_NEAR(high[0].value(), 1.5 * (medium[0].value() - all_reduces) + all_reduces,
              1e-9 * medium[0].value());
}

}  // namespace
}  // namespace projector
