// Invariants of the MoE projection on the library's Qwen3-30B-A3B with the real simulate
// backends (tile GEMM, roofline memory, hierarchical collectives) on an H100 profile: what any
// MoE model must satisfy, whatever the constants.
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

Scenario Qwen3MoeOn16(const char* extra_flag = nullptr, const char* extra_value = nullptr) {
  FlagValues flags = GivenFlags({{"model", "qwen3-30b-a3b"},
                                 {"gpu-arch", "h100-sxm"},
                                 {"num-gpus", "16"},
                                 {"ep", "8"},
                                 {"seq-len", "4096"},
                                 {"micro-batch", "1"},
                                 {"global-batch", "64"}});
  if (extra_flag != nullptr) flags.Add(extra_flag, extra_value);
  absl::StatusOr<Scenario> s = ScenarioFromFlags(flags);
  EXPECT_THAT(s, IsOk());
  return *s;
}

double Tgs(const Scenario& s) {
  absl::StatusOr<BackendSet> set = MakeBackendSet(s.backends, s.hw);
  EXPECT_THAT(set, IsOk());
  const BackendRefs refs{*set->gemm, *set->attention, *set->memory, *set->collective};
  absl::StatusOr<Projection> p = Project(s, refs);
  EXPECT_THAT(p, IsOk());
  return p.ok() ? p->tokens_per_s_per_gpu : 0.0;
}

// More experts at the same active parameters (top_k and the expert size kept, the experts
// spread over the same EP ranks): fewer rows per expert, more expert GEMMs and host calls, a
// larger router: never faster.
TEST(MoeInvariantsTest, MoreExpertsAtTheSameActiveParametersAreNeverFaster) {
  Scenario s = Qwen3MoeOn16();
  double previous = 0;
  for (int64_t experts : {32, 64, 128, 256}) {
    s.model.moe->num_experts = experts;
    const double tgs = Tgs(s);
    ASSERT_GT(tgs, 0.0) << experts;
    if (previous > 0) {
      EXPECT_LE(tgs, previous * (1 + 1e-12)) << experts << " experts";
    }
    previous = tgs;
  }
}

// Routing that sends the busiest EP rank more than its share is never faster than balanced.
TEST(MoeInvariantsTest, BalancedRoutingIsNeverSlowerThanImbalanced) {
  Scenario s = Qwen3MoeOn16();
  double previous = 0;
  for (double imbalance : {1.0, 1.2, 1.5, 2.0}) {
    s.training.moe_imbalance = imbalance;
    const double tgs = Tgs(s);
    ASSERT_GT(tgs, 0.0) << imbalance;
    if (previous > 0) {
      EXPECT_LE(tgs, previous * (1 + 1e-12)) << imbalance;
    }
    previous = tgs;
  }
}

// The host costs time only where the GPU waits: padding to capacity removes the dropless
// layer's sync, CUDA graphs remove the host cost altogether, and neither is slower.
TEST(MoeInvariantsTest, HostSyncAndCudaGraphsOrderTheThroughput) {
  Scenario dropless = Qwen3MoeOn16();
  Scenario padded = dropless;
  padded.training.moe_capacity_factor = 1.0;
  padded.training.moe_pad_to_capacity = true;
  Scenario graphs = padded;
  graphs.training.cuda_graphs = true;
  const double t_dropless = Tgs(dropless), t_padded = Tgs(padded), t_graphs = Tgs(graphs);
  EXPECT_GT(t_padded, t_dropless);
  EXPECT_GE(t_graphs, t_padded);
}

// A slower host (Grace's 37.1 µs per op against x86's 13.5) never speeds a run up.
TEST(MoeInvariantsTest, SlowerHostIsNeverFaster) {
  Scenario s = Qwen3MoeOn16();
  const double fast = Tgs(s);
  s.hw.gpu.host_op_dispatch = Microseconds(37.1);
  EXPECT_LT(Tgs(s), fast);
}

}  // namespace
}  // namespace projector
