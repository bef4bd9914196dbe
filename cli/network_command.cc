// `project network show|route`: what a network file builds (NPUs, switches, links, diameter,
// bisection per dimension) and the hop-by-hop path between two NPUs.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "network/network_summary.h"
#include "network/topology.h"
#include "report/network_report.h"
#include "scenario/network_flags.h"

namespace projector {
namespace {

constexpr char kUsage[] =
    "Builds a network description's links and reports on them.\n\n"
    "  project network show --network FILE [--format json]\n"
    "  project network route --network FILE --from A --to B [--routing shortest] [--format json]\n"
    "\n"
    "FILE is the tool's network JSON (or YAML) or ASTRA-sim's analytical network.yml; the "
    "fields are in docs/network.md and examples in networks/.\n";

constexpr FlagSpec kShowFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    kNetworkFlag,
};
constexpr FlagSpec kRouteFlags[] = {
    {"from", "Source NPU id (0 .. NPUs-1; dimension 0's coordinate varies fastest)", "A"},
    {"to", "Destination NPU id", "B"},
    {"routing",
     "dimension_order (each topology's own rule, innermost dimension first) or shortest "
     "(breadth-first search)",
     "RULE", FlagArity::kValue, "dimension_order"},
};

absl::StatusOr<Topology> TopologyFromFlags(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<NetworkSpec> spec, NetworkFromFlags(flags));
  if (!spec) return FlagError("network", "required: a network file (examples in networks/)");
  return Topology(*std::move(spec));
}

absl::Status RunRoute(const FlagValues& flags, const Topology& topology, bool as_json,
                      const Output& io) {
  const std::string npus_held =
      absl::StrCat(" (the network has NPUs 0 to ", topology.npu_count() - 1, ")");
  const IntRange npu{.min = 0, .max = topology.npu_count() - 1, .beyond = npus_held};
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t from, IntFlag(flags, "from", npu));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t to, IntFlag(flags, "to", npu));
  const std::string routing = StringFlag(flags, "routing");
  if (routing != "dimension_order" && routing != "shortest") {
    const std::vector<std::string> rules = {"dimension_order", "shortest"};
    return FlagError("routing", absl::StrCat("unknown rule '", routing, "'",
                                             DidYouMean(routing, rules),
                                             "; accepted: dimension_order, shortest"));
  }
  const RouteSummary route = DescribeRoute(topology, from, to, routing == "shortest");
  io.out << (as_json ? RouteJson(route).dump(2) + "\n" : RouteText(route));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunNetworkCommand(int argc, char** argv, const Output& io) {
  const std::string action = argc > 2 ? argv[2] : "";
  if (action == "--help" || action == "-h") {
    io.out << kUsage;
    return absl::OkStatus();
  }
  const std::vector<std::string> actions = {"show", "route"};
  if (action != "show" && action != "route") {
    return absl::InvalidArgumentError(
        action.empty()
            ? "network: which action? accepted: show, route (see project network --help)"
            : absl::StrCat("network: unknown action '", action, "'", DidYouMean(action, actions),
                           "; accepted: show, route"));
  }
  cxxopts::Options options(absl::StrCat("project network ", action), kUsage);
  AddFlags(options, "", kShowFlags);
  if (action == "route") AddFlags(options, "", kRouteFlags);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> flags,
      ParseFlags(options, argc, argv, 2, absl::StrCat("network ", action, ": "),
                 absl::StrCat(" (see project network ", action, " --help)"), io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  PROJECTOR_ASSIGN_OR_RETURN(const Topology topology, TopologyFromFlags(*flags));
  if (action == "route") return RunRoute(*flags, topology, as_json, io);
  const NetworkSummary summary = Summarize(topology);
  io.out << (as_json ? NetworkSummaryJson(summary).dump(2) + "\n" : NetworkSummaryText(summary));
  return absl::OkStatus();
}

}  // namespace projector
