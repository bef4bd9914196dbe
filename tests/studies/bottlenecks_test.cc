#include "studies/bottlenecks.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "projection/projection.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::IsOk;

// A library model on `num_gpus` H100; the layout and run are the caller's.
Scenario OnH100(const char* name, const char* model, int64_t num_gpus) {
  Scenario s;
  s.name = name;
  s.model = *ResolveModel(model);
  s.hw = *ResolveHardwareProfile("h100-sxm");
  s.num_gpus = num_gpus;
  return s;
}

// A MoE library model on `num_gpus` H100 with its experts over all of them (EP = DP = num_gpus),
// seq 4096.
Scenario ExpertParallelOnH100(const char* model, int64_t num_gpus, int64_t global_batch) {
  Scenario s = OnH100("moe", model, num_gpus);
  s.parallel.ep = num_gpus;
  s.parallel.dp = num_gpus;
  s.training.seq_len = 4096;
  s.training.global_batch = global_batch;
  return s;
}

// Llama-3.1-70B on one node of 8 H100, TP8 with sequence parallelism, PP1, seq 8192.
Scenario Llama70bTp8() {
  Scenario s = OnH100("b", "llama3.1-70b", 8);
  s.parallel.tp = 8;
  s.parallel.dp = 1;
  s.parallel.sequence_parallel = true;
  s.training.seq_len = 8192;
  s.training.global_batch = 8;
  s.training.recompute = Recompute::kFull;
  EXPECT_THAT(ResolveKernels(s, "test"), IsOk());
  return s;
}

Projection ProjectOf(const Scenario& s) {
  const BackendSet backends = *MakeBackendSet(s.backends, s.hw);
  absl::StatusOr<Projection> p = Project(s, RefsOf(backends));
  EXPECT_THAT(p, IsOk());
  return *p;
}

// A projection whose step of 1 s splits as given (the rest is compute), its peak at `memory` of
// the usable HBM and its MFU at `mfu`.
Projection Shaped(Projection p, double memory, double mfu,
                  std::initializer_list<std::pair<Seconds StepBreakdown::*, double>> shares) {
  p.step_time = Seconds(1);
  p.breakdown = StepBreakdown{};
  double rest = 1.0;
  for (const auto& [member, share] : shares) {
    p.breakdown.*member = Seconds(share);
    rest -= share;
  }
  p.breakdown.compute = Seconds(rest);
  p.peak_memory_per_gpu = p.memory.capacity * memory;
  p.mfu = mfu;
  return p;
}

std::optional<Bottleneck> Find(const std::vector<Bottleneck>& all, BottleneckKind kind) {
  for (const Bottleneck& b : all) {
    if (b.kind == kind) return b;
  }
  return std::nullopt;
}

// The recommendation `flags` of the `kind` bottleneck of `scenario`'s own projection, if offered.
std::optional<Reprojected> Offered(const Scenario& scenario, BottleneckKind kind,
                                   std::string_view flags) {
  absl::StatusOr<std::vector<Bottleneck>> all = AnalyzeBottlenecks(scenario, ProjectOf(scenario));
  EXPECT_THAT(all, IsOk());
  if (!all.ok()) return std::nullopt;
  const std::optional<Bottleneck> bottleneck = Find(*all, kind);
  if (!bottleneck) return std::nullopt;
  for (const Reprojected& r : bottleneck->recommendations) {
    if (r.flags == flags) return r;
  }
  return std::nullopt;
}

// The recommendation `flags` offered for `kind` on `s` gives exactly the TGS of `s` projected with
// `change` made, and more than `s` itself.
void ExpectOfferedAsReprojected(const Scenario& s, BottleneckKind kind, std::string_view flags,
                                const std::function<void(Scenario&)>& change) {
  const std::optional<Reprojected> r = Offered(s, kind, flags);
  ASSERT_TRUE(r.has_value()) << flags;
  Scenario changed = s;
  change(changed);
  EXPECT_DOUBLE_EQ(r->tokens_per_s_per_gpu, ProjectOf(changed).tokens_per_s_per_gpu) << flags;
  EXPECT_GT(r->tokens_per_s_per_gpu, ProjectOf(s).tokens_per_s_per_gpu) << flags;
}

// Each rule at its thresholds: high at the high threshold, medium just under it and at the
// medium threshold, absent just under that.
TEST(BottlenecksTest, EachRuleAtItsThresholds) {
  const Scenario s = Llama70bTp8();
  const Projection base = ProjectOf(s);
  struct Rule {
    BottleneckKind kind;
    Seconds StepBreakdown::*member;  // null: memory capacity
    double medium, high;
  };
  const Rule rules[] = {
      {BottleneckKind::kNetwork, &StepBreakdown::exposed_tp_comm, 0.15, 0.30},
      {BottleneckKind::kPipelineBubble, &StepBreakdown::pipeline_bubble, 0.05, 0.15},
      {BottleneckKind::kHost, &StepBreakdown::exposed_host, 0.03, 0.10},
      {BottleneckKind::kMemoryCapacity, nullptr, 0.90, 1.00},
  };
  for (const Rule& r : rules) {
    auto analyze = [&](double v) {
      const Projection p =
          r.member == nullptr ? Shaped(base, v, 0.5, {}) : Shaped(base, 0.5, 0.5, {{r.member, v}});
      absl::StatusOr<std::vector<Bottleneck>> all = AnalyzeBottlenecks(s, p);
      EXPECT_THAT(all, IsOk());
      return Find(*all, r.kind);
    };
    const std::string name(BottleneckKindName(r.kind));
    ASSERT_TRUE(analyze(r.high).has_value()) << name;
    EXPECT_EQ(analyze(r.high)->severity, Severity::kHigh) << name;
    EXPECT_DOUBLE_EQ(analyze(r.high)->value, r.high) << name;
    EXPECT_EQ(analyze(r.high - 1e-9)->severity, Severity::kMedium) << name;
    EXPECT_EQ(analyze(r.medium)->severity, Severity::kMedium) << name;
    EXPECT_FALSE(analyze(r.medium - 1e-9).has_value()) << name;
  }
  // Compute dominates from half the step; its severity is medium under 30% MFU.
  absl::StatusOr<std::vector<Bottleneck>> slow = AnalyzeBottlenecks(s, Shaped(base, 0.5, 0.29, {}));
  ASSERT_THAT(slow, IsOk());
  EXPECT_EQ(Find(*slow, BottleneckKind::kCompute)->severity, Severity::kMedium);
  absl::StatusOr<std::vector<Bottleneck>> fast = AnalyzeBottlenecks(s, Shaped(base, 0.5, 0.31, {}));
  EXPECT_EQ(Find(*fast, BottleneckKind::kCompute)->severity, Severity::kLow);
  absl::StatusOr<std::vector<Bottleneck>> split =
      AnalyzeBottlenecks(s, Shaped(base, 0.5, 0.5, {{&StepBreakdown::exposed_dp_comm, 0.51}}));
  EXPECT_FALSE(Find(*split, BottleneckKind::kCompute).has_value());
  // Most severe first.
  absl::StatusOr<std::vector<Bottleneck>> mixed = AnalyzeBottlenecks(
      s,
      Shaped(base, 0.5, 0.5,
             {{&StepBreakdown::pipeline_bubble, 0.06}, {&StepBreakdown::exposed_tp_comm, 0.31}}));
  ASSERT_THAT(mixed, IsOk());
  EXPECT_EQ(mixed->front().kind, BottleneckKind::kNetwork);
}

// The compute by class of kernel, by hand on an H100 (132 SMs · 4096 bf16 FLOP/clk · 1830 MHz =
// 989.39 TFLOP/s; fp8 twice that; HBM 3.35 TB/s): GEMMs 0.6 s at 500 TFLOP/s, attention 0.2 s at
// 400 TFLOP/s, memory-bound kernels 0.2 s at 2 TB/s give shares 60/20/20% of the compute. Under
// fp8 the GEMMs are judged against the fp8 peak, attention (bf16) against the bf16 one.
TEST(BottlenecksTest, ComputeSplitsByKernelClassAgainstEachPeak) {
  Scenario s = Llama70bTp8();
  Projection p;
  p.compute_by_class.gemm = {.time = Seconds(0.6), .flops = Flops(0.6 * 500e12), .bytes = Bytes(0)};
  p.compute_by_class.attention = {.time = Seconds(0.2), .flops = Flops(0.2 * 400e12),
                                  .bytes = Bytes(0)};
  p.compute_by_class.memory_bound = {.time = Seconds(0.2), .flops = Flops(0),
                                     .bytes = Bytes(0.2 * 2e12)};
  const double bf16_peak = 132.0 * 4096.0 * 1830e6 * 1e-12;
  std::vector<KernelClassUse> c = KernelClassUses(s, p);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].kernel_class, "gemm");
  EXPECT_DOUBLE_EQ(c[0].share, 0.6);
  EXPECT_DOUBLE_EQ(c[0].achieved, 500.0);
  EXPECT_NEAR(c[0].peak, bf16_peak, 1e-9);
  EXPECT_EQ(c[0].unit, "TFLOP/s");
  EXPECT_EQ(c[1].kernel_class, "attention");
  EXPECT_DOUBLE_EQ(c[1].share, 0.2);
  EXPECT_DOUBLE_EQ(c[1].achieved, 400.0);
  EXPECT_EQ(c[2].kernel_class, "memory_bound");
  EXPECT_DOUBLE_EQ(c[2].achieved, 2000.0);
  EXPECT_DOUBLE_EQ(c[2].peak, 3350.0);
  EXPECT_EQ(c[2].unit, "GB/s");
  s.training.precision = DType::kFp8;
  c = KernelClassUses(s, p);
  EXPECT_NEAR(c[0].peak, 2 * bf16_peak, 1e-9);
  EXPECT_NEAR(c[1].peak, bf16_peak, 1e-9);
  // No compute, no classes.
  EXPECT_TRUE(KernelClassUses(s, Projection{}).empty());
}

// Memory bandwidth: the memory-bound kernels' share of the compute times the compute's share of
// the step (here all of it): high from 30%, medium from 15%, absent under it.
TEST(BottlenecksTest, MemoryBandwidthRuleAtItsThresholds) {
  const Scenario s = Llama70bTp8();
  const Projection base = ProjectOf(s);
  auto analyze = [&](double memory_share) {
    Projection p = Shaped(base, 0.5, 0.5, {});
    p.compute_by_class.gemm = {.time = Seconds(1.0 - memory_share), .flops = Flops(1e12),
                               .bytes = Bytes(0)};
    p.compute_by_class.attention = {};
    p.compute_by_class.memory_bound = {.time = Seconds(memory_share), .flops = Flops(0),
                                       .bytes = Bytes(1e9)};
    absl::StatusOr<std::vector<Bottleneck>> all = AnalyzeBottlenecks(s, p);
    EXPECT_THAT(all, IsOk());
    return Find(*all, BottleneckKind::kMemoryBandwidth);
  };
  ASSERT_TRUE(analyze(0.30).has_value());
  EXPECT_EQ(analyze(0.30)->severity, Severity::kHigh);
  EXPECT_DOUBLE_EQ(analyze(0.30)->value, 0.30);
  EXPECT_DOUBLE_EQ(analyze(0.30)->threshold, 0.30);
  EXPECT_EQ(analyze(0.30 - 1e-9)->severity, Severity::kMedium);
  EXPECT_EQ(analyze(0.15)->severity, Severity::kMedium);
  EXPECT_FALSE(analyze(0.15 - 1e-9).has_value());
  EXPECT_THAT(analyze(0.30)->detail, ::testing::HasSubstr("memory-bound kernels 30.0% of the step"));
}

// The projection's totals by class are its op tables' ops, each table counted as many times as
// it runs per micro-batch (80 layers of Llama-3.1-70B, the embedding and the output once).
TEST(BottlenecksTest, ComputeByClassSumsTheOpTables) {
  const Scenario s = Llama70bTp8();
  const BackendSet backends = *MakeBackendSet(s.backends, s.hw);
  ProjectionOptions options;
  options.keep_ops = true;
  absl::StatusOr<Projection> p = Project(s, RefsOf(backends), options);
  ASSERT_THAT(p, IsOk());
  ComputeByClass expected;
  for (const OpTable& t : p->op_tables) {
    for (const Op& op : t.ops) expected.Add(op, static_cast<double>(t.count));
  }
  const ComputeByClass& got = p->compute_by_class;
  EXPECT_GT(got.gemm.flops.value(), 0);
  EXPECT_GT(got.attention.time.value(), 0);
  EXPECT_GT(got.memory_bound.bytes.value(), 0);
  EXPECT_DOUBLE_EQ(got.gemm.flops.value(), expected.gemm.flops.value());
  EXPECT_DOUBLE_EQ(got.gemm.time.value(), expected.gemm.time.value());
  EXPECT_DOUBLE_EQ(got.attention.flops.value(), expected.attention.flops.value());
  EXPECT_DOUBLE_EQ(got.memory_bound.bytes.value(), expected.memory_bound.bytes.value());
  // The compute bottleneck names the classes.
  absl::StatusOr<std::vector<Bottleneck>> all = AnalyzeBottlenecks(s, *p);
  ASSERT_THAT(all, IsOk());
  const std::optional<Bottleneck> compute = Find(*all, BottleneckKind::kCompute);
  ASSERT_TRUE(compute.has_value());
  EXPECT_EQ(compute->kernel_classes.size(), 3u);
  EXPECT_THAT(compute->detail, ::testing::HasSubstr("by kernel: gemm"));
}

// A recommendation is the change re-projected: TP communication overlap on the real TP8 step
// gives exactly the TGS of projecting the scenario with it, and only changes that raise TGS are
// listed (for memory, only those that lower the peak).
TEST(BottlenecksTest, RecommendationsAreReprojected) {
  const Scenario s = Llama70bTp8();
  const Projection base = ProjectOf(s);
  absl::StatusOr<std::vector<Bottleneck>> all =
      AnalyzeBottlenecks(s, Shaped(base, 0.5, 0.5, {{&StepBreakdown::exposed_tp_comm, 0.35}}));
  ASSERT_THAT(all, IsOk());
  const std::optional<Bottleneck> network = Find(*all, BottleneckKind::kNetwork);
  ASSERT_TRUE(network.has_value());
  Scenario overlapped = s;
  overlapped.training.tp_comm_overlap = true;
  const double expected = ProjectOf(overlapped).tokens_per_s_per_gpu;
  const auto it = std::find_if(network->recommendations.begin(), network->recommendations.end(),
                               [](const Reprojected& r) { return r.flags == "--tp-comm-overlap"; });
  ASSERT_NE(it, network->recommendations.end());
  EXPECT_DOUBLE_EQ(it->tokens_per_s_per_gpu, expected);
  for (const Bottleneck& b : *all) {
    for (const Reprojected& r : b.recommendations) {
      if (b.kind == BottleneckKind::kMemoryCapacity) {
        EXPECT_LT(r.peak_memory.value(), base.peak_memory_per_gpu.value());
      } else {
        EXPECT_GT(r.tokens_per_s_per_gpu, base.tokens_per_s_per_gpu) << r.flags;
      }
    }
  }
}

// An exposed EP All-to-All with shared experts: Megatron-Core's shared-expert overlap is offered
// and re-projected (DeepSeek-V2-Lite on 16 H100, EP16 across two nodes, NCCL's All-to-All); not
// with DeepEP, which Megatron-Core does not overlap with the shared experts.
TEST(BottlenecksTest, SharedExpertOverlapIsOfferedForTheAlltoallDispatcher) {
  Scenario s = ExpertParallelOnH100("deepseek-v2-lite", 16, 64);
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  ExpectOfferedAsReprojected(s, BottleneckKind::kNetwork, "--moe-shared-expert-overlap",
                             [](Scenario& c) { c.training.moe_shared_expert_overlap = true; });
  s.parallel.deepep = true;
  EXPECT_FALSE(
      Offered(s, BottleneckKind::kNetwork, "--moe-shared-expert-overlap").has_value());
}

// Qwen3-30B-A3B on 8 H100, EP8, full recompute: memory-bound kernels bind (the MoE
// permutation and padding tests below).
Scenario Qwen30bFullRecomputeOnH100() {
  Scenario s = ExpertParallelOnH100("qwen3-30b-a3b", 8, 256);
  s.training.recompute = Recompute::kFull;
  return s;
}

// Megatron-Core's unfused MoE permutation sums the routed rows back by atomic scatter-adds:
// where memory-bound kernels bind, Transformer Engine's fused permutation is offered and
// re-projected (Qwen3-30B-A3B on 8 H100, EP8, full recompute, where memory-bound work is 26% of
// the step); not on torchtitan, which has no fused permutation, nor when it is fused already.
TEST(BottlenecksTest, FusedPermutationIsOfferedForAnUnfusedMegatronMoe) {
  Scenario s = Qwen30bFullRecomputeOnH100();
  s.training.moe_permute_fusion = false;
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  const auto offered = [](const Scenario& scenario) {
    return Offered(scenario, BottleneckKind::kMemoryBandwidth, "--moe-permute-fusion true");
  };
  ExpectOfferedAsReprojected(s, BottleneckKind::kMemoryBandwidth, "--moe-permute-fusion true",
                             [](Scenario& c) { c.training.moe_permute_fusion = true; });
  Scenario fused = s;
  fused.training.moe_permute_fusion = true;
  EXPECT_FALSE(offered(fused).has_value());
  Scenario titan = s;
  titan.training.stack = TrainingStack::kTorchTitan;
  titan.training.moe_permute_fusion = std::nullopt;
  ASSERT_THAT(ResolveKernels(titan, "test"), IsOk());
  absl::StatusOr<std::vector<Bottleneck>> all = AnalyzeBottlenecks(titan, ProjectOf(titan));
  ASSERT_THAT(all, IsOk());
  ASSERT_TRUE(Find(*all, BottleneckKind::kMemoryBandwidth).has_value());
  EXPECT_FALSE(offered(titan).has_value());
}

// Under fp8 the megatron stack's MoE pads its expert rows with Transformer Engine's copies by
// default: where memory-bound kernels bind, the router's padding is offered and re-projected
// (the same Qwen3-30B-A3B run in fp8 with its fused permutation, where memory-bound work is 32%
// of the step); not once the router pads, nor in bf16, which pads nothing.
TEST(BottlenecksTest, RouterPaddingIsOfferedWhereTheFp8PaddingCopiesRun) {
  Scenario s = Qwen30bFullRecomputeOnH100();
  s.training.precision = DType::kFp8;
  ASSERT_THAT(ResolveKernels(s, "test"), IsOk());
  const auto offered = [](const Scenario& scenario) {
    return Offered(scenario, BottleneckKind::kMemoryBandwidth, "--moe-router-padding true");
  };
  ExpectOfferedAsReprojected(s, BottleneckKind::kMemoryBandwidth, "--moe-router-padding true",
                             [](Scenario& c) { c.training.moe_router_padding = true; });
  Scenario routed = s;
  routed.training.moe_router_padding = true;
  EXPECT_FALSE(offered(routed).has_value());
  Scenario bf16 = s;
  bf16.training.precision = DType::kBf16;
  ASSERT_THAT(ResolveKernels(bf16, "test"), IsOk());
  EXPECT_FALSE(offered(bf16).has_value());
}

}  // namespace
}  // namespace projector
