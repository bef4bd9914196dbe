#include "studies/network_replay.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector {
namespace {

constexpr events::ResourceId kNoResource = ~events::ResourceId{0};

}  // namespace

NetworkReplay::NetworkReplay(const NetworkSpec& spec, events::TaskGraph& graph,
                             std::vector<std::string>& names)
    : topology_(spec),
      collectives_(topology_),
      flows_(topology_),
      graph_(graph),
      names_(names),
      resource_of_link_(topology_.links().size(), kNoResource),
      link_slowdown_(topology_.links().size(), 1.0) {}

void NetworkReplay::SlowLinks(std::span<const int32_t> links, double factor) {
  for (const int32_t link : links) link_slowdown_[static_cast<size_t>(link)] = factor;
}

events::ResourceId NetworkReplay::LinkResource(int32_t link) {
  events::ResourceId& id = resource_of_link_[static_cast<size_t>(link)];
  if (id == kNoResource) {
    id = graph_.AddResource(events::ResourceOrder::kShared);
    const NetworkLink& l = topology_.links()[static_cast<size_t>(link)];
    names_.push_back(
        absl::StrCat("link ", topology_.NodeName(l.from), " → ", topology_.NodeName(l.to)));
    ++links_used_;
  }
  return id;
}

std::span<const Flow> NetworkReplay::Shifted(std::span<const Flow> flows,
                                             std::span<const int64_t> shifts) {
  laid_.clear();
  for (const int64_t c : shifts) {
    for (const Flow& f : flows) {
      laid_.push_back({.src = f.src + c, .dst = f.dst + c, .bytes = f.bytes});
    }
  }
  return laid_;
}

std::vector<FlowStep> NetworkReplay::Lay(const std::vector<NetworkCollectives::LiveStep>& steps,
                                         std::span<const int64_t> shifts, Seconds medium) {
  struct Laid {
    Seconds alone;                           // the step's repeats, one group alone
    std::vector<FlowModel::LinkLoad> loads;  // all groups, all repeats
  };
  std::vector<Laid> laid;
  Seconds total;
  for (const NetworkCollectives::LiveStep& step : steps) {
    const double repeat = static_cast<double>(step.repeat);
    Laid l;
    l.alone = flows_.Run(step.flows, Congestion::kAware).time * repeat;
    flows_.LoadsOf(Shifted(step.flows, shifts), l.loads);
    for (FlowModel::LinkLoad& load : l.loads) {
      load.busy *= repeat * link_slowdown_[static_cast<size_t>(load.link)];
    }
    total += l.alone;
    laid.push_back(std::move(l));
  }
  std::vector<FlowStep> out;
  for (const Laid& l : laid) {
    FlowStep step;
    step.duration =
        total.value() > 0 ? medium * (l.alone / total) : medium / static_cast<double>(laid.size());
    // The groups together may ask more of a link than it carries in that time: then the step
    // lasts as long as that link needs.
    for (const FlowModel::LinkLoad& load : l.loads)
      step.duration = std::max(step.duration, load.busy);
    for (const FlowModel::LinkLoad& load : l.loads) {
      if (load.busy.value() <= 0 || step.duration.value() <= 0) continue;
      step.shares.push_back(
          {.link = LinkResource(load.link), .share = std::min(1.0, load.busy / step.duration)});
    }
    out.push_back(std::move(step));
  }
  return out;
}

absl::StatusOr<NetworkCollectives::StepPlan> NetworkReplay::GroupSteps(
    CollectiveKind kind, Bytes bytes, ProcessGroup group, int64_t first, int64_t span,
    std::vector<int64_t>& shifts) {
  shifts.clear();
  for (int64_t i = 0; i < span; ++i) {
    if ((i / group.stride) % group.size == 0) shifts.push_back(i);
  }
  const int64_t last = first + shifts.back() + (group.size - 1) * group.stride;
  if (first < 0 || last >= topology_.npu_count()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a group of ", group.size, " ranks ", group.stride, " apart from NPU ",
                     first + shifts.back(), " reaches NPU ", last, "; the network '",
                     topology_.spec().name, "' has ", topology_.npu_count(), " NPUs"));
  }
  NetworkCollectiveRequest request{.kind = kind,
                                   .bytes = bytes,
                                   .ranks = {},
                                   .algorithm = CollectiveAlgorithm::kAuto,
                                   .congestion = Congestion::kAware,
                                   .library = CollectiveLibrary::kNccl};
  for (int64_t i = 0; i < group.size; ++i) request.ranks.push_back(first + i * group.stride);
  return collectives_.Steps(request);
}

absl::StatusOr<std::vector<FlowStep>> NetworkReplay::Collective(CollectiveKind kind, Bytes bytes,
                                                                ProcessGroup group, int64_t first,
                                                                int64_t span, Seconds medium) {
  if (group.size < 2 || span < 1 || medium.value() <= 0) return std::vector<FlowStep>{};
  const Key key{static_cast<int>(kind), bytes.value(), group.size, group.stride, first, span,
                medium.value()};
  if (auto it = memo_.find(key); it != memo_.end()) return it->second;
  std::vector<int64_t> shifts;
  PROJECTOR_ASSIGN_OR_RETURN(NetworkCollectives::StepPlan plan,
                             GroupSteps(kind, bytes, group, first, span, shifts));
  return memo_.emplace(key, Lay(plan.steps, shifts, medium)).first->second;
}

absl::StatusOr<const FlowStep*> NetworkReplay::Occupancy(CollectiveKind kind, ProcessGroup group,
                                                         int64_t first, int64_t span,
                                                         int64_t sender) {
  const Key key{static_cast<int>(kind),
                static_cast<double>(sender),
                group.size,
                group.stride,
                first,
                span,
                0.0};
  if (auto it = occupancy_memo_.find(key); it != occupancy_memo_.end()) return &it->second;
  if (group.size < 2 || span < 1) return &occupancy_memo_[key];
  // At a reference size of 64 MiB, a tool choice: large enough to be bandwidth-bound, so that
  // the algorithm is the one of large messages; the shares are ratios of link loads.
  std::vector<int64_t> shifts;
  PROJECTOR_ASSIGN_OR_RETURN(
      NetworkCollectives::StepPlan plan,
      GroupSteps(kind, Bytes(64.0 * 1024 * 1024), group, first, span, shifts));
  // Each link's load over all the steps (all senders, or the sender's own), by link id.
  auto loads = [&](const std::vector<NetworkCollectives::LiveStep>& steps,
                   absl::flat_hash_map<int32_t, double>& load, std::vector<int32_t>& order) {
    for (const NetworkCollectives::LiveStep& step : steps) {
      loads_.clear();
      flows_.LoadsOf(Shifted(step.flows, shifts), loads_);
      for (const FlowModel::LinkLoad& l : loads_) {
        auto [it, added] = load.try_emplace(l.link, 0.0);
        if (added) order.push_back(l.link);
        it->second += l.busy.value() * static_cast<double>(step.repeat);
      }
    }
  };
  absl::flat_hash_map<int32_t, double> load;
  std::vector<int32_t> order;
  loads(plan.steps, load, order);
  double busiest = 0;  // of the whole collective, at the links' own rates
  for (const auto& [link, seconds] : load) busiest = std::max(busiest, seconds);
  if (sender >= 0) {
    std::vector<NetworkCollectives::LiveStep> own = plan.steps;
    for (NetworkCollectives::LiveStep& step : own) {
      std::erase_if(step.flows, [&](const Flow& f) { return f.src != sender; });
    }
    load.clear();
    order.clear();
    loads(own, load, order);
  }
  // A slowed link may ask more than the busiest did: the flow then lasts that much longer.
  FlowStep out{.duration = Seconds(0), .shares = {}};
  for (const int32_t link : order) {
    out.stretch = std::max(out.stretch, load[link] * link_slowdown_[static_cast<size_t>(link)] /
                                            std::max(busiest, 1e-300));
  }
  for (const int32_t link : order) {
    const double share =
        load[link] * link_slowdown_[static_cast<size_t>(link)] / busiest / out.stretch;
    if (share > 0)
      out.shares.push_back({.link = LinkResource(link), .share = std::min(1.0, share)});
  }
  return &occupancy_memo_.emplace(key, std::move(out)).first->second;
}

const FlowStep& NetworkReplay::Transfers(int64_t from, int64_t to, int64_t copies, Bytes bytes,
                                         Seconds medium) {
  const TransferKey key{from, to, copies, bytes.value(), medium.value()};
  if (auto it = transfer_memo_.find(key); it != transfer_memo_.end()) return it->second;
  const std::vector<NetworkCollectives::LiveStep> one = {
      {.flows = {{.src = from, .dst = to, .bytes = bytes.value()}}, .repeat = 1}};
  std::vector<int64_t> shifts(static_cast<size_t>(copies));
  for (int64_t c = 0; c < copies; ++c) shifts[static_cast<size_t>(c)] = c;
  std::vector<FlowStep> steps = Lay(one, shifts, medium);
  return transfer_memo_.emplace(key, std::move(steps.front())).first->second;
}

}  // namespace projector
