#include "report/report.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "projection/host_overhead.h"
#include "scenario/training_defaults.h"

namespace projector {
namespace {

// ", overlay FILE, what-if --hbm-gib 120, --nics-per-node 4": what changed the GPU profile.
std::string HardwareChanges(const Scenario& scenario) {
  std::string out;
  if (!scenario.hw_overlay_file.empty()) absl::StrAppend(&out, ", overlay ", scenario.hw_overlay_file);
  if (!scenario.hw_settings.empty()) {
    absl::StrAppend(&out, ", what-if ", absl::StrJoin(scenario.hw_settings, ", "));
  }
  return out;
}


constexpr std::string_view kMfuFormula =
    "model_flops_per_step = global_batch*seq_len*(6*N_matmul + 6*L*seq_len*H*(d_qk+d_v)), "
    "N_matmul = active params minus the input embedding (kept when tied; routed experts "
    "times the MoE capacity factor when it is below 1), plus each MTP "
    "module's active params and output-head pass (L then counts the MTP layers); non-causal "
    "attention (PaLM); recompute not counted. mfu = model_flops_per_step / step_time_s / num_gpus "
    "/ "
    "peak dense matrix FLOP/s of the training precision at the datasheet peak clock";

double Ms(Seconds s) { return ToMilliseconds(s); }

// ", MoE capacity 1.25 (padded), busiest EP rank 1.30x" for routing that is not balanced and
// dropless; empty otherwise.
// "fp8 (mxfp8)": the precision, with the FP8 recipe the run uses.
std::string PrecisionPhrase(const Scenario& s) {
  const TrainingConfig& t = s.training;
  if (t.precision != DType::kFp8) return std::string(DTypeName(t.precision));
  return absl::StrFormat("fp8 (%s)",
                         Fp8RecipeName(ResolvedFp8Recipe(t, s.parallel, s.hw.gpu.arch)));
}

// The recipe an fp8 run uses; null for other precisions.
nlohmann::json Fp8RecipeJson(const Scenario& s) {
  if (s.training.precision != DType::kFp8) return nullptr;
  return std::string(Fp8RecipeName(ResolvedFp8Recipe(s.training, s.parallel, s.hw.gpu.arch)));
}

// Whether the router pads an fp8 MoE's expert rows (true) or Transformer Engine's Fp8Padding
// copies them (false); null where no padding work is done (ResolvedMoeQuantAlign: another
// precision or stack, a dense model) or the experts are padded to their capacity.
nlohmann::json MoeRouterPaddingJson(const Scenario& s) {
  if (!MoeRouterPaddingApplies(s.model, s.training, s.parallel, s.hw.gpu.arch)) return nullptr;
  return ResolvedMoeRouterPadding(s.training, s.parallel);
}

std::string MoeRoutingNote(const TrainingConfig& t) {
  std::string out;
  if (t.moe_capacity_factor > 0) {
    absl::StrAppendFormat(&out, ", MoE capacity %g%s", t.moe_capacity_factor,
                          t.moe_pad_to_capacity ? " (padded)" : "");
  }
  if (t.moe_imbalance != 1.0) {
    absl::StrAppendFormat(&out, ", busiest EP rank %gx", t.moe_imbalance);
  }
  if (!out.empty()) absl::StrAppendFormat(&out, " (expert load %gx)", MoeExpertLoad(t));
  return out;
}
double GiB(Bytes b) { return b.value() / (1024.0 * 1024.0 * 1024.0); }

std::string_view KindName(const LayerKindTimes& k) { return k.is_moe ? "moe" : "dense"; }

void AppendBreakdownRow(std::string& out, std::string_view name, Seconds t, Seconds step) {
  double pct = step.value() > 0 ? t / step * 100.0 : 0.0;
  absl::StrAppendFormat(&out, "  %-26s %12.2f ms  %6.1f%%\n", name, Ms(t), pct);
}

// Achieved rates of one timed op (zero for an op that takes no time).
struct OpRates {
  double tflops = 0;
  double gbps = 0;
  double clock_scaled_share = 0;  // fraction
};
OpRates RatesOf(const Op& op) {
  const double time = op.time.value();
  if (time <= 0) return {};
  return {.tflops = op.flops.value() / time * 1e-12,
          .gbps = op.bytes.value() / time * 1e-9,
          .clock_scaled_share = op.clock_scaled_time.value() / time};
}

// CPU time the host spends issuing `op` (HostCostModel::IssueTime).
Seconds HostIssueTime(const Scenario& scenario, const Op& op) {
  return HostCostModel{.per_dispatch = scenario.hw.gpu.host_op_dispatch,
                       .cuda_graphs = scenario.training.cuda_graphs}
      .IssueTime(op);
}

nlohmann::json ModuleJson(std::string_view layer, const ModuleTimes& m) {
  return {{"layer", std::string(layer)},
          {"module", std::string(m.module)},
          {"forward_s", m.forward.value()},
          {"backward_s", m.backward.value()},
          {"recompute_s", m.recompute.value()}};
}

}  // namespace

std::vector<std::pair<std::string, std::string>> ProjectionSummaryRows(const Scenario& scenario,
                                                                       const Projection& p) {
  const TrainingConfig& tr = scenario.training;
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back(
      "model",
      absl::StrFormat("%s (%d layers%s, hidden %d)", scenario.model.name, scenario.model.num_layers,
                      scenario.model.mtp_layers > 0
                          ? absl::StrCat(" + ", scenario.model.mtp_layers, " MTP")
                          : std::string(),
                      scenario.model.hidden_size));
  rows.emplace_back("hardware",
                    absl::StrFormat("%s x %d GPUs (%d per node), sustained %.0f MHz%s",
                                    scenario.hw.name, p.num_gpus, scenario.hw.gpus_per_node,
                                    ToMegahertz(scenario.hw.gpu.sustained_clock),
                                    HardwareChanges(scenario)));
  rows.emplace_back("layout", absl::StrFormat("%s, schedule %s, %d micro-batches", p.layout,
                                              p.schedule, p.micro_batches));
  rows.emplace_back(
      "training",
      absl::StrFormat(
          "seq %d, micro-batch %d, global batch %d, %s, recompute %s, %s stack: %s "
          "attention, %s loss%s%s%s%s%s%s",
          tr.seq_len, tr.micro_batch, tr.global_batch, PrecisionPhrase(scenario),
          RecomputePhrase(tr.recompute, tr.recompute_modules),
          TrainingStackName(ResolvedStack(tr, scenario.parallel)),
          AttentionKernelOf(scenario), LossKernelName(ResolvedLossKernel(tr, scenario.parallel)),
          TrainingSwitchesPhrase(scenario),
          tr.tp_comm_overlap ? ", TP comm overlapped" : "",
          tr.cuda_graphs ? ", CUDA graphs" : "",
          tr.tf_amp ? ", TF AMP (elementwise fp32)" : "",
          tr.grad_reduce_dtype == DType::kFp32
              ? ""
              : ", grads reduced in " + std::string(DTypeName(tr.grad_reduce_dtype)),
          MoeRoutingNote(tr)));
  return rows;
}

namespace {

// `text` cut or padded to `width` columns on screen: a UTF-8 character ("ᵀ") takes one column
// whatever its bytes, so printf's byte widths would shift the columns after it.
std::string PadToColumns(const std::string& text, size_t width) {
  std::string out;
  size_t columns = 0;
  for (size_t i = 0; i < text.size() && columns < width;) {
    size_t bytes = 1;
    const auto lead = static_cast<unsigned char>(text[i]);
    if (lead >= 0xF0) {
      bytes = 4;
    } else if (lead >= 0xE0) {
      bytes = 3;
    } else if (lead >= 0xC0) {
      bytes = 2;
    }
    out.append(text, i, bytes);
    i += bytes;
    ++columns;
  }
  out.append(width - columns, ' ');
  return out;
}

// The --network section: where each process group lies and the algorithm it got.
std::string NetworkUsesText(const Projection& p) {
  if (p.network.empty()) return "";
  std::string out = absl::StrFormat("\nNetwork %s (%s): each group's largest call of each collective\n",
                                    p.network, p.network_file);
  for (size_t d = 0; d < p.network_dimensions.size(); ++d) {
    absl::StrAppendFormat(&out, "  dim %d: %s\n", d, p.network_dimensions[d]);
  }
  absl::StrAppendFormat(&out, "  %-7s %-14s %10s %6s %-22s %-17s %10s\n", "group", "collective",
                        "MiB", "ranks", "placement", "algorithm", "ms");
  for (const NetworkGroupUse& u : p.network_uses) {
    absl::StrAppendFormat(&out, "  %-7s %-14s %10.2f %6d %-22s %-17s %10.3f\n",
                          PadToColumns(u.group, 7), CollectiveKindName(u.op.kind),
                          u.op.bytes.value() / (1024.0 * 1024.0), u.op.group.size, u.placement,
                          CollectiveAlgorithmName(u.algorithm), ToMilliseconds(u.time));
  }
  return out;
}

nlohmann::json NetworkUsesJson(const Projection& p) {
  nlohmann::json groups = nlohmann::json::array();
  for (const NetworkGroupUse& u : p.network_uses) {
    groups.push_back({{"group", u.group},
                      {"op", std::string(CollectiveKindName(u.op.kind))},
                      {"bytes", u.op.bytes.value()},
                      {"ranks", u.op.group.size},
                      {"stride", u.op.group.stride},
                      {"placement", u.placement},
                      {"algorithm", std::string(CollectiveAlgorithmName(u.algorithm))},
                      {"time_s", u.time.value()}});
  }
  return {{"name", p.network},
          {"file", p.network_file},
          {"dimensions", p.network_dimensions},
          {"groups", std::move(groups)}};
}

}  // namespace

std::string FitAdviceText(const FitAdvice& advice) {
  std::string out = absl::StrFormat(
      "** DOES NOT FIT: peak %.1f GiB per GPU against %.1f GiB of HBM, %.1f GiB over **\n",
      GiB(advice.peak_memory), GiB(advice.capacity), GiB(advice.Over()));
  if (advice.changes.empty()) {
    out += "   No single change of recompute, optimizer sharding, micro-batch or TP/PP/CP/FSDP "
           "makes it fit: `project search` ranks every layout under the limit.\n\n";
    return out;
  }
  out += "   Changes that make it fit (each re-projected, fastest first):\n";
  for (const FitChange& c : advice.changes) {
    absl::StrAppendFormat(&out, "     %-44s peak %6.1f GiB   TGS %.1f\n", c.flags,
                          GiB(c.peak_memory), c.tokens_per_s_per_gpu);
  }
  out += "\n";
  return out;
}

nlohmann::json FitAdviceJson(const FitAdvice& advice) {
  nlohmann::json changes = nlohmann::json::array();
  for (const FitChange& c : advice.changes) {
    changes.push_back({{"flags", c.flags},
                       {"peak_bytes", c.peak_memory.value()},
                       {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu}});
  }
  return {{"peak_bytes", advice.peak_memory.value()},
          {"capacity_bytes", advice.capacity.value()},
          {"over_bytes", advice.Over().value()},
          {"changes", changes}};
}

namespace {

double ChangePct(const Reprojected& r, double tgs) {
  return tgs > 0 ? 100 * (r.tokens_per_s_per_gpu - tgs) / tgs : 0.0;
}

// "TGS  28393.7 ( +24.6%)  peak   87.3 GiB", and the fit when it does not.
std::string ReprojectedCells(const Reprojected& r, double tgs) {
  return absl::StrFormat("TGS %9.1f (%+6.1f%%)  peak %6.1f GiB%s", r.tokens_per_s_per_gpu,
                         ChangePct(r, tgs), GiB(r.peak_memory), r.fits ? "" : "  DOES NOT FIT");
}

nlohmann::json ReprojectedJson(const Reprojected& r, double tgs) {
  return {{"flags", r.flags},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
          {"change_pct", ChangePct(r, tgs)},
          {"peak_bytes", r.peak_memory.value()},
          {"fits", r.fits}};
}

}  // namespace

std::string BottlenecksText(const std::vector<Bottleneck>& bottlenecks, double tgs) {
  std::string out = "\nBottlenecks (most severe first; every recommendation re-projected)\n";
  if (bottlenecks.empty()) {
    return out + "  none at or above its threshold\n";
  }
  for (const Bottleneck& b : bottlenecks) {
    absl::StrAppendFormat(&out, "  [%s] %s: %s", SeverityName(b.severity),
                          BottleneckKindName(b.kind), b.detail);
    if (b.kind != BottleneckKind::kCompute) {
      absl::StrAppendFormat(&out, " (high at %.0f%%)", 100 * b.threshold);
    }
    out += "\n";
    if (b.recommendations.empty()) {
      out += "      no change of the catalogue helps\n";
      continue;
    }
    for (const Reprojected& r : b.recommendations) {
      absl::StrAppendFormat(&out, "      %-40s %s\n", r.flags, ReprojectedCells(r, tgs));
    }
  }
  return out;
}

nlohmann::json BottlenecksJson(const std::vector<Bottleneck>& bottlenecks, double tgs) {
  nlohmann::json out = nlohmann::json::array();
  for (const Bottleneck& b : bottlenecks) {
    nlohmann::json recs = nlohmann::json::array();
    for (const Reprojected& r : b.recommendations) recs.push_back(ReprojectedJson(r, tgs));
    nlohmann::json entry = {{"kind", BottleneckKindName(b.kind)},
                            {"severity", SeverityName(b.severity)},
                            {"value", b.value},
                            {"threshold", b.threshold},
                            {"detail", b.detail},
                            {"recommendations", recs}};
    if (!b.kernel_classes.empty()) {
      nlohmann::json classes = nlohmann::json::array();
      for (const KernelClassUse& c : b.kernel_classes) {
        classes.push_back({{"class", c.kernel_class},
                           {"share_of_compute", c.share},
                           {"achieved", c.achieved},
                           {"peak", c.peak},
                           {"unit", c.unit}});
      }
      entry["kernel_classes"] = std::move(classes);
    }
    out.push_back(std::move(entry));
  }
  return out;
}

std::string ProjectionText(const Scenario& scenario, const Projection& p) {
  std::string out;
  absl::StrAppendFormat(&out, "Projection: %s\n", p.scenario_name);
  for (const auto& [label, value] : ProjectionSummaryRows(scenario, p)) {
    absl::StrAppendFormat(&out, "  %-10s %s\n", label, value);
  }
  if (!p.defaults_used.empty()) {
    out += "  defaults used:\n";
    for (const std::string& d : p.defaults_used) absl::StrAppendFormat(&out, "    - %s\n", d);
  }

  out += "\nPer layer, one micro-batch (ms)\n";
  for (const LayerKindTimes& k : p.layer_kinds) {
    absl::StrAppendFormat(&out, "  %s layer (x%d)\n", KindName(k), k.count);
    absl::StrAppendFormat(&out, "    %-18s %10s %10s %10s\n", "module", "forward", "backward",
                          "recompute");
    for (const ModuleTimes& m : k.modules) {
      absl::StrAppendFormat(&out, "    %-18s %10.3f %10.3f %10.3f\n", m.module, Ms(m.forward),
                            Ms(m.backward), Ms(m.recompute));
    }
    absl::StrAppendFormat(&out, "    %-18s %10.3f %10.3f %10.3f   total %.3f ms, act %.1f MiB\n",
                          "layer total", Ms(k.forward), Ms(k.backward), Ms(k.recompute),
                          Ms(k.forward + k.backward + k.recompute),
                          k.activation_bytes.value() / (1024.0 * 1024.0));
  }
  for (const ModuleTimes* m : {&p.embedding, &p.output_layer}) {
    absl::StrAppendFormat(&out, "  %-20s %10.3f %10.3f\n", m->module, Ms(m->forward),
                          Ms(m->backward));
  }

  const StepBreakdown& b = p.breakdown;
  absl::StrAppendFormat(&out, "\nStep breakdown (critical pipeline rank)\n");
  for (const BreakdownTerm& term : kBreakdownTerms) {
    AppendBreakdownRow(out, term.label, b.*term.member, p.step_time);
  }
  AppendBreakdownRow(out, "step time", p.step_time, p.step_time);

  out += "\nThroughput\n";
  absl::StrAppendFormat(&out, "  tokens/s/GPU (TGS)  %.1f\n", p.tokens_per_s_per_gpu);
  absl::StrAppendFormat(&out, "  tokens/s total      %.4g\n", p.tokens_per_s);
  // Sequences (samples) per second: the throughput encoder pre-training reports (BERT).
  absl::StrAppendFormat(&out, "  sequences/s total   %.1f\n",
                        p.tokens_per_s / static_cast<double>(scenario.training.seq_len));
  absl::StrAppendFormat(&out, "  TFLOP/s/GPU         %.1f (model FLOPs, recompute not counted)\n",
                        p.tflops_per_gpu);
  absl::StrAppendFormat(&out, "  MFU                 %.1f%% of %.0f TFLOP/s peak\n", p.mfu * 100.0,
                        ToTeraFlopsPerSecond(p.peak_flops_per_gpu));
  absl::StrAppendFormat(&out, "  clock-scaled share  %.1f%% of step time\n",
                        p.clock_scaled_share * 100.0);
  if (p.measured_tokens_per_s_per_gpu.has_value()) {
    absl::StrAppendFormat(&out, "  measured TGS        %.1f (projection %+.1f%%)\n",
                          *p.measured_tokens_per_s_per_gpu, p.error_pct.value_or(0.0));
  }

  out += "\nMemory per GPU (GiB)\n";
  absl::StrAppendFormat(&out, "  %5s %9s %9s %9s %9s %9s %9s %8s\n", "stage", "weights", "grads",
                        "optim", "acts", "workspc", "total", "in-flt");
  for (const StageMemory& s : p.memory.stages) {
    absl::StrAppendFormat(&out, "  %5d %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %8d\n", s.stage,
                          GiB(s.weights), GiB(s.gradients), GiB(s.optimizer_state),
                          GiB(s.activations), GiB(s.workspace), GiB(s.total),
                          s.in_flight_micro_batches);
  }
  absl::StrAppendFormat(&out, "  peak %.2f GiB (stage %d) of %.2f GiB HBM%s\n",
                        GiB(p.peak_memory_per_gpu), p.memory.peak_stage, GiB(p.memory.capacity),
                        p.fits_in_memory ? "" : "  ** DOES NOT FIT **");
  out += NetworkUsesText(p);
  return out;
}

nlohmann::json ProjectionJson(const Scenario& scenario, const Projection& p) {
  const StepBreakdown& b = p.breakdown;
  nlohmann::json layers = nlohmann::json::array();
  nlohmann::json modules = nlohmann::json::array();
  for (const LayerKindTimes& k : p.layer_kinds) {
    layers.push_back({{"kind", std::string(KindName(k))},
                      {"count", k.count},
                      {"forward_s", k.forward.value()},
                      {"backward_s", k.backward.value()},
                      {"recompute_s", k.recompute.value()},
                      {"total_s", (k.forward + k.backward + k.recompute).value()},
                      {"activation_bytes", k.activation_bytes.value()}});
    for (const ModuleTimes& m : k.modules) modules.push_back(ModuleJson(KindName(k), m));
  }
  modules.push_back(ModuleJson("embedding", p.embedding));
  modules.push_back(ModuleJson("output", p.output_layer));

  nlohmann::json breakdown = nlohmann::json::object();
  for (const BreakdownTerm& term : kBreakdownTerms) {
    breakdown[std::string(term.json_key)] = (b.*term.member).value();
  }
  nlohmann::json stages = nlohmann::json::array();
  for (const StageMemory& s : p.memory.stages) {
    stages.push_back({{"stage", s.stage},
                      {"parameters", s.parameters},
                      {"weights_bytes", s.weights.value()},
                      {"gradients_bytes", s.gradients.value()},
                      {"optimizer_state_bytes", s.optimizer_state.value()},
                      {"activations_bytes", s.activations.value()},
                      {"workspace_bytes", s.workspace.value()},
                      {"total_bytes", s.total.value()},
                      {"in_flight_micro_batches", s.in_flight_micro_batches}});
  }
  nlohmann::json j = {
      {"scenario", p.scenario_name},
      {"model", scenario.model.name},
      {"gpu", scenario.hw.name},
      {"hw_what_ifs", scenario.hw_settings},
      {"layout", p.layout},
      {"num_gpus", p.num_gpus},
      {"schedule", p.schedule},
      {"micro_batches", p.micro_batches},
      {"global_batch", scenario.training.global_batch},
      {"seq_len", scenario.training.seq_len},
      {"attention_kernel", std::string(AttentionKernelOf(scenario))},
      {"recompute", std::string(RecomputeName(scenario.training.recompute))},
      {"recompute_modules", scenario.training.recompute == Recompute::kSelective
                                ? RecomputeModuleNames(scenario.training.recompute_modules)
                                : std::vector<std::string>{}},
      {"tp_comm_overlap", scenario.training.tp_comm_overlap},
      {"moe_a2a_overlap", scenario.training.moe_a2a_overlap},
      {"moe_dispatch_fp8", scenario.training.moe_dispatch_fp8},
      {"moe_shared_expert_overlap", scenario.training.moe_shared_expert_overlap},
      {"cuda_graphs", scenario.training.cuda_graphs},
      {"tf_amp", scenario.training.tf_amp},
      {"moe_permute_fusion", scenario.model.moe ? nlohmann::json(ResolvedMoePermuteFusion(
                                                      scenario.training, scenario.parallel))
                                                : nlohmann::json(nullptr)},
      {"moe_router_padding", MoeRouterPaddingJson(scenario)},
      {"fp8_recipe", Fp8RecipeJson(scenario)},
      {"grad_reduce_dtype", std::string(DTypeName(scenario.training.grad_reduce_dtype))},
      {"moe_capacity_factor", scenario.training.moe_capacity_factor},
      {"moe_pad_to_capacity", scenario.training.moe_pad_to_capacity},
      {"moe_imbalance", scenario.training.moe_imbalance},
      {"moe_expert_load", MoeExpertLoad(scenario.training)},
      {"step_time_s", p.step_time.value()},
      {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu},
      {"tokens_per_s", p.tokens_per_s},
      {"sequences_per_s", p.tokens_per_s / static_cast<double>(scenario.training.seq_len)},
      {"model_flops_per_step", p.model_flops_per_step.value()},
      {"tflops_per_gpu", p.tflops_per_gpu},
      {"peak_tflops_per_gpu", ToTeraFlopsPerSecond(p.peak_flops_per_gpu)},
      {"mfu", p.mfu},
      {"mfu_formula", std::string(kMfuFormula)},
      {"clock_scaled_share", p.clock_scaled_share},
      {"breakdown", breakdown},
      {"layers", layers},
      {"modules", modules},
      {"memory",
       {{"peak_bytes", p.memory.peak.value()},
        {"peak_stage", p.memory.peak_stage},
        {"capacity_bytes", p.memory.capacity.value()},
        {"fits", p.memory.fits},
        {"stages", stages}}},
      {"peak_memory_bytes", p.peak_memory_per_gpu.value()},
      {"fits_in_memory", p.fits_in_memory},
      {"defaults_used", p.defaults_used},
  };
  if (!p.network.empty()) j["network"] = NetworkUsesJson(p);
  if (p.measured_tokens_per_s_per_gpu.has_value()) {
    j["measured_tokens_per_s_per_gpu"] = *p.measured_tokens_per_s_per_gpu;
    j["error_pct"] = p.error_pct.value_or(0.0);
  }
  if (!p.op_tables.empty()) {
    nlohmann::json ops = nlohmann::json::array();
    for (const OpTable& t : p.op_tables) {
      for (const Op& op : t.ops) {
        const OpRates rates = RatesOf(op);
        ops.push_back({{"group", t.group},
                       {"count", t.count},
                       {"module", std::string(op.module)},
                       {"op", std::string(op.name)},
                       {"kind", std::string(OpKindName(op.kind))},
                       {"phase", std::string(OpPhaseName(op.phase))},
                       {"shape", OpShapeText(op)},
                       {"time_s", op.time.value()},
                       {"flops", op.flops.value()},
                       {"bytes", op.bytes.value()},
                       {"tflops", rates.tflops},
                       {"gbps", rates.gbps},
                       {"clock_scaled_share", rates.clock_scaled_share},
                       {"host_s", HostIssueTime(scenario, op).value()},
                       {"provenance", std::string(ProvenanceName(op.provenance))}});
      }
    }
    j["ops"] = std::move(ops);
  }
  return j;
}

std::string OpShapeText(const Op& op) {
  switch (op.kind) {
    case OpKind::kGemm: {
      const GemmShape& g = op.gemm;
      std::string s = absl::StrFormat("%dx%dx%d", g.m, g.n, g.k);
      if (g.batch > 1) absl::StrAppendFormat(&s, " x%d", g.batch);
      if (g.kernels > 1) absl::StrAppendFormat(&s, " (%d kernels)", g.kernels);
      if (op.repeat > 1) absl::StrAppendFormat(&s, " (%d runs)", op.repeat);
      absl::StrAppendFormat(&s, " %s%s%s", DTypeName(g.dtype), g.block_scaled ? "/blk" : "",
                            g.transpose_a ? " Aᵀ" : (g.transpose_b ? " Bᵀ" : ""));
      return s;
    }
    case OpKind::kAttention: {
      const AttentionShape& a = op.attention;
      return absl::StrFormat("b%d h%d/%d s%dx%d d%d/%d%s", a.batch, a.num_q_heads, a.num_kv_heads,
                             a.seq_q, a.seq_kv, a.qk_head_dim, a.v_head_dim,
                             a.causal ? " causal" : "");
    }
    case OpKind::kMemory:
      return absl::StrFormat("%.1f MB", op.memory.bytes.value() * 1e-6);
    case OpKind::kCollective:
      // "allgather 134.2 MB x8" (8 ranks), "... x8 stride 8" for a strided group.
      return absl::StrCat(
          absl::StrFormat("%s %.1f MB x%d", CollectiveKindName(op.collective.kind),
                          op.collective.bytes.value() * 1e-6, op.collective.group.size),
          op.collective.group.stride > 1
              ? absl::StrFormat(" stride %d", op.collective.group.stride)
              : std::string());
  }
  return "";
}

// Trace category and name (the name is a prefix before the micro-batch for a pass) of each
// TimelineKind, in enum order.
struct TraceKindInfo {
  const char* cat;
  const char* name;
};
constexpr TraceKindInfo kTraceKinds[] = {
    {"forward", "F"},      {"backward", "B"},     {"weight_grad", "W"},
    {"dp_comm", "DP grad sync"}, {"optimizer", "optimizer"}, {"dp_reduce", "grad bucket reduce"}};

std::string_view TimelineKindName(TimelineKind kind) {
  return kTraceKinds[static_cast<size_t>(kind)].name;
}

void AppendTraceThread(nlohmann::json& events, int64_t tid, const std::string& name) {
  events.push_back(
      {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}});
  events.push_back({{"name", "thread_sort_index"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"tid", tid},
                    {"args", {{"sort_index", tid}}}});
}

std::string SensitivityText(const std::vector<SettingChange>& changes, double tgs) {
  std::string out =
      "\nSensitivity to run settings (each switched alone and re-projected: the spread a "
      "setting not pinned down leaves)\n";
  if (changes.empty()) return out + "  no setting of the catalogue applies\n";
  for (const SettingChange& c : changes) {
    absl::StrAppendFormat(&out, "  %-20s %-12s -> %-31s %s  %s\n", c.setting, c.projected,
                          c.alternative, ReprojectedCells(c.result, tgs), c.result.flags);
  }
  const SettingsRange range = RangeOf(changes, tgs);
  absl::StrAppendFormat(&out, "  range %.1f .. %.1f TGS (%+.1f%% .. %+.1f%% of the projection)\n",
                        range.low, range.high, tgs > 0 ? 100 * (range.low - tgs) / tgs : 0.0,
                        tgs > 0 ? 100 * (range.high - tgs) / tgs : 0.0);
  return out;
}

nlohmann::json SensitivityJson(const std::vector<SettingChange>& changes, double tgs) {
  nlohmann::json out = nlohmann::json::array();
  for (const SettingChange& c : changes) {
    nlohmann::json j = ReprojectedJson(c.result, tgs);
    j["setting"] = c.setting;
    j["projected"] = c.projected;
    j["alternative"] = c.alternative;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json TimelineTraceJson(const Scenario& scenario, const Projection& p) {
  nlohmann::json events = nlohmann::json::array();
  const bool interleaved = scenario.parallel.vpp > 1;
  events.push_back(
      {{"name", "process_name"},
       {"ph", "M"},
       {"pid", 0},
       {"args",
        {{"name", absl::StrFormat("%s: %s, schedule %s, %d micro-batches", scenario.name, p.layout,
                                  p.schedule, p.micro_batches)}}}});
  // Rank r: compute on thread 2r, its DP communication stream on thread 2r + 1.
  for (int64_t r = 0; r < scenario.parallel.pp; ++r) {
    for (int64_t stream = 0; stream < 2; ++stream) {
      const int64_t tid = 2 * r + stream;
      AppendTraceThread(events, tid, absl::StrCat("PP rank ", r, stream == 0 ? "" : " DP comm"));
    }
  }
  for (const TimelineEvent& e : p.timeline) {
    const TraceKindInfo& info = kTraceKinds[static_cast<size_t>(e.kind)];
    const bool comm_stream = e.kind == TimelineKind::kGradReduce;
    nlohmann::json ev = {{"ph", "X"},
                         {"pid", 0},
                         {"tid", 2 * e.rank + (comm_stream ? 1 : 0)},
                         {"cat", info.cat},
                         {"ts", ToMicroseconds(e.start)},
                         {"dur", ToMicroseconds(e.end - e.start)}};
    if (e.micro_batch >= 0) {
      ev["name"] = interleaved ? absl::StrCat(info.name, e.micro_batch, ".c", e.chunk)
                               : absl::StrCat(info.name, e.micro_batch);
      ev["args"] = {{"micro_batch", e.micro_batch}, {"chunk", e.chunk}};
    } else {
      ev["name"] = info.name;
    }
    events.push_back(std::move(ev));
  }
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

std::string OpsText(const Scenario& scenario, const Projection& p) {
  std::string out;
  for (const OpTable& t : p.op_tables) {
    Seconds total(0), once(0);
    for (const Op& op : t.ops) (op.phase == OpPhase::kOncePerStep ? once : total) += op.time;
    absl::StrAppendFormat(&out, "\nOps: %s (x%d), one micro-batch, %.3f ms before overlap", t.group,
                          t.count, Ms(total));
    if (once.value() > 0) {
      absl::StrAppendFormat(&out, " (+ %.3f ms once per step, in the first micro-batch)",
                            Ms(once));
    }
    out += "\n";
    absl::StrAppendFormat(&out, "  %-10s %-24s %-14s %-38s %9s %8s %8s %6s %5s %7s\n", "module",
                          "op", "phase", "shape", "ms", "TFLOP/s", "GB/s", "share", "clk",
                          "host us");
    for (const Op& op : t.ops) {
      const double time = op.time.value();
      const OpRates rates = RatesOf(op);
      absl::StrAppendFormat(
          &out, "  %-10s %-24s %-14s %s %9.3f %8.1f %8.0f %5.1f%% %4.0f%% %7.1f%s\n", op.module,
          op.name, OpPhaseName(op.phase), PadToColumns(OpShapeText(op), 38), Ms(op.time),
          rates.tflops, rates.gbps,
          total.value() > 0 ? 100.0 * time / total.value() : 0.0,
          100.0 * rates.clock_scaled_share, HostIssueTime(scenario, op).value() * 1e6,
          op.provenance == Provenance::kSimulated ? ""
                                                  : absl::StrCat("  ", std::string(ProvenanceName(op.provenance))));
    }
  }
  return out;
}

}  // namespace projector
