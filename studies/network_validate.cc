#include "studies/network_validate.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "core/statistics.h"
#include "core/status_macros.h"
#include "hw_profiles/hardware_profile.h"
#include "network/collectives.h"
#include "network/hardware_network.h"
#include "network/topology.h"

namespace projector {
namespace {

const std::vector<std::string>& CollectiveNames() {
  static const std::vector<std::string> names = {"all_reduce", "all_gather", "reduce_scatter",
                                                 "all_to_all", "broadcast"};
  return names;
}

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                                     CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                                     CollectiveKind::kBroadcast};

absl::StatusOr<NetworkCaseResult> ProjectCase(const nlohmann::json& doc,
                                              const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject o, JsonObject::Make(doc, origin, ""));
  NetworkCaseResult r;
  PROJECTOR_ASSIGN_OR_RETURN(r.id, o.String("id"));
  PROJECTOR_ASSIGN_OR_RETURN(r.gpu, o.String("gpu"));
  PROJECTOR_ASSIGN_OR_RETURN(r.ranks_per_node, o.PositiveInt("gpus_per_node"));
  PROJECTOR_ASSIGN_OR_RETURN(r.nodes, o.PositiveInt("num_nodes"));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string collective, o.Enum("collective", CollectiveNames()));
  const auto kind_index = static_cast<size_t>(
      std::find(CollectiveNames().begin(), CollectiveNames().end(), collective) -
      CollectiveNames().begin());
  r.kind = kKinds[kind_index];
  PROJECTOR_ASSIGN_OR_RETURN(r.requested_algorithm, o.StringOr("algorithm", "auto"));
  PROJECTOR_ASSIGN_OR_RETURN(r.bytes, o.PositiveNumber("message_bytes"));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject measured, o.Object("measured"));
  PROJECTOR_ASSIGN_OR_RETURN(r.measured_busbw_gbps, measured.PositiveNumber("busbw_gbps"));
  measured.Accept("algbw_gbps");
  measured.Accept("time_us");
  PROJECTOR_RETURN_IF_ERROR(measured.CheckNoUnknownKeys());
  for (const char* key : {"source", "system", "intra_node", "inter_node", "notes"}) o.Accept(key);
  PROJECTOR_RETURN_IF_ERROR(o.CheckNoUnknownKeys());

  absl::StatusOr<CollectiveAlgorithm> algorithm = ParseCollectiveAlgorithm(r.requested_algorithm);
  if (!algorithm.ok()) return o.FieldError("algorithm", std::string(algorithm.status().message()));
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(r.gpu);
  if (!hw.ok()) return o.FieldError("gpu", std::string(hw.status().message()));
  if (r.ranks_per_node > hw->gpus_per_node) {
    return o.FieldError("gpus_per_node", absl::StrCat(r.ranks_per_node, " ranks per node; a ",
                                                      hw->name, " node has ", hw->gpus_per_node));
  }
  absl::StatusOr<NetworkSpec> spec = NetworkFromHardware(*hw, hw->gpus_per_node * r.nodes);
  if (!spec.ok()) return o.FieldError("num_nodes", std::string(spec.status().message()));
  const Topology topology(*std::move(spec));
  std::vector<int64_t> ranks;
  for (int64_t node = 0; node < r.nodes; ++node) {
    for (int64_t i = 0; i < r.ranks_per_node; ++i) ranks.push_back(node * hw->gpus_per_node + i);
  }
  NetworkCollectives collectives(topology);
  absl::StatusOr<NetworkCollectiveEstimate> e =
      collectives.Estimate({.kind = r.kind,
                            .bytes = Bytes(r.bytes),
                            .ranks = std::move(ranks),
                            .algorithm = *algorithm,
                            .library = CollectiveLibrary::kNccl});
  if (!e.ok()) return o.FieldError("algorithm", std::string(e.status().message()));
  r.projected_busbw_gbps = e->bus_bandwidth.value() / 1e9;
  r.algorithm = absl::StrCat(std::string(CollectiveAlgorithmName(e->algorithm)), "/", e->protocol);
  r.error_pct = (r.projected_busbw_gbps - r.measured_busbw_gbps) / r.measured_busbw_gbps * 100;
  return r;
}

}  // namespace

absl::StatusOr<NetworkValidation> ValidateNetworkCases(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  NetworkValidation v;
  v.cases_file = path;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string origin = absl::StrCat(path, ":", number);
    PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json doc, ParseJsonText(line, origin));
    PROJECTOR_ASSIGN_OR_RETURN(NetworkCaseResult r, ProjectCase(doc, origin));
    v.cases.push_back(std::move(r));
  }
  if (v.cases.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": no case; one JSON object per line"));
  }
  std::vector<double> errors;
  for (const NetworkCaseResult& r : v.cases) {
    errors.push_back(std::fabs(r.error_pct));
    if (std::fabs(r.error_pct) <= 10) ++v.within_10_pct;
  }
  v.median_abs_error_pct = Median(std::move(errors));
  return v;
}

}  // namespace projector
