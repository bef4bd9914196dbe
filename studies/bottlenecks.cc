#include "studies/bottlenecks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

// Thresholds of the rules (bottlenecks.h): {medium, high}. The network's high threshold, 30% of
// the step in exposed communication, is the seed's (../shared/seeds/002, R_comm); the others are
// this tool's reading choices, not measurements: high where a term takes as much of the step as a
// layout change usually wins back (a bubble of 15%, host stalls of 10%, memory-bound kernels at
// 30% as the network's, memory at 100% = does not fit), medium at a third to a half of that (90%
// of memory: the caching allocator's headroom). They only grade and order the findings; every
// recommendation is re-projected whatever the grade.
constexpr double kMemoryMedium = 0.90, kMemoryHigh = 1.00;
constexpr double kNetworkMedium = 0.15, kNetworkHigh = 0.30;
constexpr double kBubbleMedium = 0.05, kBubbleHigh = 0.15;
constexpr double kHostMedium = 0.03, kHostHigh = 0.10;
constexpr double kMemoryBoundMedium = 0.15, kMemoryBoundHigh = 0.30;
constexpr double kComputeDominant = 0.50;
constexpr double kLowMfu = 0.30;

Severity Grade(double value, double medium, double high) {
  return value >= high ? Severity::kHigh : value >= medium ? Severity::kMedium : Severity::kLow;
}

// A "name share%" list of the given terms, largest first, those above 0.5% of the step.
std::string TermList(const Projection& p, std::initializer_list<Seconds StepBreakdown::*> members) {
  std::vector<std::pair<double, std::string_view>> terms;
  for (const BreakdownTerm& t : kBreakdownTerms) {
    for (Seconds StepBreakdown::*m : members) {
      if (t.member == m) terms.emplace_back(p.breakdown.*m / p.step_time, t.short_name);
    }
  }
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a > b; });
  std::string out;
  for (const auto& [share, name] : terms) {
    if (share < 0.005) continue;
    absl::StrAppendFormat(&out, "%s%s %.1f%%", out.empty() ? "" : ", ", std::string(name),
                          100 * share);
  }
  return out;
}

// Halves a dimension and gives the factor to DP, the GPU count kept.
bool GiveToDp(Scenario& s, int64_t& degree) {
  if (degree < 2 || degree % 2 != 0) return false;
  degree /= 2;
  s.parallel.dp *= 2;
  return true;
}

std::vector<ScenarioChange> NetworkChanges(const Scenario& s) {
  std::vector<ScenarioChange> out;
  out.push_back({"--tp-comm-overlap", [](Scenario& c) {
                   if (c.parallel.tp < 2 || c.training.tp_comm_overlap) return false;
                   c.training.tp_comm_overlap = true;
                   return true;
                 }});
  out.push_back({"--moe-a2a-overlap", [](Scenario& c) {
                   if (!c.model.moe || c.parallel.ep < 2 || c.training.moe_a2a_overlap) {
                     return false;
                   }
                   c.training.moe_a2a_overlap = true;
                   return true;
                 }});
  out.push_back({"--moe-shared-expert-overlap", [](Scenario& c) {
                   if (!c.model.moe || c.model.moe->num_shared_experts == 0 ||
                       c.parallel.ep < 2 || c.parallel.deepep || c.training.moe_a2a_overlap ||
                       c.training.moe_shared_expert_overlap) {
                     return false;
                   }
                   c.training.moe_shared_expert_overlap = true;
                   return true;
                 }});
  out.push_back({"--grad-reduce-dtype bf16", [](Scenario& c) {
                   if (c.training.grad_reduce_dtype == DType::kBf16) return false;
                   c.training.grad_reduce_dtype = DType::kBf16;
                   return true;
                 }});
  out.push_back({absl::StrCat("--tp ", s.parallel.tp / 2),
                 [](Scenario& c) { return GiveToDp(c, c.parallel.tp); }});
  out.push_back({absl::StrFormat("--nic-bandwidth-gbps %g",
                                 2 * s.hw.scale_out.per_nic_bandwidth.value() * 8 / 1e9),
                 [](Scenario& c) {
                   if (c.num_gpus <= c.hw.gpus_per_node) return false;
                   c.hw.scale_out.per_nic_bandwidth = c.hw.scale_out.per_nic_bandwidth * 2.0;
                   return true;
                 }});
  out.push_back({absl::StrFormat("--scale-up-bandwidth-gbs %g",
                                 2 * s.hw.scale_up.per_gpu_bandwidth.value() / 1e9),
                 [](Scenario& c) {
                   c.hw.scale_up.per_gpu_bandwidth = c.hw.scale_up.per_gpu_bandwidth * 2.0;
                   c.hw.scale_up.per_link_bandwidth = c.hw.scale_up.per_link_bandwidth * 2.0;
                   return true;
                 }});
  return out;
}

std::vector<ScenarioChange> BubbleChanges(const Scenario& s) {
  std::vector<ScenarioChange> out;
  out.push_back({absl::StrCat("--vpp ", s.parallel.vpp * 2), [](Scenario& c) {
                   if (c.parallel.pp < 2) return false;
                   c.parallel.vpp *= 2;
                   return true;
                 }});
  out.push_back({"--pipeline-schedule zb-h1", [](Scenario& c) {
                   if (c.parallel.pp < 2 || c.parallel.vpp > 1 ||
                       c.parallel.pipeline_schedule == PipelineSchedule::kZeroBubbleH1) {
                     return false;
                   }
                   c.parallel.pipeline_schedule = PipelineSchedule::kZeroBubbleH1;
                   return true;
                 }});
  if (s.training.micro_batch > 1) {
    out.push_back({absl::StrCat("--micro-batch ", s.training.micro_batch / 2), [](Scenario& c) {
                     c.training.micro_batch /= 2;
                     return true;
                   }});
  }
  out.push_back({absl::StrCat("--pp ", s.parallel.pp / 2),
                 [](Scenario& c) { return GiveToDp(c, c.parallel.pp); }});
  return out;
}

std::vector<ScenarioChange> HostChanges(const Scenario& s) {
  std::vector<ScenarioChange> out;
  out.push_back({"--cuda-graphs", [](Scenario& c) {
                   if (c.training.cuda_graphs) return false;
                   c.training.cuda_graphs = true;
                   return true;
                 }});
  out.push_back({absl::StrCat("--micro-batch ", s.training.micro_batch * 2), [](Scenario& c) {
                   c.training.micro_batch *= 2;
                   return true;
                 }});
  return out;
}

// What cuts memory-bound work: no recompute (it re-runs the forward's elementwise kernels), the
// selective one instead of the full one, compiled elementwise kernels on an eager stack, and
// Transformer Engine's fused MoE permutation instead of the atomic scatter-adds (a stack that
// has it).
std::vector<ScenarioChange> MemoryBandwidthChanges() {
  std::vector<ScenarioChange> out;
  out.push_back({"--recompute none", [](Scenario& c) {
                   if (c.training.recompute == Recompute::kNone) return false;
                   c.training.SetRecompute(Recompute::kNone);
                   return true;
                 }});
  out.push_back({"--recompute selective", [](Scenario& c) {
                   if (c.training.recompute != Recompute::kFull) return false;
                   c.training.SetRecompute(Recompute::kSelective);
                   return true;
                 }});
  out.push_back({"--torch-compile", [](Scenario& c) {
                   if (c.training.torch_compile ||
                       ResolvedStack(c.training, c.parallel) == TrainingStack::kMegatron) {
                     return false;
                   }
                   c.training.torch_compile = true;
                   return true;
                 }});
  out.push_back({"--moe-permute-fusion true", [](Scenario& c) {
                   if (!c.model.moe || ResolvedMoePermuteFusion(c.training, c.parallel) ||
                       ResolvedStack(c.training, c.parallel) == TrainingStack::kTorchTitan) {
                     return false;
                   }
                   c.training.moe_permute_fusion = true;
                   return true;
                 }});
  // The fp8 MoE's padding copies (Transformer Engine's Fp8Padding) traded for the router's.
  out.push_back({"--moe-router-padding true", [](Scenario& c) {
                   if (!MoeRouterPaddingApplies(c.model, c.training, c.parallel, c.hw.gpu.arch) ||
                       ResolvedMoeRouterPadding(c.training, c.parallel)) {
                     return false;
                   }
                   c.training.moe_router_padding = true;
                   return true;
                 }});
  return out;
}

std::vector<ScenarioChange> ComputeChanges(const Scenario& s) {
  std::vector<ScenarioChange> out;
  out.push_back({"--precision fp8", [](Scenario& c) {
                   if (c.training.precision == DType::kFp8 ||
                       c.hw.gpu.MatrixPeak(DType::kFp8, c.hw.gpu.sustained_clock).value() <= 0) {
                     return false;
                   }
                   c.training.precision = DType::kFp8;
                   return true;
                 }});
  out.push_back({absl::StrCat("--micro-batch ", s.training.micro_batch * 2), [](Scenario& c) {
                   c.training.micro_batch *= 2;
                   return true;
                 }});
  out.push_back({"--recompute none", [](Scenario& c) {
                   if (c.training.recompute == Recompute::kNone) return false;
                   c.training.SetRecompute(Recompute::kNone);
                   return true;
                 }});
  return out;
}

// Every change of the catalogue re-projected; kept when it helps (a higher TGS, or for memory a
// lower peak), those that fit first, then fastest first, at most kMaxRecommendations.
absl::StatusOr<std::vector<Reprojected>> Recommend(const Scenario& s, const Projection& p,
                                                   BottleneckKind kind,
                                                   const std::vector<ScenarioChange>& changes) {
  std::vector<Reprojected> out;
  for (const ScenarioChange& change : changes) {
    const ScenarioChange* parts[] = {&change};
    PROJECTOR_ASSIGN_OR_RETURN(const std::optional<Reprojected> r, Reproject(s, parts));
    if (!r) continue;
    const bool helps = kind == BottleneckKind::kMemoryCapacity
                           ? r->peak_memory < p.peak_memory_per_gpu
                           : r->tokens_per_s_per_gpu > p.tokens_per_s_per_gpu;
    if (helps) out.push_back(*r);
  }
  std::stable_sort(out.begin(), out.end(), [](const Reprojected& a, const Reprojected& b) {
    if (a.fits != b.fits) return a.fits;
    return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu;
  });
  if (out.size() > kMaxRecommendations) out.resize(kMaxRecommendations);
  return out;
}

}  // namespace

std::string_view BottleneckKindName(BottleneckKind kind) {
  switch (kind) {
    case BottleneckKind::kMemoryCapacity:
      return "memory_capacity";
    case BottleneckKind::kNetwork:
      return "network";
    case BottleneckKind::kPipelineBubble:
      return "pipeline_bubble";
    case BottleneckKind::kHost:
      return "host";
    case BottleneckKind::kMemoryBandwidth:
      return "memory_bandwidth";
    case BottleneckKind::kCompute:
      return "compute";
  }
  return "?";
}

std::string_view SeverityName(Severity severity) {
  switch (severity) {
    case Severity::kLow:
      return "low";
    case Severity::kMedium:
      return "medium";
    case Severity::kHigh:
      return "high";
  }
  return "?";
}

std::vector<KernelClassUse> KernelClassUses(const Scenario& scenario, const Projection& p) {
  const ComputeByClass& c = p.compute_by_class;
  const double total = (c.gemm.time + c.attention.time + c.memory_bound.time).value();
  std::vector<KernelClassUse> out;
  if (total <= 0) return out;
  const GpuSpec& gpu = scenario.hw.gpu;
  const DType precision = scenario.training.precision;
  const DType attention_dtype =
      precision == DType::kFp8 || precision == DType::kFp4 ? DType::kBf16 : precision;
  auto tflops = [](const KernelClassTotals& k) { return k.flops.value() / k.time.value() * 1e-12; };
  auto add = [&](std::string_view name, const KernelClassTotals& k, double achieved, double peak,
                 std::string_view unit) {
    if (k.time.value() <= 0) return;
    out.push_back({.kernel_class = name, .share = k.time.value() / total, .achieved = achieved,
                   .peak = peak, .unit = unit});
  };
  add("gemm", c.gemm, tflops(c.gemm), gpu.MatrixPeak(precision, gpu.peak_clock).value() * 1e-12,
      "TFLOP/s");
  add("attention", c.attention, tflops(c.attention),
      gpu.MatrixPeak(attention_dtype, gpu.peak_clock).value() * 1e-12, "TFLOP/s");
  add("memory_bound", c.memory_bound,
      c.memory_bound.bytes.value() / c.memory_bound.time.value() * 1e-9,
      gpu.hbm_bandwidth.value() * 1e-9, "GB/s");
  return out;
}

absl::StatusOr<std::vector<Bottleneck>> AnalyzeBottlenecks(const Scenario& scenario,
                                                           const Projection& p) {
  std::vector<Bottleneck> out;
  if (p.step_time.value() <= 0) return out;
  const StepBreakdown& b = p.breakdown;
  auto add = [&](BottleneckKind kind, Severity severity, double value, double threshold,
                 std::string detail, const std::vector<ScenarioChange>& changes) -> absl::Status {
    Bottleneck x{.kind = kind,
                 .severity = severity,
                 .value = value,
                 .threshold = threshold,
                 .detail = std::move(detail),
                 .recommendations = {},
                 .kernel_classes = {}};
    PROJECTOR_ASSIGN_OR_RETURN(x.recommendations, Recommend(scenario, p, kind, changes));
    out.push_back(std::move(x));
    return absl::OkStatus();
  };
  const double capacity = p.memory.capacity.value();
  const double memory = capacity > 0 ? p.peak_memory_per_gpu.value() / capacity : 0;
  if (memory >= kMemoryMedium) {
    PROJECTOR_RETURN_IF_ERROR(
        add(BottleneckKind::kMemoryCapacity, Grade(memory, kMemoryMedium, kMemoryHigh), memory,
            kMemoryHigh,
            absl::StrFormat("peak %.1f GiB per GPU, %.0f%% of the %.1f GiB usable",
                            p.peak_memory_per_gpu / Gibibytes(1), 100 * memory,
                            p.memory.capacity / Gibibytes(1)),
            MemoryChanges(scenario)));
  }
  const Seconds comm = b.exposed_tp_comm + b.exposed_cp_comm + b.exposed_ep_comm +
                       b.exposed_dp_comm + b.exposed_fsdp_comm + b.p2p;
  const double r_comm = comm / p.step_time;
  if (r_comm >= kNetworkMedium) {
    PROJECTOR_RETURN_IF_ERROR(add(
        BottleneckKind::kNetwork, Grade(r_comm, kNetworkMedium, kNetworkHigh), r_comm, kNetworkHigh,
        absl::StrFormat(
            "exposed communication %.1f%% of the step: %s", 100 * r_comm,
            TermList(p, {&StepBreakdown::exposed_tp_comm, &StepBreakdown::exposed_cp_comm,
                         &StepBreakdown::exposed_ep_comm, &StepBreakdown::exposed_dp_comm,
                         &StepBreakdown::exposed_fsdp_comm, &StepBreakdown::p2p})),
        NetworkChanges(scenario)));
  }
  const double bubble = b.pipeline_bubble / p.step_time;
  if (bubble >= kBubbleMedium) {
    PROJECTOR_RETURN_IF_ERROR(add(
        BottleneckKind::kPipelineBubble, Grade(bubble, kBubbleMedium, kBubbleHigh), bubble,
        kBubbleHigh,
        absl::StrFormat("pipeline bubble %.1f%% of the step (PP %d, VPP %d, %d micro-batches)",
                        100 * bubble, scenario.parallel.pp, scenario.parallel.vpp, p.micro_batches),
        BubbleChanges(scenario)));
  }
  const double host = b.exposed_host / p.step_time;
  if (host >= kHostMedium) {
    PROJECTOR_RETURN_IF_ERROR(
        add(BottleneckKind::kHost, Grade(host, kHostMedium, kHostHigh), host, kHostHigh,
            absl::StrFormat("the GPU waits for the host %.1f%% of the step", 100 * host),
            HostChanges(scenario)));
  }
  const double compute = b.compute / p.step_time;
  const std::vector<KernelClassUse> classes = KernelClassUses(scenario, p);
  for (const KernelClassUse& c : classes) {
    if (c.kernel_class != "memory_bound") continue;
    const double share = c.share * compute;
    if (share < kMemoryBoundMedium) break;
    PROJECTOR_RETURN_IF_ERROR(add(
        BottleneckKind::kMemoryBandwidth, Grade(share, kMemoryBoundMedium, kMemoryBoundHigh),
        share, kMemoryBoundHigh,
        absl::StrFormat("memory-bound kernels %.1f%% of the step (norms, activations, casts, "
                        "permutations, the loss) at %.0f of %.0f GB/s",
                        100 * share, c.achieved, c.peak),
        MemoryBandwidthChanges()));
  }
  if (compute >= kComputeDominant) {
    std::string by_class;
    for (const KernelClassUse& c : classes) {
      absl::StrAppendFormat(&by_class, "%s%s %.0f%% at %.0f of %.0f %s", by_class.empty() ? "" : ", ",
                            c.kernel_class, 100 * c.share, c.achieved, c.peak, c.unit);
    }
    PROJECTOR_RETURN_IF_ERROR(add(
        BottleneckKind::kCompute, p.mfu < kLowMfu ? Severity::kMedium : Severity::kLow, compute,
        1.0,
        absl::StrFormat("compute %.1f%% of the step at %.1f%% MFU (%.0f of %.0f TFLOP/s per GPU; "
                        "%.0f%% of the step scales with the clock); by kernel: %s",
                        100 * compute, 100 * p.mfu, p.tflops_per_gpu,
                        p.peak_flops_per_gpu.value() / 1e12, 100 * p.clock_scaled_share, by_class),
        ComputeChanges(scenario)));
    out.back().kernel_classes = classes;
  }
  std::stable_sort(out.begin(), out.end(), [](const Bottleneck& a, const Bottleneck& b2) {
    return a.severity > b2.severity;
  });
  return out;
}

}  // namespace projector
