#include "network/network_file.h"

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "core/yaml_reader.h"

namespace projector {
namespace {

const std::vector<std::string>& TopologyNameList() {
  static const std::vector<std::string> names(std::begin(kTopologyNames), std::end(kTopologyNames));
  return names;
}

// Keys that only some topologies take: naming one elsewhere is a mistake, not a no-op.
absl::Status RejectForeignKeys(JsonObject& o, TopologyKind kind) {
  const bool grid = kind == TopologyKind::kMesh2d || kind == TopologyKind::kTorus2d;
  const struct {
    std::string_view key;
    bool allowed;
    std::string_view owner;
  } keys[] = {{"x", grid, "mesh2d and torus2d"},
              {"y", grid, "mesh2d and torus2d"},
              {"bidirectional", kind == TopologyKind::kRing, "ring"},
              {"radix", kind == TopologyKind::kFatTree, "fat_tree"},
              {"oversubscription", kind == TopologyKind::kFatTree, "fat_tree"},
              {"in_network_reduction_gbps", kind == TopologyKind::kSwitch, "switch"},
              {"rail_optimized", kind == TopologyKind::kSwitch || kind == TopologyKind::kFatTree,
               "switch and fat_tree"}};
  for (const auto& k : keys) {
    if (!k.allowed && o.Has(k.key)) {
      return o.FieldError(k.key, absl::StrCat("applies to ", std::string(k.owner), " only, not to ",
                                              std::string(TopologyName(kind))));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<NetworkDimension> ReadDimension(JsonObject o) {
  NetworkDimension dim;
  PROJECTOR_ASSIGN_OR_RETURN(const std::string topology, o.Enum("topology", TopologyNameList()));
  PROJECTOR_ASSIGN_OR_RETURN(dim.topology, ParseTopology(topology));
  PROJECTOR_RETURN_IF_ERROR(RejectForeignKeys(o, dim.topology));
  PROJECTOR_ASSIGN_OR_RETURN(dim.label, o.StringOr("label", ""));
  if (dim.topology == TopologyKind::kMesh2d || dim.topology == TopologyKind::kTorus2d) {
    PROJECTOR_ASSIGN_OR_RETURN(dim.x, o.PositiveInt("x"));
    PROJECTOR_ASSIGN_OR_RETURN(dim.y, o.PositiveInt("y"));
    PROJECTOR_ASSIGN_OR_RETURN(dim.npus, o.IntOr("npus", dim.x * dim.y));
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(dim.npus, o.PositiveInt("npus"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(dim.bidirectional, o.BoolOr("bidirectional", true));
  PROJECTOR_ASSIGN_OR_RETURN(const double bandwidth_gbps, o.PositiveNumber("bandwidth_gbps"));
  dim.link_bandwidth = GigabytesPerSecond(bandwidth_gbps);
  PROJECTOR_ASSIGN_OR_RETURN(const double latency_ns,
                             o.PositiveNumber("latency_ns", /*allow_zero=*/true));
  dim.link_latency = Seconds(latency_ns * 1e-9);
  PROJECTOR_ASSIGN_OR_RETURN(dim.links, o.IntOr("links", 1));
  if (dim.topology == TopologyKind::kFatTree) {
    PROJECTOR_ASSIGN_OR_RETURN(dim.radix, o.PositiveInt("radix"));
    PROJECTOR_ASSIGN_OR_RETURN(dim.oversubscription, o.NumberOr("oversubscription", 1.0));
  }
  PROJECTOR_ASSIGN_OR_RETURN(dim.efficiency, o.NumberOr("efficiency", 1.0));
  PROJECTOR_ASSIGN_OR_RETURN(dim.rail_optimized, o.BoolOr("rail_optimized", true));
  static const std::vector<std::string> kLinkTypes(std::begin(kLinkTypeNames),
                                                   std::end(kLinkTypeNames));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string link_type,
                             o.EnumOr("link_type", kLinkTypes, "auto"));
  PROJECTOR_ASSIGN_OR_RETURN(dim.link_type, ParseLinkType(link_type));
  PROJECTOR_ASSIGN_OR_RETURN(const double reduction_gbps,
                             o.NumberOr("in_network_reduction_gbps", 0.0));
  dim.in_network_reduction = GigabytesPerSecond(reduction_gbps);
  PROJECTOR_RETURN_IF_ERROR(o.CheckNoUnknownKeys());
  return dim;
}

absl::StatusOr<NetworkSpec> ReadToolFormat(JsonObject top) {
  NetworkSpec spec;
  PROJECTOR_ASSIGN_OR_RETURN(spec.name, top.StringOr("name", ""));
  top.Accept("description");
  top.Accept("sources");
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* dims, top.Array("dimensions"));
  for (size_t i = 0; i < dims->size(); ++i) {
    PROJECTOR_ASSIGN_OR_RETURN(
        JsonObject o, JsonObject::Make((*dims)[i], top.origin(), absl::StrCat("/dimensions/", i)));
    PROJECTOR_ASSIGN_OR_RETURN(NetworkDimension dim, ReadDimension(std::move(o)));
    spec.dimensions.push_back(std::move(dim));
  }
  PROJECTOR_RETURN_IF_ERROR(top.CheckNoUnknownKeys());
  return spec;
}

// ASTRA-sim's analytical network.yml: parallel lists, one entry per dimension. Its topology
// names are Ring (bidirectional), FullyConnected and Switch; bandwidth in GB/s (1 GB/s = 1 B/ns),
// latency in ns per link.
constexpr std::string_view kAstraTopologies[] = {"Ring", "FullyConnected", "Switch"};
constexpr TopologyKind kAstraTopologyKinds[] = {TopologyKind::kRing, TopologyKind::kFullyConnected,
                                                TopologyKind::kSwitch};

absl::StatusOr<const nlohmann::json*> AstraList(JsonObject& top, std::string_view key,
                                                size_t expected) {
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* list, top.Array(key));
  if (list->size() != expected) {
    return top.FieldError(key, absl::StrCat(list->size(), " entries but `topology` has ", expected,
                                            "; give one per dimension"));
  }
  return list;
}

absl::StatusOr<double> AstraNumber(const JsonObject& top, std::string_view key, size_t i,
                                   const nlohmann::json& value) {
  if (!value.is_number()) {
    return JsonFieldError(
        top.origin(), absl::StrCat("/", std::string(key), "/", i),
        absl::StrCat("expected a number, got ", std::string(JsonTypeName(value))));
  }
  return value.get<double>();
}

absl::StatusOr<NetworkSpec> ReadAstraFormat(JsonObject top) {
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* topologies, top.Array("topology"));
  const size_t n = topologies->size();
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* npus, AstraList(top, "npus_count", n));
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* bandwidth, AstraList(top, "bandwidth", n));
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json* latency, AstraList(top, "latency", n));
  PROJECTOR_RETURN_IF_ERROR(top.CheckNoUnknownKeys());
  const std::vector<std::string> astra_names(std::begin(kAstraTopologies),
                                             std::end(kAstraTopologies));
  NetworkSpec spec;
  for (size_t i = 0; i < n; ++i) {
    const nlohmann::json& name = (*topologies)[i];
    const std::string pointer = absl::StrCat("/topology/", i);
    if (!name.is_string()) {
      return JsonFieldError(
          top.origin(), pointer,
          absl::StrCat("expected a string, got ", std::string(JsonTypeName(name))));
    }
    const std::string given = name.get<std::string>();
    size_t kind = 0;
    while (kind < astra_names.size() && astra_names[kind] != given) ++kind;
    if (kind == astra_names.size()) {
      return JsonFieldError(
          top.origin(), pointer,
          absl::StrCat("unknown topology '", given, "'", DidYouMean(given, astra_names),
                       "; accepted: Ring, FullyConnected, Switch"));
    }
    NetworkDimension dim;
    dim.topology = kAstraTopologyKinds[kind];
    if (!(*npus)[i].is_number_integer()) {
      return JsonFieldError(top.origin(), absl::StrCat("/npus_count/", i),
                            "expected an integer NPU count");
    }
    dim.npus = (*npus)[i].get<int64_t>();
    PROJECTOR_ASSIGN_OR_RETURN(const double gbps,
                               AstraNumber(top, "bandwidth", i, (*bandwidth)[i]));
    dim.link_bandwidth = GigabytesPerSecond(gbps);
    PROJECTOR_ASSIGN_OR_RETURN(const double ns, AstraNumber(top, "latency", i, (*latency)[i]));
    dim.link_latency = Seconds(ns * 1e-9);
    spec.dimensions.push_back(dim);
  }
  return spec;
}

}  // namespace

absl::StatusOr<NetworkSpec> NetworkFromJson(const nlohmann::json& doc, std::string_view origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject top, JsonObject::Make(doc, std::string(origin), ""));
  NetworkSpec spec;
  if (top.Has("dimensions")) {
    PROJECTOR_ASSIGN_OR_RETURN(spec, ReadToolFormat(std::move(top)));
  } else if (top.Has("topology")) {
    PROJECTOR_ASSIGN_OR_RETURN(spec, ReadAstraFormat(std::move(top)));
  } else {
    return JsonFieldError(origin, "/dimensions",
                          "required field is missing; a network file lists `dimensions` "
                          "(docs/network.md), or is ASTRA-sim's network.yml with `topology`, "
                          "`npus_count`, `bandwidth` and `latency` lists");
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateNetworkSpec(spec, origin));
  return spec;
}

absl::StatusOr<NetworkSpec> LoadNetworkFile(const std::string& path) {
  nlohmann::json doc;
  if (IsYamlPath(path)) {
    PROJECTOR_ASSIGN_OR_RETURN(doc, ReadYamlFile(path));
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(doc, ReadJsonFile(path));
  }
  PROJECTOR_ASSIGN_OR_RETURN(NetworkSpec spec, NetworkFromJson(doc, path));
  spec.source_file = path;
  if (spec.name.empty()) spec.name = std::filesystem::path(path).stem().string();
  return spec;
}

nlohmann::json NetworkSpecJson(const NetworkSpec& spec) {
  nlohmann::json dims = nlohmann::json::array();
  for (const NetworkDimension& dim : spec.dimensions) {
    nlohmann::json d = {{"topology", TopologyName(dim.topology)}};
    if (!dim.label.empty()) d["label"] = dim.label;
    d["npus"] = dim.npus;
    switch (dim.topology) {
      case TopologyKind::kMesh2d:
      case TopologyKind::kTorus2d:
        d["x"] = dim.x;
        d["y"] = dim.y;
        break;
      case TopologyKind::kRing:
        d["bidirectional"] = dim.bidirectional;
        break;
      case TopologyKind::kFatTree:
        d["radix"] = dim.radix;
        d["oversubscription"] = dim.oversubscription;
        break;
      case TopologyKind::kFullyConnected:
      case TopologyKind::kSwitch:
        break;
    }
    d["bandwidth_gbps"] = dim.link_bandwidth.value() / 1e9;
    d["latency_ns"] = dim.link_latency.value() * 1e9;
    d["links"] = dim.links;
    d["efficiency"] = dim.efficiency;
    if (dim.link_type != LinkType::kAuto) d["link_type"] = LinkTypeName(dim.link_type);
    if (!dim.rail_optimized) d["rail_optimized"] = false;
    if (dim.in_network_reduction.value() > 0) {
      d["in_network_reduction_gbps"] = dim.in_network_reduction.value() / 1e9;
    }
    dims.push_back(std::move(d));
  }
  return {{"name", spec.name}, {"dimensions", std::move(dims)}};
}

}  // namespace projector
