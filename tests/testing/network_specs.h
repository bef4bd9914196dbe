// Network specs built in code for the network tests: one dimension of a topology with its link
// figures, as a network file's `dimensions: [{...}]` would give it.
#ifndef PROJECTOR_TESTS_TESTING_NETWORK_SPECS_H_
#define PROJECTOR_TESTS_TESTING_NETWORK_SPECS_H_

#include <cstdint>

#include "core/units.h"
#include "network/network_spec.h"

namespace projector::testing {

// `npus` NPUs on one `kind`, links of `gbps` GB/s (10^9 B/s) and `latency_ns` per hop.
inline NetworkSpec OneDimensionNetwork(TopologyKind kind, int64_t npus, double gbps,
                                       double latency_ns, bool bidirectional = true) {
  NetworkDimension dim;
  dim.topology = kind;
  dim.npus = npus;
  dim.bidirectional = bidirectional;
  dim.link_bandwidth = GigabytesPerSecond(gbps);
  dim.link_latency = Seconds(latency_ns * 1e-9);
  NetworkSpec spec;
  spec.name = "test";
  spec.dimensions = {dim};
  return spec;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_NETWORK_SPECS_H_
