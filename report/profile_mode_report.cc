#include "report/profile_mode_report.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/report.h"

namespace projector {

namespace {

using nlohmann::json;

json RowJson(const ProfileOpRow& r) {
  json j = json::object();
  if (!r.layer.empty()) j["layer"] = r.layer;
  j["module"] = r.module;
  j["name"] = r.name;
  if (!r.phase.empty()) j["phase"] = r.phase;
  j["shape"] = r.shape;
  j["simulated_us"] = r.simulated_us;
  j["projected_us"] = r.projected_us;
  if (r.measured_us) {
    j["measured_us"] = *r.measured_us;
    j["error_pct"] = ErrorPct(r.simulated_us, *r.measured_us);
  }
  j["provenance"] = std::string(ProvenanceName(r.provenance));
  if (!r.source_shape.empty()) j["source_shape"] = r.source_shape;
  j["scale"] = r.scale;
  return j;
}

std::string OptUs(const std::optional<double>& v) {
  return v ? absl::StrFormat("%10.1f", *v) : std::string("         -");
}

std::string OptErr(double sim, const std::optional<double>& meas) {
  return meas ? absl::StrFormat("%+7.1f%%", ErrorPct(sim, *meas)) : std::string("       -");
}

}  // namespace

json ProfileModeJson(const Scenario& target, const ProfileModeReport& report) {
  json j = json::object();
  j["mode"] = report.both ? "both" : "profile";
  json profile = json::object();
  profile["file"] = report.profile_file;
  profile["tool"] = report.profile_tool;
  profile["device"] = report.profile_device;
  profile["model"] = report.measured_model;
  profile["layout"] = report.measured_layout;
  j["profile"] = std::move(profile);
  if (report.both) {
    json cmp = json::object();
    json ops = json::array();
    for (const ProfileOpRow& r : report.comparison_ops) ops.push_back(RowJson(r));
    cmp["ops"] = std::move(ops);
    json modules = json::array();
    for (const ProfileModuleRow& m : report.comparison_modules) {
      json mj = json::object();
      mj["layer_kind"] = m.layer_kind;
      mj["module"] = m.module;
      mj["simulated_forward_us"] = m.simulated_forward_us;
      mj["simulated_backward_us"] = m.simulated_backward_us;
      if (m.measured_forward_us) {
        mj["measured_forward_us"] = *m.measured_forward_us;
        mj["forward_error_pct"] = ErrorPct(m.simulated_forward_us, *m.measured_forward_us);
      }
      if (m.measured_backward_us) {
        mj["measured_backward_us"] = *m.measured_backward_us;
        mj["backward_error_pct"] = ErrorPct(m.simulated_backward_us, *m.measured_backward_us);
      }
      modules.push_back(std::move(mj));
    }
    cmp["modules"] = std::move(modules);
    cmp["mean_abs_op_error_pct"] = report.mean_abs_op_error_pct;
    cmp["max_abs_op_error_pct"] = report.max_abs_op_error_pct;
    j["comparison"] = std::move(cmp);
  }
  json module_terms = json::array();
  for (const ProfileModuleTermRow& m : report.module_terms) {
    json mj = json::object();
    mj["layer_kind"] = m.layer_kind;
    mj["module"] = m.module;
    mj["phase"] = m.phase;
    mj["measured_us"] = m.measured_us;
    mj["simulated_measured_us"] = m.simulated_measured_us;
    mj["simulated_target_us"] = m.simulated_target_us;
    mj["projected_us"] = m.projected_us;
    mj["provenance"] = std::string(ProvenanceName(m.provenance));
    module_terms.push_back(std::move(mj));
  }
  j["module_terms"] = std::move(module_terms);
  json ops = json::array();
  for (const ProfileOpRow& r : report.ops) ops.push_back(RowJson(r));
  j["ops"] = std::move(ops);
  json terms = json::array();
  for (const ProfileTermRow& t : report.terms) {
    json tj = json::object();
    tj["term"] = t.term;
    tj["time_s"] = t.time_s;
    tj["provenance"] = t.provenance;
    terms.push_back(std::move(tj));
  }
  j["terms"] = std::move(terms);
  json counts = json::object();
  counts["measured"] = report.measured_ops;
  counts["scaled_from_measured"] = report.scaled_ops;
  counts["simulated"] = report.simulated_ops;
  j["provenance_counts"] = std::move(counts);
  j["projection"] = ProjectionJson(target, report.projection);
  if (report.simulated_projection) {
    j["simulated_projection"] = ProjectionJson(target, *report.simulated_projection);
  }
  j["warnings"] = report.warnings;
  return j;
}

std::string ProfileModeText(const Scenario& target, const ProfileModeReport& report) {
  std::string out;
  absl::StrAppendFormat(&out, "Profile %s (%s%s%s): %s, %s\n", report.profile_file,
                        report.profile_tool.empty() ? "no tool recorded" : report.profile_tool,
                        report.profile_device.empty() ? "" : ", ", report.profile_device,
                        report.measured_model, report.measured_layout);
  if (report.both) {
    absl::StrAppend(&out, "\nMeasured ops vs simulate model (on the measured hardware)\n");
    absl::StrAppendFormat(&out, "  %-16s %-52s %10s %10s %8s\n", "module/name", "shape",
                          "sim us", "meas us", "error");
    for (const ProfileOpRow& r : report.comparison_ops) {
      absl::StrAppendFormat(&out, "  %-16s %-52s %10.1f %s %s\n",
                            r.module.empty() && r.name.empty() ? "-" : absl::StrCat(r.module, "/", r.name),
                            r.shape, r.simulated_us, OptUs(r.measured_us),
                            OptErr(r.simulated_us, r.measured_us));
    }
    absl::StrAppendFormat(&out, "  mean |error| %.1f%%, max |error| %.1f%%\n",
                          report.mean_abs_op_error_pct, report.max_abs_op_error_pct);
    if (!report.comparison_modules.empty()) {
      absl::StrAppend(&out, "\nMeasured modules vs simulate model (profile's scenario)\n");
      absl::StrAppendFormat(&out, "  %-6s %-10s %10s %10s %8s %10s %10s %8s\n", "layer", "module",
                            "fwd sim", "fwd meas", "error", "bwd sim", "bwd meas", "error");
      for (const ProfileModuleRow& m : report.comparison_modules) {
        absl::StrAppendFormat(&out, "  %-6s %-10s %10.1f %s %s %10.1f %s %s\n",
                              m.layer_kind.empty() ? "-" : m.layer_kind, m.module,
                              m.simulated_forward_us, OptUs(m.measured_forward_us),
                              OptErr(m.simulated_forward_us, m.measured_forward_us),
                              m.simulated_backward_us, OptUs(m.measured_backward_us),
                              OptErr(m.simulated_backward_us, m.measured_backward_us));
      }
    }
  }
  if (!report.module_terms.empty()) {
    absl::StrAppend(&out, "\nMeasured module times used (measured x simulated target / simulated "
                    "measured)\n");
    absl::StrAppendFormat(&out, "  %-9s %-9s %-8s %10s %10s %10s %10s  %s\n", "layer", "module",
                          "phase", "meas us", "sim meas", "sim tgt", "used us", "source");
    for (const ProfileModuleTermRow& m : report.module_terms) {
      absl::StrAppendFormat(&out, "  %-9s %-9s %-8s %10.1f %10.1f %10.1f %10.1f  %s\n",
                            m.layer_kind, m.module, m.phase, m.measured_us,
                            m.simulated_measured_us, m.simulated_target_us, m.projected_us,
                            ProvenanceName(m.provenance));
    }
  }
  absl::StrAppendFormat(&out, "\nTarget ops and their source (%d measured, %d scaled from "
                        "measured, %d simulated)\n",
                        report.measured_ops, report.scaled_ops, report.simulated_ops);
  absl::StrAppendFormat(&out, "  %-9s %-30s %-14s %10s %10s  %s\n", "layer", "module/name",
                        "phase", "sim us", "used us", "source");
  for (const ProfileOpRow& r : report.ops) {
    absl::StrAppendFormat(&out, "  %-9s %-30s %-14s %10.1f %10.1f  %s%s\n", r.layer,
                          absl::StrCat(r.module, "/", r.name), r.phase, r.simulated_us,
                          r.projected_us, ProvenanceName(r.provenance),
                          r.source_shape.empty()
                              ? std::string()
                              : absl::StrFormat(" (x%.3f from %s)", r.scale, r.source_shape));
  }
  absl::StrAppend(&out, "\nStep terms and their source\n");
  for (const ProfileTermRow& t : report.terms) {
    absl::StrAppendFormat(&out, "  %-18s %10.3f ms  %s\n", t.term, t.time_s * 1e3, t.provenance);
  }
  for (const std::string& w : report.warnings) absl::StrAppend(&out, "warning: ", w, "\n");
  absl::StrAppend(&out, "\nProjection (from the measured side)\n",
                  ProjectionText(target, report.projection));
  if (report.simulated_projection) {
    absl::StrAppendFormat(
        &out, "\nSimulate-only projection of the same target: %.1f tokens/s/GPU (profile-driven: "
        "%.1f, %+.1f%%)\n",
        report.simulated_projection->tokens_per_s_per_gpu, report.projection.tokens_per_s_per_gpu,
        ErrorPct(report.projection.tokens_per_s_per_gpu,
                 report.simulated_projection->tokens_per_s_per_gpu));
  }
  return out;
}

}  // namespace projector
