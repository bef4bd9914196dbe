// ComposeModel reads a layout only through CompositionKeyOf: a model composed for one layout
// projects every layout of the same key exactly as that layout's own composition does. Checked
// on a MoE model with fp8 (the quantised weight casts read the micro-batches) and a dense one,
// with the real simulate backends.
#include <string>
#include <vector>

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "projection/projection.h"
#include "scenario/scenario_flags.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsOk;

Scenario ScenarioOf(std::vector<std::pair<const char*, const char*>> given) {
  FlagValues flags;
  for (const auto& [name, value] : given) flags.Add(name, value);
  absl::StatusOr<Scenario> s = ScenarioFromFlags(flags);
  EXPECT_THAT(s, IsOk());
  return *s;
}

// Projects `layout` with the model `donor` composed and with its own: the same step, bound
// and memory to the last bit.
void ExpectSharedCompositionMatches(const Scenario& donor, const Scenario& layout) {
  ASSERT_EQ(CompositionKeyOf(donor), CompositionKeyOf(layout));
  absl::StatusOr<BackendSet> set = MakeBackendSet(layout.backends, layout.hw);
  ASSERT_THAT(set, IsOk());
  const BackendRefs refs = RefsOf(*set);
  absl::StatusOr<ComposedModel> composed = ComposeModel(donor, refs);
  ASSERT_THAT(composed, IsOk());
  absl::StatusOr<Projection> shared = Project(layout, refs, *composed);
  absl::StatusOr<Projection> own = Project(layout, refs);
  ASSERT_THAT(shared, IsOk());
  ASSERT_THAT(own, IsOk());
  EXPECT_EQ(shared->step_time.value(), own->step_time.value()) << own->layout;
  EXPECT_EQ(shared->peak_memory_per_gpu.value(), own->peak_memory_per_gpu.value());
  EXPECT_EQ(shared->breakdown.exposed_ep_comm.value(), own->breakdown.exposed_ep_comm.value());
}

TEST(CompositionKeyTest, MoeLayoutsDifferingInVppSplitAndOptimizerShareTheModel) {
  const Scenario donor = ScenarioOf({{"model", "qwen3-30b-a3b"},
                                     {"gpu-arch", "h100-sxm"},
                                     {"num-gpus", "32"},
                                     {"tp", "2"},
                                     {"pp", "4"},
                                     {"ep", "8"},
                                     {"seq-len", "4096"},
                                     {"global-batch", "64"},
                                     {"precision", "fp8"},
                                     {"distributed-optimizer", "false"}});
  // Interleaved, with the distributed optimizer.
  ExpectSharedCompositionMatches(donor, ScenarioOf({{"model", "qwen3-30b-a3b"},
                                                    {"gpu-arch", "h100-sxm"},
                                                    {"num-gpus", "32"},
                                                    {"tp", "2"},
                                                    {"pp", "4"},
                                                    {"vpp", "2"},
                                                    {"ep", "8"},
                                                    {"seq-len", "4096"},
                                                    {"global-batch", "64"},
                                                    {"precision", "fp8"},
                                                    {"distributed-optimizer", "true"}}));
  // An uneven split: 48 layers as 10 / 14 / 14 / 10.
  ExpectSharedCompositionMatches(donor, ScenarioOf({{"model", "qwen3-30b-a3b"},
                                                    {"gpu-arch", "h100-sxm"},
                                                    {"num-gpus", "32"},
                                                    {"tp", "2"},
                                                    {"pp", "4"},
                                                    {"first-stage-layers", "10"},
                                                    {"last-stage-layers", "10"},
                                                    {"ep", "8"},
                                                    {"seq-len", "4096"},
                                                    {"global-batch", "64"},
                                                    {"precision", "fp8"},
                                                    {"distributed-optimizer", "false"}}));
}

// A deeper pipeline (fewer DP ranks, more micro-batches per step) composes the same model, in
// fp8 too: the weight casts run once per step whatever the micro-batch count.
TEST(CompositionKeyTest, PipelineDepthBeyondHavingOneDoesNotEnterTheKey) {
  auto of = [](const char* pp, const char* precision) {
    return ScenarioOf({{"model", "llama3.1-8b"},
                       {"gpu-arch", "h100-sxm"},
                       {"num-gpus", "16"},
                       {"tp", "2"},
                       {"pp", pp},
                       {"seq-len", "4096"},
                       {"global-batch", "64"},
                       {"precision", precision}});
  };
  for (const char* precision : {"fp8", "bf16"}) {
    EXPECT_EQ(CompositionKeyOf(of("2", precision)), CompositionKeyOf(of("4", precision)));
    ExpectSharedCompositionMatches(of("2", precision), of("4", precision));
  }
  // Without a pipeline, tied embeddings and the stack read pp: another key.
  EXPECT_NE(CompositionKeyOf(of("1", "bf16")), CompositionKeyOf(of("2", "bf16")));
}

}  // namespace
}  // namespace projector
