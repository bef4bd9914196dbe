#include "report/lod_report.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/report.h"

namespace projector {
namespace {

constexpr char kReplayed[] =
    "every pass of every micro-batch and chunk on each pipeline rank's stream in the schedule's "
    "order, as its layers' modules and each TP, CP and EP collective where the layer issues it "
    "(the stream waiting for what the medium projection left exposed; on a shared NIC or a "
    "network file's links as flows, the part it hides beside the compute before it, a "
    "collective that runs whole as its algorithm's steps), FSDP's units gathered ahead and "
    "reduce-scattered after as events, the activation transfers between stages, each DP "
    "gradient bucket's reduce on the rank's DP stream from where its gradients are final (on "
    "the rank's NIC, shared with the activations it sends, where both cross nodes; with "
    "--network, its algorithm's steps as flows on the network's links, max-min fair), each "
    "rank's gradient-sync wait, parameter gathers and optimizer";
constexpr char kNotYet[] =
    "a module's kernels as events of their own (the kernels between two collectives are one "
    "task: nothing comes between them on the stream)";

nlohmann::json ResourceUseJson(const HighLodResult& r) {
  nlohmann::json uses = nlohmann::json::array();
  const double step_s = r.step_time.value();
  for (const ResourceUse& u : r.resource_use) {
    uses.push_back({{"name", u.name},
                    {"busy_s", u.busy.value()},
                    {"busy_share", step_s > 0 ? u.busy.value() / step_s : 0.0},
                    {"utilisation", step_s > 0 ? u.carried.value() / step_s : 0.0},
                    {"track", u.track}});
  }
  return uses;
}

std::string PassName(const ReplayedTask& t, bool interleaved) {
  const char* kind = t.pass == TimelineKind::kForward    ? "F"
                     : t.pass == TimelineKind::kBackward ? "B"
                                                         : "W";
  return interleaved ? absl::StrCat(kind, t.micro_batch, ".c", t.chunk)
                     : absl::StrCat(kind, t.micro_batch);
}

// How a group's collectives are named in the trace: the label of a whole pass's collectives (a
// trace without pieces) and the category.
struct CollectiveTrack {
  const char* label;
  const char* category;
};
CollectiveTrack CollectiveTrackOf(ReplayedTask::What what) {
  switch (what) {
    case ReplayedTask::What::kTpComm:
      return {"TP collectives", "tp"};
    case ReplayedTask::What::kCpComm:
      return {"CP ring", "cp"};
    case ReplayedTask::What::kFsdpComm:
      return {"FSDP collectives", "fsdp"};
    default:
      return {"EP all-to-all", "ep"};
  }
}

// " L12 attention" for a piece of a pass (its layer, its module or collective), " output" for an
// end module's; empty for a whole pass.
std::string PieceName(const ReplayedTask& t) {
  if (t.op.empty()) return "";
  const std::string op(t.op);
  return t.layer >= 0 ? absl::StrCat(" L", t.layer, " ", op) : absl::StrCat(" ", op);
}

}  // namespace

std::vector<GroupExposureRow> GroupExposureRows(const HighLodResult& r) {
  const StepBreakdown& b = r.medium.breakdown;
  std::vector<GroupExposureRow> rows;
  for (const GroupExposureRow& g :
       {GroupExposureRow{"TP", b.exposed_tp_comm, r.exposed_comm.tp},
        GroupExposureRow{"CP", b.exposed_cp_comm, r.exposed_comm.cp},
        GroupExposureRow{"EP", b.exposed_ep_comm, r.exposed_comm.ep},
        GroupExposureRow{"FSDP", b.exposed_fsdp_comm, r.exposed_comm.fsdp}}) {
    if (g.medium.value() > 0 || g.high.value() > 0) rows.push_back(g);
  }
  return rows;
}

std::string HighLodText(const HighLodResult& r) {
  std::string out = "\nLevel of detail: high (the step replayed as events; docs/event_engine.md)\n";
  absl::StrAppendFormat(&out, "  step time   medium %12.3f ms   high %12.3f ms   %+.4f%%\n",
                        ToMilliseconds(r.medium.step_time), ToMilliseconds(r.step_time),
                        r.DifferencePct());
  absl::StrAppendFormat(&out, "  pipeline    medium %12.3f ms   high %12.3f ms\n",
                        ToMilliseconds(r.medium.pipeline_time), ToMilliseconds(r.pipeline_time));
  absl::StrAppendFormat(
      &out, "  exposed DP  medium %12.3f ms   high %12.3f ms   (high: from the timeline)\n",
      ToMilliseconds(r.medium.breakdown.exposed_dp_comm), ToMilliseconds(r.exposed_dp_comm));
  for (const GroupExposureRow& g : GroupExposureRows(r)) {
    absl::StrAppendFormat(&out, "  exposed %-3s medium %12.3f ms   high %12.3f ms\n", g.group,
                          ToMilliseconds(g.medium), ToMilliseconds(g.high));
  }
  if (r.network.empty()) {
    absl::StrAppendFormat(&out, "  NIC         %s: %s\n", r.nic_shared ? "shared" : "not shared",
                          r.nic_note);
  } else {
    absl::StrAppendFormat(
        &out,
        "  network     '%s': the DP reduces and the layers' TP, CP and EP\n"
        "              collectives (their algorithm's steps, a hidden part beside\n"
        "              its compute), FSDP's collectives and the activations as\n"
        "              flows on %d of its links\n",
        r.network, r.network_links);
  }
  absl::StrAppendFormat(&out, "  events      %d (%d tasks on %d streams and links)\n", r.events,
                        r.tasks, r.resources);
  if (r.unfolded) {
    absl::StrAppendFormat(&out,
                          "  unfolded    every one of %d GPUs simulated (--no-fold; a TP group "
                          "leaves each pass together, a DP ring starts each bucket together)\n",
                          r.pipeline_ranks);
  } else {
    absl::StrAppendFormat(&out,
                          "  folded      %d GPUs as %d pipeline ranks of %d (their TP, CP and DP "
                          "replicas do identical work)\n",
                          r.pipeline_ranks * r.gpus_per_rank, r.pipeline_ranks, r.gpus_per_rank);
  }
  // Each rank's stream, and the busiest links, by their share of the step.
  const double step_s = r.step_time.value();
  auto pct = [&](const ResourceUse& u) {
    return step_s > 0 ? u.busy.value() / step_s * 100.0 : 0.0;
  };
  std::string streams;
  std::vector<const ResourceUse*> stream_uses, by_busy;
  for (const ResourceUse& u : r.resource_use) {
    if (IsComputeStream(u)) {
      stream_uses.push_back(&u);
    } else if (IsCommunication(u)) {
      by_busy.push_back(&u);
    }
  }
  // Every stream while they fit a line or two; unfolded, the busiest and the least busy.
  constexpr size_t kStreamsListed = 12;
  auto short_name = [](const ResourceUse& u) { return u.name.substr(0, u.name.size() - 7); };
  if (stream_uses.size() <= kStreamsListed) {
    for (const ResourceUse* u : stream_uses) {
      absl::StrAppendFormat(&streams, "%s%s %.1f%%", streams.empty() ? "" : ", ", short_name(*u),
                            pct(*u));
    }
  } else {
    const auto [least, most] = std::minmax_element(
        stream_uses.begin(), stream_uses.end(),
        [](const ResourceUse* a, const ResourceUse* b) { return a->busy < b->busy; });
    streams = absl::StrFormat("%d, the busiest %s %.1f%%, the least %s %.1f%%", stream_uses.size(),
                              short_name(**most), pct(**most), short_name(**least), pct(**least));
  }
  // Links by utilisation: the capacity they gave over the step.
  std::stable_sort(by_busy.begin(), by_busy.end(), [](const ResourceUse* a, const ResourceUse* b) {
    return a->carried > b->carried;
  });
  out += absl::StrCat("  busy        streams: ", streams, "\n");
  std::string busiest;
  for (size_t i = 0; i < by_busy.size() && i < 3; ++i) {
    const std::string& name = by_busy[i]->name;
    absl::StrAppendFormat(&busiest, "%s%s %.1f%%", busiest.empty() ? "" : ", ",
                          name.starts_with("link ") ? name.substr(5) : name,
                          step_s > 0 ? by_busy[i]->carried.value() / step_s * 100.0 : 0.0);
  }
  if (!busiest.empty()) out += absl::StrCat("              busiest links: ", busiest, "\n");
  if (r.slow_rank) {
    absl::StrAppendFormat(&out, "  straggler   rank %d (pipeline stage %d) x%g\n",
                          r.slow_rank->rank, r.slow_stage, r.slow_rank->factor);
  }
  if (r.slow_link) {
    absl::StrAppendFormat(&out, "  slow link   %s %d-%d x%g: %s\n",
                          r.network.empty() ? "ranks" : "nodes", r.slow_link->a, r.slow_link->b,
                          r.slow_link->factor, r.slow_link_carries);
  }
  if (r.slow_rank || r.slow_link) {
    absl::StrAppendFormat(&out, "  disturbed   step %.3f ms, %+.2f%% over %.3f ms without\n",
                          ToMilliseconds(r.step_time), r.DisturbedSlowdownPct(),
                          ToMilliseconds(r.step_time_undisturbed));
  }
  absl::StrAppendFormat(&out, "  wall time   medium %9.3f ms   high %9.3f ms   high/medium %.2fx\n",
                        r.medium_wall_s * 1e3, r.high_wall_s * 1e3, r.Speedup());
  out +=
      "  replayed    each rank's passes (every micro-batch and chunk, in the schedule's order)\n"
      "              as their layers' modules and TP, CP and EP collectives one by one, FSDP's\n"
      "              unit gathers and reduce-scatters, the transfers between stages, each DP\n"
      "              gradient bucket's reduce on the rank's DP stream (or NIC; with --network,\n"
      "              as flows on its links) from where its gradients are final, each rank's\n"
      "              tail\n"
      "  not yet     a module's kernels one by one (one task between two collectives)\n";
  return out;
}

namespace {

// Counter tracks of link use: per link, the transfers on it (0 or 1: a link carries one at a
// time), and over all links how many are busy; one sample at every start and end, ends first at
// equal times.
void AppendLinkCounters(const HighLodResult& r, nlohmann::json& events) {
  struct Edge {
    Seconds at;
    int delta;
    int32_t link;
  };
  std::vector<Edge> edges;
  for (const ReplayedTask& t : r.timeline) {
    // Every transfer on a link or NIC: activations, and on a shared NIC the DP reduces and the
    // All-to-All beside them (a NIC carries several at once, each at its share).
    const bool on_link = static_cast<size_t>(t.resource) < r.resource_use.size() &&
                         r.resource_use[static_cast<size_t>(t.resource)].name.starts_with("link ");
    if (!on_link || t.end <= t.start) continue;
    if (t.what != ReplayedTask::What::kTransfer && t.what != ReplayedTask::What::kGradReduce &&
        t.what != ReplayedTask::What::kEpComm && t.what != ReplayedTask::What::kTpComm &&
        t.what != ReplayedTask::What::kCpComm && t.what != ReplayedTask::What::kFsdpComm) {
      continue;
    }
    edges.push_back({t.start, +1, t.resource});
    edges.push_back({t.end, -1, t.resource});
  }
  std::stable_sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    return a.at < b.at || (a.at == b.at && a.delta < b.delta);
  });
  std::map<int32_t, int> on_link;
  int busy_links = 0;
  for (const Edge& e : edges) {
    int& n = on_link[e.link];
    const bool was_busy = n > 0;
    n += e.delta;
    busy_links += (n > 0) - (was_busy ? 1 : 0);
    events.push_back(
        {{"ph", "C"},
         {"pid", 0},
         {"name", absl::StrCat("link use: ", r.resource_use[static_cast<size_t>(e.link)].name)},
         {"ts", ToMicroseconds(e.at)},
         {"args", {{"transfers", n}}}});
    events.push_back({{"ph", "C"},
                      {"pid", 0},
                      {"name", "links busy"},
                      {"ts", ToMicroseconds(e.at)},
                      {"args", {{"links", busy_links}}}});
  }
}

}  // namespace

nlohmann::json HighLodTraceJson(const Scenario& scenario, const HighLodResult& r) {
  const bool interleaved = scenario.parallel.vpp > 1;
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"},
                    {"ph", "M"},
                    {"pid", 0},
                    {"args",
                     {{"name", absl::StrFormat("%s: %s, schedule %s, %d micro-batches (event "
                                               "replay, --lod high)",
                                               scenario.name, r.medium.layout, r.medium.schedule,
                                               r.medium.micro_batches)}}}});
  // One thread per resource of the replay: the ranks' streams, then the links.
  for (size_t id = 0; id < r.resource_use.size(); ++id) {
    AppendTraceThread(events, static_cast<int64_t>(id), r.resource_use[id].name);
  }
  for (const ReplayedTask& t : r.timeline) {
    nlohmann::json ev = {{"ph", "X"},
                         {"pid", 0},
                         {"tid", t.resource},
                         {"ts", ToMicroseconds(t.start)},
                         {"dur", ToMicroseconds(t.end - t.start)}};
    switch (t.what) {
      case ReplayedTask::What::kPass:
        ev["name"] = absl::StrCat(PassName(t, interleaved), PieceName(t));
        ev["cat"] = "pass";
        break;
      case ReplayedTask::What::kReceive:
        ev["name"] = absl::StrCat("recv ", PassName(t, interleaved));
        ev["cat"] = "p2p";
        break;
      case ReplayedTask::What::kTransfer:
        ev["name"] = absl::StrCat(PassName(t, interleaved), " r", t.rank, "→r", t.to_rank);
        ev["cat"] = "p2p";
        break;
      case ReplayedTask::What::kSync:
        ev["name"] = "sync";
        ev["cat"] = "sync";
        break;
      case ReplayedTask::What::kTpComm:
      case ReplayedTask::What::kCpComm:
      case ReplayedTask::What::kFsdpComm:
      case ReplayedTask::What::kEpComm: {
        const CollectiveTrack track = CollectiveTrackOf(t.what);
        ev["name"] = t.op.empty() ? absl::StrCat(track.label, " ", PassName(t, interleaved))
                                  : absl::StrCat(PassName(t, interleaved), PieceName(t));
        ev["cat"] = track.category;
        break;
      }
      case ReplayedTask::What::kGradReduce:
        ev["name"] = t.chunk >= 0 ? absl::StrCat("DP reduce c", t.chunk) : "DP reduce";
        ev["cat"] = "dp";
        break;
      case ReplayedTask::What::kTail:
        ev["name"] = "DP sync + optimizer";
        ev["cat"] = "tail";
        break;
    }
    events.push_back(std::move(ev));
  }
  AppendLinkCounters(r, events);
  return {{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}};
}

nlohmann::json HighLodJson(const HighLodResult& r) {
  return {{"step_time_s", r.step_time.value()},
          {"medium_step_time_s", r.medium.step_time.value()},
          {"difference_pct", r.DifferencePct()},
          {"pipeline_time_s", r.pipeline_time.value()},
          {"exposed_dp_comm_s", r.exposed_dp_comm.value()},
          {"exposed_tp_comm_s", r.exposed_comm.tp.value()},
          {"medium_exposed_tp_comm_s", r.medium.breakdown.exposed_tp_comm.value()},
          {"exposed_cp_comm_s", r.exposed_comm.cp.value()},
          {"medium_exposed_cp_comm_s", r.medium.breakdown.exposed_cp_comm.value()},
          {"exposed_ep_comm_s", r.exposed_comm.ep.value()},
          {"medium_exposed_ep_comm_s", r.medium.breakdown.exposed_ep_comm.value()},
          {"exposed_fsdp_comm_s", r.exposed_comm.fsdp.value()},
          {"medium_exposed_fsdp_comm_s", r.medium.breakdown.exposed_fsdp_comm.value()},
          {"congestion", std::string(CongestionName(r.congestion))},
          {"nic_shared", r.nic_shared},
          {"nic_note", r.nic_note},
          {"network", r.network.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.network)},
          {"network_links", r.network_links},
          {"medium_exposed_dp_comm_s", r.medium.breakdown.exposed_dp_comm.value()},
          {"medium_pipeline_time_s", r.medium.pipeline_time.value()},
          {"tasks", r.tasks},
          {"resources", r.resources},
          {"pipeline_ranks", r.pipeline_ranks},
          {"gpus_per_rank", r.gpus_per_rank},
          {"events", r.events},
          {"medium_wall_s", r.medium_wall_s},
          {"high_wall_s", r.high_wall_s},
          {"wall_ratio", r.Speedup()},
          {"resources_busy", ResourceUseJson(r)},
          {"replayed", kReplayed},
          {"not_yet", kNotYet},
          {"straggler",
           r.slow_rank ? nlohmann::json{{"rank", r.slow_rank->rank},
                                        {"factor", r.slow_rank->factor},
                                        {"pipeline_stage", r.slow_stage},
                                        {"step_time_without_s", r.step_time_undisturbed.value()},
                                        {"slowdown_pct", r.DisturbedSlowdownPct()}}
                       : nlohmann::json(nullptr)},
          {"slow_link",
           r.slow_link ? nlohmann::json{{"a", r.slow_link->a},
                                        {"b", r.slow_link->b},
                                        {"factor", r.slow_link->factor},
                                        {"carries", r.slow_link_carries},
                                        {"step_time_without_s", r.step_time_undisturbed.value()},
                                        {"slowdown_pct", r.DisturbedSlowdownPct()}}
                       : nlohmann::json(nullptr)}};
}

}  // namespace projector
