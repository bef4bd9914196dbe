// Flow-level link sharing: concurrent transfers that cross the same link share its bandwidth
// max-min fairly (progressive filling: the most contended link's share is fixed first, and what
// its flows leave on other links goes to the rest), re-shared whenever a flow finishes. Each
// flow follows its dimension-order route; a link carries its bandwidth times its dimension's
// efficiency. A flow arrives when its last byte has crossed, plus its route's latency.
//
// Congestion-unaware (ASTRA-sim's analytical default): every flow gets its route's narrowest
// link to itself, as if alone.
//
// A FlowModel keeps scratch buffers between calls (no allocation once they have grown); it is
// not thread-safe: one per thread.
#ifndef PROJECTOR_NETWORK_FLOW_MODEL_H_
#define PROJECTOR_NETWORK_FLOW_MODEL_H_

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/units.h"
#include "network/topology.h"

namespace projector {

enum class Congestion { kAware, kUnaware };

// A transfer is done when less than this share of its bytes is left (rounding of rate x time).
inline constexpr double kFlowDoneFraction = 1e-9;
std::string_view CongestionName(Congestion c);
// kInvalidArgument "unknown congestion 'x'; accepted: aware, unaware".
absl::StatusOr<Congestion> ParseCongestion(std::string_view name);

struct Flow {
  int64_t src = 0;  // NPU ids
  int64_t dst = 0;
  double bytes = 0;
};

struct FlowPhaseResult {
  Seconds time;               // the last arrival: data time + that flow's route latency
  Seconds data_time;          // the last byte leaving the network's links, latency apart
  Seconds latency;            // the longest route latency among the flows
  int32_t busiest_link = -1;  // the link that carried most bytes per capacity; -1 if none
  // Bytes the busiest link carried over what it could carry during data_time (0..1].
  double busiest_utilisation = 0;
};

class FlowModel {
 public:
  explicit FlowModel(const Topology& topology);

  // All flows start at 0. Flows with src == dst or no bytes cost nothing but their latency.
  FlowPhaseResult Run(std::span<const Flow> flows, Congestion congestion);

  // The rates (B/s) `flows` get when all of them move at once, max-min fair (aware) or each
  // with its route's narrowest link (unaware), and each one's route latency. The spans stay
  // valid until the next call.
  struct Rates {
    std::span<const double> rate;
    std::span<const Seconds> latency;
  };
  Rates RatesOf(std::span<const Flow> flows, Congestion congestion);

  // What `flows` moving at once ask of each link they cross: the seconds their bytes take there
  // at its capacity (bandwidth x efficiency), appended to `out` in the order first crossed.
  struct LinkLoad {
    int32_t link = 0;
    Seconds busy;
  };
  void LoadsOf(std::span<const Flow> flows, std::vector<LinkLoad>& out);

  const Topology& topology() const { return topology_; }

 private:
  void RouteFlows(std::span<const Flow> flows);
  // Max-min fair rates of the active flows into rate_ (progressive filling).
  void ShareLinks();

  const Topology& topology_;
  std::vector<double> capacity_;  // per link: bandwidth x efficiency, B/s
  // Scratch, reused:
  std::vector<int32_t> route_;
  std::vector<int64_t> flow_offsets_;  // CSR of each flow's links in flow_links_
  std::vector<int32_t> flow_links_;
  std::vector<int64_t> link_offsets_;  // CSR of each used link's flows in link_flows_
  std::vector<int32_t> link_flows_;
  std::vector<int32_t> used_links_;
  std::vector<int32_t> link_slot_;  // link id -> index in used_links_, -1 when unused
  std::vector<double> left_;        // per used link: capacity not yet given out
  std::vector<int32_t> unfrozen_;   // per used link: flows on it whose rate is not fixed
  std::vector<double> carried_;     // per used link: bytes
  std::vector<double> remaining_;   // per flow
  std::vector<double> rate_;
  std::vector<Seconds> flow_latency_;
  std::vector<char> active_;
  std::vector<char> frozen_;
};

}  // namespace projector

#endif  // PROJECTOR_NETWORK_FLOW_MODEL_H_
