// Pass plans (projection/pass_plan.h): a chunk's passes as its layers' modules and collectives in
// execution order, each module with the time the layer composer gave it and each dimension's
// collectives sharing the layer's exposed time of it.
#include "projection/pass_plan.h"

#include <string>
#include <string_view>
#include <utility>
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
using ::projector::testing::IsNearRel;
using ::projector::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

using Flags = std::vector<std::pair<const char*, const char*>>;

Projection ProjectWithPlans(const Flags& flags) {
  absl::StatusOr<Scenario> s = ScenarioFromFlags(GivenFlags(flags));
  EXPECT_THAT(s, IsOk());
  absl::StatusOr<BackendSet> set = MakeBackendSet(s->backends, s->hw);
  EXPECT_THAT(set, IsOk());
  absl::StatusOr<Projection> p =
      Project(*s, RefsOf(*set), {.keep_timeline = true, .keep_pass_plans = true});
  EXPECT_THAT(p, IsOk());
  return *p;
}

// The segments' names, and those of one layer.
std::vector<std::string_view> Names(const std::vector<PassSegment>& segments, int32_t layer) {
  std::vector<std::string_view> names;
  for (const PassSegment& s : segments) {
    if (s.layer == layer) names.push_back(s.name);
  }
  return names;
}

const ModuleTimes& Module(const LayerKindTimes& kind, std::string_view name) {
  for (const ModuleTimes& m : kind.modules) {
    if (m.module == name) return m;
  }
  ADD_FAILURE() << "no module " << name;
  return kind.modules.front();
}

// Sum of the segments of `layer` whose dimension is `dim` (kNone: compute).
Seconds Sum(const std::vector<PassSegment>& segments, int32_t layer, CommDim dim) {
  Seconds sum;
  for (const PassSegment& s : segments) {
    if (s.layer == layer && s.dim == dim) sum += s.time;
  }
  return sum;
}

// Llama-3.1-8B, TP8 PP4 (8 layers a stage), no sequence parallelism: Megatron all-reduces each
// block's output over TP after it (forward) and each block's input gradient after its backward.
// Stage 1's forward is layers 8 to 15, each attention, its all-reduce, the norms, the MLP, its
// all-reduce; its backward the same layers in reverse, modules reversed. Each module's segment
// is its forward (backward) time; the two all-reduces of a layer share its exposed TP time by
// their full times (equal messages: half each). Stage 0 starts with the embedding, stage 3's
// backward with the output layer.
TEST(PassPlanTest, ADenseLayerIsItsModulesWithEachAllReduceAfterItsBlock) {
  const Projection p = ProjectWithPlans({{"model", "llama3.1-8b"},
                                         {"gpu-arch", "h100-sxm"},
                                         {"num-gpus", "32"},
                                         {"pp", "4"},
                                         {"tp", "8"},
                                         {"seq-len", "4096"},
                                         {"global-batch", "8"}});
  ASSERT_EQ(p.chunk_plans.size(), 4u);
  const ChunkPlan& stage1 = p.chunk_plans[1];
  EXPECT_EQ(stage1.units, 8);
  ASSERT_EQ(stage1.forward.size(), 8u * 5u);
  for (int32_t layer = 8; layer < 16; ++layer) {
    EXPECT_THAT(Names(stage1.forward, layer),
                ElementsAre("attention", "tp_allreduce", "norms", "mlp", "tp_allreduce"))
        << layer;
  }
  EXPECT_EQ(stage1.forward.front().layer, 8);
  EXPECT_EQ(stage1.backward.front().layer, 15);
  EXPECT_EQ(stage1.backward.back().layer, 8);
  const LayerKindTimes& dense = p.layer_kinds.front();
  std::vector<std::string_view> backward_compute;
  for (const PassSegment& s : stage1.backward) {
    if (s.layer == 12 && s.dim == CommDim::kNone) backward_compute.push_back(s.name);
  }
  EXPECT_THAT(backward_compute, ElementsAre("mlp", "norms", "attention"));
  for (const PassSegment& s : stage1.forward) {
    if (s.dim == CommDim::kNone) {
      EXPECT_THAT(s.time.value(), IsNearRel(Module(dense, s.name).forward.value(), 1e-12));
    } else {
      EXPECT_EQ(s.dim, CommDim::kTp);
      EXPECT_EQ(s.kind, CollectiveKind::kAllReduce);
      EXPECT_THAT(s.time.value(), IsNearRel(Module(dense, "tp_comm").forward.value() / 2, 1e-12));
    }
  }
  EXPECT_THAT(Sum(stage1.backward, 9, CommDim::kTp).value(),
              IsNearRel(Module(dense, "tp_comm").backward.value(), 1e-12));
  EXPECT_THAT(Sum(stage1.backward, 9, CommDim::kNone).value(),
              IsNearRel((Module(dense, "attention").backward + Module(dense, "norms").backward +
                         Module(dense, "mlp").backward)
                            .value(),
                        1e-12));
  // The end modules: their compute, then their vocab-parallel collectives as one all-reduce.
  EXPECT_THAT(Names(p.chunk_plans[0].forward, -1), ElementsAre("embedding", "embedding_tp"));
  EXPECT_THAT((Sum(p.chunk_plans[0].forward, -1, CommDim::kNone) +
               Sum(p.chunk_plans[0].forward, -1, CommDim::kTp))
                  .value(),
              IsNearRel(p.embedding.forward.value(), 1e-12));
  EXPECT_EQ(p.chunk_plans[0].units, 9);  // the embedding and 8 layers
  EXPECT_THAT(Names(p.chunk_plans[3].backward, -1), ElementsAre("output", "output_tp"));
  EXPECT_EQ(p.chunk_plans[3].backward.front().name, "output");
  EXPECT_THAT((Sum(p.chunk_plans[3].backward, -1, CommDim::kNone) +
               Sum(p.chunk_plans[3].backward, -1, CommDim::kTp))
                  .value(),
              IsNearRel(p.output_layer.backward.value(), 1e-12));
}

// Sequence parallelism: each block gathers its input over TP before it and reduce-scatters its
// output after it, in forward.
TEST(PassPlanTest, SequenceParallelGathersBeforeEachBlockAndReduceScattersAfter) {
  const Projection p = ProjectWithPlans({{"model", "llama3.1-8b"},
                                         {"gpu-arch", "h100-sxm"},
                                         {"num-gpus", "8"},
                                         {"tp", "8"},
                                         {"sequence-parallel", "true"},
                                         {"seq-len", "4096"},
                                         {"global-batch", "8"}});
  ASSERT_EQ(p.chunk_plans.size(), 1u);
  EXPECT_THAT(Names(p.chunk_plans[0].forward, 3),
              ElementsAre("sp_allgather", "attention", "sp_reducescatter", "norms", "sp_allgather",
                          "mlp", "sp_reducescatter"));
  const LayerKindTimes& dense = p.layer_kinds.front();
  EXPECT_THAT(Sum(p.chunk_plans[0].forward, 3, CommDim::kTp).value(),
              IsNearRel(Module(dense, "tp_comm").forward.value(), 1e-12));
}

// A MoE layer with EP8 (Qwen3-30B-A3B, Megatron's All-to-All dispatcher, dropless): the token
// counts are gathered over EP and the tokens dispatched before the experts and combined after
// them. The op that times dispatch and combine as one (repeat 2) is split in halves, so the
// dispatch and the combine are equal; with the count gather they make the layer's exposed EP
// time.
TEST(PassPlanTest, AMoeLayerDispatchesBeforeItsExpertsAndCombinesAfter) {
  const Projection p = ProjectWithPlans({{"model", "qwen3-30b-a3b"},
                                         {"gpu-arch", "h100-sxm"},
                                         {"num-gpus", "16"},
                                         {"ep", "8"},
                                         {"seq-len", "4096"},
                                         {"global-batch", "64"}});
  ASSERT_EQ(p.chunk_plans.size(), 1u);
  const std::vector<PassSegment>& forward = p.chunk_plans[0].forward;
  EXPECT_THAT(Names(forward, 5), ElementsAre("attention", "norms", "ep_count_gather",
                                             "ep_dispatch_combine", "moe", "ep_dispatch_combine"));
  std::vector<const PassSegment*> a2a;
  for (const PassSegment& s : forward) {
    if (s.layer == 5 && s.kind == CollectiveKind::kAllToAll) a2a.push_back(&s);
  }
  ASSERT_EQ(a2a.size(), 2u);
  EXPECT_EQ(a2a[0]->time, a2a[1]->time);
  EXPECT_EQ(a2a[0]->dim, CommDim::kEp);
  const LayerKindTimes& moe = p.layer_kinds.front();
  ASSERT_TRUE(moe.is_moe);
  EXPECT_THAT(Sum(forward, 5, CommDim::kEp).value(),
              IsNearRel(Module(moe, "ep_comm").forward.value(), 1e-12));
  EXPECT_THAT(Names(p.chunk_plans[0].backward, 5),
              ElementsAre("ep_dispatch_combine_grad", "moe", "ep_dispatch_combine_grad", "norms",
                          "attention"));
}

// Full recompute of every layer: before its backward, each layer runs its forward again
// (modules in forward order, their recompute times) with the forward's collectives at the
// layer's recompute exposure. The plan's backward of a layer then sums to the layer's backward
// and recompute.
TEST(PassPlanTest, FullRecomputeRunsEachLayersForwardAgainBeforeItsBackward) {
  const Projection p = ProjectWithPlans({{"model", "llama3.1-8b"},
                                         {"gpu-arch", "h100-sxm"},
                                         {"num-gpus", "8"},
                                         {"tp", "8"},
                                         {"recompute", "full"},
                                         {"seq-len", "4096"},
                                         {"global-batch", "8"}});
  const std::vector<PassSegment>& backward = p.chunk_plans[0].backward;
  EXPECT_THAT(Names(backward, 7),
              ElementsAreArray({"attention", "tp_allreduce", "norms", "mlp", "tp_allreduce", "mlp",
                                "tp_allreduce_grad", "norms", "attention", "tp_allreduce_grad"}));
  const LayerKindTimes& dense = p.layer_kinds.front();
  Seconds compute, tp;
  for (const ModuleTimes& m : dense.modules) {
    if (m.module == "tp_comm") {
      tp = m.backward + m.recompute;
    } else if (m.module != "host") {
      compute += m.backward + m.recompute;
    }
  }
  EXPECT_THAT(Sum(backward, 7, CommDim::kNone).value(), IsNearRel(compute.value(), 1e-12));
  EXPECT_THAT(Sum(backward, 7, CommDim::kTp).value(), IsNearRel(tp.value(), 1e-12));
}

}  // namespace
}  // namespace projector
