// What `project network show` and `route` report, as data: a built topology's size, diameter and
// bisection per dimension and in all, and one route hop by hop with its latency and narrowest
// link. report/network_report.h renders them.
#ifndef PROJECTOR_NETWORK_NETWORK_SUMMARY_H_
#define PROJECTOR_NETWORK_NETWORK_SUMMARY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "network/network_spec.h"
#include "network/topology.h"

namespace projector {

struct DimensionSummary {
  NetworkDimension dimension;
  int64_t instances = 1;
  int64_t links = 0;     // directed links of all instances
  int64_t switches = 0;  // of all instances
  int fat_tree_tiers = 0;
  int64_t diameter_hops = 0;
  BytesPerSecond bisection;  // all instances together, one direction
  // Bandwidth one NPU can inject into this dimension at once (all its connections, one way).
  BytesPerSecond injection;
};

struct NetworkSummary {
  std::string name;
  std::string source_file;
  int64_t npus = 0;
  int64_t switches = 0;
  int64_t links = 0;
  int64_t diameter_hops = 0;
  BytesPerSecond bisection;
  std::vector<DimensionSummary> dimensions;
};
NetworkSummary Summarize(const Topology& topology);

struct RouteHop {
  int64_t from = 0;  // node ids
  int64_t to = 0;
  std::string from_name;  // Topology::NodeName
  std::string to_name;
  int32_t dimension = 0;
  BytesPerSecond bandwidth;
  Seconds latency;
};

struct RouteSummary {
  std::string network;
  int64_t from = 0;
  int64_t to = 0;
  bool shortest = false;  // breadth-first search instead of the topology's routing
  std::vector<RouteHop> hops;
  Seconds latency;            // sum over hops
  BytesPerSecond bottleneck;  // narrowest link; 0 for an empty route
};
// Precondition: from and to are NPU ids of the topology.
RouteSummary DescribeRoute(const Topology& topology, int64_t from, int64_t to, bool shortest);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_NETWORK_SUMMARY_H_
