#include "network/flow_model.h"

#include <algorithm>
#include <limits>

#include "core/name_table.h"

namespace projector {
namespace {

constexpr std::string_view kCongestionNames[] = {"aware", "unaware"};

}  // namespace

std::string_view CongestionName(Congestion c) { return kCongestionNames[static_cast<size_t>(c)]; }

absl::StatusOr<Congestion> ParseCongestion(std::string_view name) {
  return ParseByName<Congestion>(name, kCongestionNames, "congestion");
}

FlowModel::FlowModel(const Topology& topology) : topology_(topology) {
  const std::span<const NetworkLink> links = topology.links();
  capacity_.reserve(links.size());
  for (const NetworkLink& link : links) {
    capacity_.push_back(link.bandwidth.value() *
                        topology.spec().dimensions[link.dimension].efficiency);
  }
  link_slot_.assign(links.size(), -1);
}

void FlowModel::RouteFlows(std::span<const Flow> flows) {
  const size_t n = flows.size();
  flow_offsets_.assign(n + 1, 0);
  flow_links_.clear();
  used_links_.clear();
  flow_latency_.assign(n, Seconds(0));
  for (size_t f = 0; f < n; ++f) {
    if (flows[f].src != flows[f].dst) {
      topology_.Route(flows[f].src, flows[f].dst, route_);
      for (const int32_t link : route_) {
        flow_links_.push_back(link);
        flow_latency_[f] += topology_.links()[link].latency;
        if (link_slot_[link] < 0) {
          link_slot_[link] = static_cast<int32_t>(used_links_.size());
          used_links_.push_back(link);
        }
      }
    }
    flow_offsets_[f + 1] = static_cast<int64_t>(flow_links_.size());
  }
  // Each used link's flows (CSR), for the sharing rounds.
  const size_t used = used_links_.size();
  link_offsets_.assign(used + 1, 0);
  for (const int32_t link : flow_links_) ++link_offsets_[link_slot_[link] + 1];
  for (size_t u = 0; u < used; ++u) link_offsets_[u + 1] += link_offsets_[u];
  link_flows_.resize(flow_links_.size());
  carried_.assign(used, 0.0);
  unfrozen_.assign(used, 0);  // each link's fill cursor here; ShareLinks counts afresh
  for (size_t f = 0; f < n; ++f) {
    for (int64_t i = flow_offsets_[f]; i < flow_offsets_[f + 1]; ++i) {
      const int32_t slot = link_slot_[flow_links_[i]];
      link_flows_[link_offsets_[slot] + unfrozen_[slot]++] = static_cast<int32_t>(f);
      carried_[slot] += flows[f].bytes;
    }
  }
}

void FlowModel::ShareLinks() {
  const size_t used = used_links_.size();
  left_.resize(used);
  for (size_t u = 0; u < used; ++u) {
    left_[u] = capacity_[used_links_[u]];
    unfrozen_[u] = 0;
    for (int64_t i = link_offsets_[u]; i < link_offsets_[u + 1]; ++i) {
      if (active_[link_flows_[i]]) ++unfrozen_[u];
    }
  }
  frozen_.assign(active_.size(), 0);
  while (true) {
    double share = std::numeric_limits<double>::infinity();
    for (size_t u = 0; u < used; ++u) {
      if (unfrozen_[u] > 0) share = std::min(share, left_[u] / unfrozen_[u]);
    }
    if (share == std::numeric_limits<double>::infinity()) return;
    // Every link at the bottleneck share fixes its flows at that rate; what they take is
    // subtracted from the other links on their routes, which keeps those at or above it.
    for (size_t u = 0; u < used; ++u) {
      if (unfrozen_[u] == 0 || left_[u] / unfrozen_[u] > share * (1 + 1e-12)) continue;
      for (int64_t i = link_offsets_[u]; i < link_offsets_[u + 1]; ++i) {
        const int32_t f = link_flows_[i];
        if (!active_[f] || frozen_[f]) continue;
        frozen_[f] = 1;
        rate_[f] = share;
        for (int64_t j = flow_offsets_[f]; j < flow_offsets_[f + 1]; ++j) {
          const int32_t slot = link_slot_[flow_links_[j]];
          left_[slot] -= share;
          --unfrozen_[slot];
        }
      }
    }
  }
}

FlowModel::Rates FlowModel::RatesOf(std::span<const Flow> flows, Congestion congestion) {
  RouteFlows(flows);
  const size_t n = flows.size();
  rate_.assign(n, 0.0);
  active_.assign(n, 0);
  for (size_t f = 0; f < n; ++f) {
    active_[f] = flow_offsets_[f + 1] > flow_offsets_[f] ? 1 : 0;
  }
  if (congestion == Congestion::kAware) {
    ShareLinks();
  } else {
    for (size_t f = 0; f < n; ++f) {
      double narrowest = 0;
      for (int64_t j = flow_offsets_[f]; j < flow_offsets_[f + 1]; ++j) {
        const double c = capacity_[flow_links_[j]];
        narrowest = j == flow_offsets_[f] ? c : std::min(narrowest, c);
      }
      rate_[f] = narrowest;
    }
  }
  for (const int32_t link : used_links_) link_slot_[link] = -1;
  return {.rate = rate_, .latency = flow_latency_};
}

void FlowModel::LoadsOf(std::span<const Flow> flows, std::vector<LinkLoad>& out) {
  RouteFlows(flows);
  for (size_t u = 0; u < used_links_.size(); ++u) {
    const int32_t link = used_links_[u];
    out.push_back({.link = link, .busy = Seconds(carried_[u] / capacity_[link])});
    link_slot_[link] = -1;
  }
}

FlowPhaseResult FlowModel::Run(std::span<const Flow> flows, Congestion congestion) {
  RouteFlows(flows);
  const size_t n = flows.size();
  remaining_.resize(n);
  rate_.assign(n, 0.0);
  active_.assign(n, 0);
  size_t active = 0;
  FlowPhaseResult result;
  for (size_t f = 0; f < n; ++f) {
    remaining_[f] = flows[f].bytes;
    result.latency = std::max(result.latency, flow_latency_[f]);
    if (flow_offsets_[f + 1] > flow_offsets_[f] && flows[f].bytes > 0) {
      active_[f] = 1;
      ++active;
    }
  }
  double now = 0;
  double last_arrival = result.latency.value();
  if (congestion == Congestion::kUnaware) {
    for (size_t f = 0; f < n; ++f) {
      if (!active_[f]) continue;
      double narrowest = std::numeric_limits<double>::infinity();
      for (int64_t j = flow_offsets_[f]; j < flow_offsets_[f + 1]; ++j) {
        narrowest = std::min(narrowest, capacity_[flow_links_[j]]);
      }
      const double done = flows[f].bytes / narrowest;
      now = std::max(now, done);
      last_arrival = std::max(last_arrival, done + flow_latency_[f].value());
    }
  }
  while (congestion == Congestion::kAware && active > 0) {
    ShareLinks();
    double step = std::numeric_limits<double>::infinity();
    for (size_t f = 0; f < n; ++f) {
      if (active_[f]) step = std::min(step, remaining_[f] / rate_[f]);
    }
    now += step;
    for (size_t f = 0; f < n; ++f) {
      if (!active_[f]) continue;
      remaining_[f] -= rate_[f] * step;
      if (remaining_[f] <= kFlowDoneFraction * flows[f].bytes) {
        active_[f] = 0;
        --active;
        last_arrival = std::max(last_arrival, now + flow_latency_[f].value());
      }
    }
  }
  result.time = Seconds(last_arrival);
  result.data_time = Seconds(now);
  for (size_t u = 0; u < used_links_.size(); ++u) {
    const double utilisation = now > 0 ? carried_[u] / (capacity_[used_links_[u]] * now) : 0;
    if (utilisation > result.busiest_utilisation) {
      result.busiest_utilisation = utilisation;
      result.busiest_link = used_links_[u];
    }
    link_slot_[used_links_[u]] = -1;
  }
  return result;
}

}  // namespace projector
