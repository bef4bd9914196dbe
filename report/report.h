// Report of a projection: a readable text table for people and JSON for programs. The JSON
// field names are stable and documented here (units in the key: _s seconds, _bytes bytes).
#ifndef PROJECTOR_REPORT_REPORT_H_
#define PROJECTOR_REPORT_REPORT_H_

#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "projection/projection.h"
#include "scenario/scenario.h"
#include "studies/bottlenecks.h"
#include "studies/fit_advice.h"
#include "studies/sensitivity.h"

namespace projector {

// The headline rows of a report: ("model", "Llama-3.1-70B (80 layers, hidden 8192)"), then
// "hardware", "layout" and "training".
std::vector<std::pair<std::string, std::string>> ProjectionSummaryRows(
    const Scenario& scenario, const Projection& projection);

// Text: scenario, layout, defaults used, per-module fwd/bwd/recompute ms for each layer kind,
// per-layer totals, step breakdown with % of step, TGS, TFLOP/s/GPU, MFU, memory per stage and
// peak with a "does not fit" flag, and projected vs measured TGS when a measurement is given.
std::string ProjectionText(const Scenario& scenario, const Projection& projection);

// JSON object:
//   scenario (string), model (string), gpu (string), layout (string), num_gpus (int),
//   schedule ("1f1b" | "interleaved" | "zb-h1"), micro_batches (int), global_batch (int), seq_len
//   (int), attention_kernel (the kernel that runs: "fa2", "fa3", ..., "flash" or "unfused"),
//   step_time_s, tokens_per_s_per_gpu, tokens_per_s, model_flops_per_step, tflops_per_gpu,
//   peak_tflops_per_gpu, mfu (fraction), mfu_formula (string), clock_scaled_share (fraction),
//   breakdown {compute_s, exposed_tp_comm_s, exposed_cp_comm_s, exposed_ep_comm_s,
//              pipeline_bubble_s, p2p_s, exposed_dp_comm_s, exposed_fsdp_comm_s, fsdp_copies_s,
//              optimizer_s},
//   layers [{kind ("dense" | "moe"), count, forward_s, backward_s, recompute_s, total_s,
//            activation_bytes}],
//   modules [{layer ("dense" | "moe" | "embedding" | "output"), module, forward_s, backward_s,
//             recompute_s}],
//   memory {peak_bytes, peak_stage, capacity_bytes, fits,
//           stages [{stage, parameters, weights_bytes, gradients_bytes, optimizer_state_bytes,
//                    activations_bytes, workspace_bytes, total_bytes,
//                    in_flight_micro_batches}]},
//   peak_memory_bytes, fits_in_memory (bool), defaults_used [string],
//   and, only with a measurement: measured_tokens_per_s_per_gpu, error_pct.
//   and, only when the projection kept its ops (ProjectionOptions::keep_ops):
//   ops [{group ("dense layer" | "moe layer" | "embedding" | "output"), count, module, op,
//         kind ("gemm" | "attention" | "memory" | "collective"), phase ("forward" |
//         "backward_dgrad" | "backward_wgrad" | "recompute"), shape (string), time_s, flops,
//         bytes, tflops, gbps, clock_scaled_share (fraction), provenance}].
nlohmann::json ProjectionJson(const Scenario& scenario, const Projection& projection);

// The lines a projection that does not fit opens with: the peak against the capacity and the
// amount over, then the changes that fit (AdviseFit) with their peak and TGS, or a line saying
// no single change does.
std::string FitAdviceText(const FitAdvice& advice);
// {"peak_bytes", "capacity_bytes", "over_bytes", "changes": [{"flags", "peak_bytes",
// "tokens_per_s_per_gpu"}]}.
nlohmann::json FitAdviceJson(const FitAdvice& advice);

// The bottleneck section (AnalyzeBottlenecks): each bottleneck with its severity, what it
// measured against its threshold, and its re-projected recommendations with the TGS each gives
// (against `tgs`, the projection's) and whether it fits.
std::string BottlenecksText(const std::vector<Bottleneck>& bottlenecks, double tgs);
// [{"kind", "severity", "value", "threshold", "detail", "recommendations": [{"flags",
// "tokens_per_s_per_gpu", "change_pct", "peak_bytes", "fits"}]}].
nlohmann::json BottlenecksJson(const std::vector<Bottleneck>& bottlenecks, double tgs);

// The run-setting sensitivity (RunSettingSensitivity): each setting with its projected and
// alternative value, the re-projected TGS, change against `tgs` and peak, and the flags that
// make it; then the range over them (the projection included).
std::string SensitivityText(const std::vector<SettingChange>& changes, double tgs);
// [{"setting", "projected", "alternative", "flags", "tokens_per_s_per_gpu", "change_pct",
// "peak_bytes", "fits"}].
nlohmann::json SensitivityJson(const std::vector<SettingChange>& changes, double tgs);

// The replayed step (ProjectionOptions::keep_timeline) in the Chrome trace event format that
// Perfetto (ui.perfetto.dev) and chrome://tracing open: {"traceEvents": [...], "displayTimeUnit":
// "ms"}. Two threads per pipeline rank r in one process (scenario and layout): 2r "PP rank r"
// with complete events ("ph": "X", ts and dur in µs) named "F3" / "B3" / "W3" (micro-batch 3;
// "F3.c1" for model chunk 1 when interleaved), cat forward / backward / weight_grad, args
// {micro_batch, chunk}, then the rank's tail "DP grad sync" (cat dp_comm: exposed gradient
// reduction and parameter gather, incl. the compute the hidden reduces slowed) and "optimizer";
// 2r + 1 "PP rank r DP comm" with each "grad bucket reduce" (cat dp_reduce). Only metadata
// without a timeline.
nlohmann::json TimelineTraceJson(const Scenario& scenario, const Projection& projection);
// Appends the Chrome-trace metadata naming thread `tid` and keeping the threads in tid order.
void AppendTraceThread(nlohmann::json& events, int64_t tid, const std::string& name);

// The trace name of a TimelineKind: "F", "B", "W" (followed by the micro-batch for a pass),
// "DP grad sync", "optimizer", "grad bucket reduce".
std::string_view TimelineKindName(TimelineKind kind);

// Per-op table of every kept op table (empty without ProjectionOptions::keep_ops): op, phase,
// shape, time, achieved TFLOP/s and GB/s, share of its group's time, clock-scaled share, and
// the host's CPU time to issue it (0 under CUDA graphs).
std::string OpsText(const Scenario& scenario, const Projection& projection);

// "m×n×k" (×batch, transposes) for GEMMs; "b×hq/hkv×sq×skv×d" for attention; bytes for memory
// ops; "kind bytes over group" for collectives.
std::string OpShapeText(const Op& op);

}  // namespace projector

#endif  // PROJECTOR_REPORT_REPORT_H_
