#include "report/network_report.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/number_format.h"
#include "network/network_file.h"

namespace projector {
namespace {

double Gbps(BytesPerSecond b) { return b.value() / 1e9; }
double Ns(Seconds s) { return s.value() * 1e9; }

// "4x4" for the 2D topologies, "radix 64, 2 tiers" for a fat tree, "" else.
std::string ShapeText(const DimensionSummary& d) {
  const NetworkDimension& dim = d.dimension;
  switch (dim.topology) {
    case TopologyKind::kMesh2d:
    case TopologyKind::kTorus2d:
      return absl::StrCat(dim.x, "x", dim.y);
    case TopologyKind::kRing:
      return dim.bidirectional ? "bidirectional" : "one way";
    case TopologyKind::kFatTree:
      return absl::StrFormat(
          "radix %d, %d tier%s%s", dim.radix, d.fat_tree_tiers, d.fat_tree_tiers == 1 ? "" : "s",
          dim.oversubscription > 1 ? absl::StrFormat(", %g:1", dim.oversubscription) : "");
    case TopologyKind::kFullyConnected:
    case TopologyKind::kSwitch:
      break;
  }
  return "";
}

}  // namespace

std::string NetworkSummaryText(const NetworkSummary& s) {
  std::string out =
      absl::StrFormat("network %s%s: %s NPUs, %s switches, %s links\n", s.name,
                      s.source_file.empty() ? "" : absl::StrCat(" (", s.source_file, ")"),
                      FormatCount(s.npus), FormatCount(s.switches), FormatCount(s.links));
  absl::StrAppendFormat(&out, "%-3s %-16s %-22s %6s %9s %9s %10s %6s %9s %9s %8s %12s\n", "dim",
                        "topology", "shape", "NPUs", "instances", "link GB/s", "latency ns", "eff.",
                        "NPU GB/s", "links", "diameter", "bisect. GB/s");
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    const DimensionSummary& dim = s.dimensions[d];
    const NetworkDimension& spec = dim.dimension;
    const std::string link_rate =
        spec.links > 1 ? absl::StrFormat("%dx%g", spec.links, Gbps(spec.link_bandwidth))
                       : absl::StrFormat("%g", Gbps(spec.link_bandwidth));
    absl::StrAppendFormat(&out, "%-3d %-16s %-22s %6s %9s %9s %10g %6.2f %9g %9s %8d %12s\n", d,
                          TopologyName(spec.topology), ShapeText(dim), FormatCount(spec.npus),
                          FormatCount(dim.instances), link_rate, Ns(spec.link_latency),
                          spec.efficiency, Gbps(dim.injection), FormatCount(dim.links),
                          dim.diameter_hops,
                          FormatCount(static_cast<int64_t>(Gbps(dim.bisection) + 0.5)));
    if (!spec.label.empty()) absl::StrAppendFormat(&out, "    %s\n", spec.label);
  }
  absl::StrAppendFormat(
      &out,
      "diameter %d hops (dimension-order routes); bisection bandwidth %s GB/s one way (the "
      "weakest dimension's cut)\n",
      s.diameter_hops, FormatCount(static_cast<int64_t>(Gbps(s.bisection) + 0.5)));
  return out;
}

nlohmann::json NetworkSummaryJson(const NetworkSummary& s) {
  NetworkSpec spec{.name = s.name, .source_file = s.source_file, .dimensions = {}};
  for (const DimensionSummary& d : s.dimensions) spec.dimensions.push_back(d.dimension);
  nlohmann::json dims = NetworkSpecJson(spec)["dimensions"];
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    const DimensionSummary& dim = s.dimensions[d];
    dims[d]["instances"] = dim.instances;
    dims[d]["links_built"] = dim.links;
    dims[d]["switches"] = dim.switches;
    if (dim.fat_tree_tiers > 0) dims[d]["fat_tree_tiers"] = dim.fat_tree_tiers;
    dims[d]["diameter_hops"] = dim.diameter_hops;
    dims[d]["bisection_gbps"] = Gbps(dim.bisection);
    dims[d]["npu_injection_gbps"] = Gbps(dim.injection);
  }
  return {{"name", s.name},
          {"source_file", s.source_file},
          {"npus", s.npus},
          {"switches", s.switches},
          {"links", s.links},
          {"diameter_hops", s.diameter_hops},
          {"bisection_gbps", Gbps(s.bisection)},
          {"dimensions", std::move(dims)}};
}

std::string RouteText(const RouteSummary& r) {
  std::string out = absl::StrFormat(
      "route %d -> %d on %s (%s): %d hop%s, %g ns of link latency, narrowest link %g GB/s\n",
      r.from, r.to, r.network, r.shortest ? "shortest path" : "dimension-order routing",
      r.hops.size(), r.hops.size() == 1 ? "" : "s", Ns(r.latency), Gbps(r.bottleneck));
  if (r.hops.empty()) return out;
  absl::StrAppendFormat(&out, "%-4s %-26s %-26s %-4s %9s %10s\n", "hop", "from", "to", "dim",
                        "GB/s", "latency ns");
  for (size_t i = 0; i < r.hops.size(); ++i) {
    const RouteHop& h = r.hops[i];
    absl::StrAppendFormat(&out, "%-4d %-26s %-26s %-4d %9g %10g\n", i + 1, h.from_name, h.to_name,
                          h.dimension, Gbps(h.bandwidth), Ns(h.latency));
  }
  return out;
}

nlohmann::json RouteJson(const RouteSummary& r) {
  nlohmann::json path = nlohmann::json::array();
  nlohmann::json hops = nlohmann::json::array();
  path.push_back(r.from);
  for (const RouteHop& h : r.hops) {
    path.push_back(h.to);
    hops.push_back({{"from", h.from},
                    {"to", h.to},
                    {"from_name", h.from_name},
                    {"to_name", h.to_name},
                    {"dimension", h.dimension},
                    {"bandwidth_gbps", Gbps(h.bandwidth)},
                    {"latency_ns", Ns(h.latency)}});
  }
  return {{"network", r.network},
          {"from", r.from},
          {"to", r.to},
          {"routing", r.shortest ? "shortest" : "dimension_order"},
          {"hop_count", r.hops.size()},
          {"path", std::move(path)},
          {"hops", std::move(hops)},
          {"latency_ns", Ns(r.latency)},
          {"bottleneck_gbps", Gbps(r.bottleneck)}};
}

std::string NetworkValidationText(const NetworkValidation& v) {
  std::string out = absl::StrFormat(
      "Collectives: measured bus bandwidth against the network model (%s), each GPU profile's "
      "built-in network with NCCL's costs\n%-36s %-10s %5s %5s %-14s %-9s %10s %10s %-16s %7s\n",
      v.cases_file, "case", "gpu", "nodes", "ranks", "collective", "asked", "size", "measured",
      "projected (alg)", "error");
  for (const NetworkCaseResult& r : v.cases) {
    absl::StrAppendFormat(&out, "%-36s %-10s %5d %5d %-14s %-9s %10s %10.1f %6.1f %-9s %+6.1f%%\n",
                          r.id.substr(0, 36), r.gpu, r.nodes, r.ranks_per_node,
                          CollectiveKindName(r.kind), r.requested_algorithm,
                          absl::StrFormat("%.0f MiB", r.bytes / (1024.0 * 1024.0)),
                          r.measured_busbw_gbps, r.projected_busbw_gbps, r.algorithm, r.error_pct);
  }
  absl::StrAppendFormat(&out, "median |error| %.1f%%, %d of %d within 10%%\n",
                        v.median_abs_error_pct, v.within_10_pct, v.cases.size());
  return out;
}

nlohmann::json NetworkValidationJson(const NetworkValidation& v) {
  nlohmann::json cases = nlohmann::json::array();
  for (const NetworkCaseResult& r : v.cases) {
    cases.push_back({{"id", r.id},
                     {"gpu", r.gpu},
                     {"nodes", r.nodes},
                     {"ranks_per_node", r.ranks_per_node},
                     {"collective", std::string(CollectiveKindName(r.kind))},
                     {"requested_algorithm", r.requested_algorithm},
                     {"bytes", r.bytes},
                     {"measured_busbw_gbps", r.measured_busbw_gbps},
                     {"projected_busbw_gbps", r.projected_busbw_gbps},
                     {"algorithm", r.algorithm},
                     {"error_pct", r.error_pct}});
  }
  return {{"cases_file", v.cases_file},
          {"cases", std::move(cases)},
          {"median_abs_error_pct", v.median_abs_error_pct},
          {"within_10_pct", v.within_10_pct}};
}

}  // namespace projector
