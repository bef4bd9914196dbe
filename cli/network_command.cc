// `project network show|route`: what a network file builds (NPUs, switches, links, diameter,
// bisection per dimension) and the hop-by-hop path between two NPUs.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "network/hardware_network.h"
#include "network/network_file.h"
#include "network/network_summary.h"
#include "network/topology.h"
#include "report/network_report.h"
#include "scenario/network_flags.h"
#include "scenario/scenario_flags.h"
#include "studies/network_validate.h"

namespace projector {
namespace {

constexpr char kUsage[] =
    "Builds a network description's links and reports on them.\n\n"
    "  project network show --network FILE [--format json]\n"
    "  project network route --network FILE --from A --to B [--routing shortest] [--format json]\n"
    "  project network export --gpu-arch G --num-gpus N\n"
    "  project network validate --cases calibration/network_public.jsonl\n"
    "\n"
    "FILE is the tool's network JSON (or YAML) or ASTRA-sim's analytical network.yml; the "
    "fields are in docs/network.md and examples in networks/. Instead of a file, --gpu-arch G "
    "--num-gpus N takes the GPU profile's built-in network (its scale-up fabric, then its NICs "
    "between nodes); `export` prints that as a network file to edit.\n";

constexpr FlagSpec kShowFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    kNetworkFlag,
    {"gpu-arch", "Instead of --network: this GPU profile's built-in network", "NAME|FILE"},
    {"gpus-per-node", "GPUs per node of the profile's network", "N"},
    {"num-gpus", "GPUs of the profile's network (default: one node)", "N"},
};
constexpr FlagSpec kValidateFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    {"cases", "Measured collectives, one JSON object per line", "FILE"},
};
constexpr FlagSpec kRouteFlags[] = {
    {"from", "Source NPU id (0 .. NPUs-1; dimension 0's coordinate varies fastest)", "A"},
    {"to", "Destination NPU id", "B"},
    {"routing",
     "dimension_order (each topology's own rule, innermost dimension first) or shortest "
     "(breadth-first search)",
     "RULE", FlagArity::kValue, "dimension_order"},
};

// --network FILE, or the built-in network of --gpu-arch over --num-gpus.
absl::StatusOr<NetworkSpec> SpecFromFlags(const FlagValues& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<NetworkSpec> spec, NetworkFromFlags(flags));
  if (spec) {
    for (const char* name : {"gpu-arch", "gpus-per-node", "num-gpus"}) {
      if (Given(flags, name))
        return FlagError(name, "give --network FILE or a GPU profile, not both");
    }
    return *std::move(spec);
  }
  if (!Given(flags, "gpu-arch")) {
    return FlagError("network",
                     "required: a network file (examples in networks/), or --gpu-arch G "
                     "--num-gpus N for a GPU profile's built-in network");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const HardwareProfile hw, HardwareFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(
      const int64_t num_gpus,
      IntFlag(flags, "num-gpus", {.max = int64_t{1} << 24}, hw.gpus_per_node));
  absl::StatusOr<NetworkSpec> built = NetworkFromHardware(hw, num_gpus);
  if (!built.ok()) return FlagError("num-gpus", built.status().message());
  return built;
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
    return FlagError("routing",
                     absl::StrCat("unknown rule '", routing, "'", DidYouMean(routing, rules),
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
  const std::vector<std::string> actions = {"show", "route", "export", "validate"};
  if (std::find(actions.begin(), actions.end(), action) == actions.end()) {
    return absl::InvalidArgumentError(
        action.empty()
            ? "network: which action? accepted: show, route, export, validate (see project network "
              "--help)"
            : absl::StrCat("network: unknown action '", action, "'", DidYouMean(action, actions),
                           "; accepted: show, route, export, validate"));
  }
  cxxopts::Options options(absl::StrCat("project network ", action), kUsage);
  if (action == "validate") {
    AddFlags(options, "", kValidateFlags);
  } else {
    AddFlags(options, "", kShowFlags);
  }
  if (action == "route") AddFlags(options, "", kRouteFlags);
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<FlagValues> flags,
      ParseFlags(options, argc, argv, 2, absl::StrCat("network ", action, ": "),
                 absl::StrCat(" (see project network ", action, " --help)"), io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  if (action == "validate") {
    if (!Given(*flags, "cases")) {
      return FlagError("cases", "required (e.g. calibration/network_public.jsonl)");
    }
    PROJECTOR_ASSIGN_OR_RETURN(const NetworkValidation v,
                               ValidateNetworkCases(StringFlag(*flags, "cases")));
    io.out << (as_json ? NetworkValidationJson(v).dump(2) + "\n" : NetworkValidationText(v));
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(NetworkSpec spec, SpecFromFlags(*flags));
  if (action == "export") {
    io.out << NetworkSpecJson(spec).dump(2) << "\n";
    return absl::OkStatus();
  }
  const Topology topology(std::move(spec));
  if (action == "route") return RunRoute(*flags, topology, as_json, io);
  const NetworkSummary summary = Summarize(topology);
  io.out << (as_json ? NetworkSummaryJson(summary).dump(2) + "\n" : NetworkSummaryText(summary));
  return absl::OkStatus();
}

}  // namespace projector
