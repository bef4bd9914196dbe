#include "studies/astra_semantics.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "core/status_macros.h"
#include "events/event_engine.h"
#include "network/topology.h"

namespace projector {

absl::StatusOr<AstraSystem> LoadAstraSystem(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(const nlohmann::json doc, ReadJsonFile(path));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject o, JsonObject::Make(doc, path, ""));
  AstraSystem s;
  s.source = path;
  // A key the file leaves out takes ASTRA-sim's own default (Sys.cc: one chunk, one in flight,
  // communication_delay 10 cycles; local-mem-bw 0, no memory model, read here as no reduction
  // cost).
  PROJECTOR_ASSIGN_OR_RETURN(s.dataset_splits, o.IntOr("preferred-dataset-splits", 1));
  PROJECTOR_ASSIGN_OR_RETURN(s.active_chunks, o.IntOr("active-chunks-per-dimension", 1));
  PROJECTOR_ASSIGN_OR_RETURN(const double endpoint, o.NumberOr("endpoint-delay", 10));
  PROJECTOR_ASSIGN_OR_RETURN(s.local_mem_bw_gbps, o.NumberOr("local-mem-bw", 0));
  for (const auto& [key, value] :
       {std::pair<const char*, double>{"preferred-dataset-splits",
                                       static_cast<double>(s.dataset_splits)},
        {"active-chunks-per-dimension", static_cast<double>(s.active_chunks)}}) {
    if (value < 1) return o.FieldError(key, "must be an integer >= 1");
  }
  if (endpoint < 0) return o.FieldError("endpoint-delay", "must be >= 0 ns");
  if (s.local_mem_bw_gbps < 0) return o.FieldError("local-mem-bw", "must be >= 0 GB/s");
  s.endpoint_delay = Seconds(endpoint * 1e-9);
  // The rest of ASTRA-sim's system keys: read by ASTRA-sim, not by this replay (the algorithm
  // comes from --algorithm; the others change nothing the microbenchmarks use).
  for (const char* key : {"scheduling-policy",
                          "all-reduce-implementation",
                          "all-gather-implementation",
                          "reduce-scatter-implementation",
                          "all-to-all-implementation",
                          "collective-optimization",
                          "boost-mode",
                          "roofline-enabled",
                          "peak-perf",
                          "intra-dimension-scheduling",
                          "inter-dimension-scheduling",
                          "local-reduction-delay",
                          "trace-enabled",
                          "replay-only",
                          "track-local-mem",
                          "local-mem-trace-filename",
                          "L",
                          "o",
                          "g",
                          "G",
                          "model-shared-bus",
                          "injection-policy",
                          "packet-routing",
                          "num-alus"}) {
    o.Accept(key);
  }
  PROJECTOR_RETURN_IF_ERROR(o.CheckNoUnknownKeys());
  return s;
}

namespace {

using events::kNoTask;
using events::ResourceId;
using events::ResourceOrder;
using events::TaskGraph;
using events::TaskId;

// The event graph of one collective under ASTRA-sim's semantics.
class AstraReplay {
 public:
  AstraReplay(const Topology& topology, Congestion congestion, const AstraSystem& system)
      : topology_(topology),
        congestion_(congestion),
        system_(system),
        link_resource_(topology.links().size(), ~ResourceId{0}) {
    delay_ = graph_.AddResource(ResourceOrder::kUnbounded);
  }

  TaskGraph& graph() { return graph_; }
  int64_t messages() const { return messages_; }

  // A delay after `after` (kNoTask: from the start).
  TaskId Delay(Seconds d, TaskId after) {
    const TaskId t = graph_.AddTask(delay_, d);
    if (after != kNoTask) graph_.AddDependency(after, t);
    return t;
  }

  // Waits for all of `tasks`, then `d`.
  TaskId DelayAfterAll(Seconds d, const std::vector<TaskId>& tasks) {
    const TaskId t = graph_.AddTask(delay_, d);
    for (TaskId before : tasks) {
      if (before != kNoTask) graph_.AddDependency(before, t);
    }
    return t;
  }

  // The memory bus before a message, and the reduction of `reduced` bytes (one write, two
  // reads at local-mem-bw; 0 when it reduces nothing or the system has no memory model).
  TaskId BeforeSend(double reduced, TaskId after) {
    Seconds d = system_.endpoint_delay;
    if (reduced > 0 && system_.local_mem_bw_gbps > 0) {
      d += Seconds(3.0 * reduced / system_.local_mem_bw_gbps * 1e-9);
    }
    return Delay(d, after);
  }

  // A message of `bytes` from `src` to `dst` sent after `after`; its arrival.
  TaskId Message(int64_t src, int64_t dst, double bytes, TaskId after) {
    ++messages_;
    topology_.Route(src, dst, route_);
    if (congestion_ == Congestion::kUnaware) {
      Seconds latency;
      double narrowest = 0;
      for (const int32_t l : route_) {
        latency += topology_.links()[static_cast<size_t>(l)].latency;
        const double rate = Rate(l);
        narrowest = narrowest == 0 ? rate : std::min(narrowest, rate);
      }
      return Delay(latency + Seconds(bytes / narrowest), after);
    }
    // Store and forward: each link in turn, one message at a time, then its latency.
    TaskId previous = after;
    for (const int32_t l : route_) {
      const TaskId hop = graph_.AddTask(LinkResource(l), Seconds(bytes / Rate(l)));
      if (previous != kNoTask) graph_.AddDependency(previous, hop);
      previous = Delay(topology_.links()[static_cast<size_t>(l)].latency, hop);
    }
    return previous;
  }

 private:
  // B/s: ASTRA-sim's reading of the link's GB/s.
  double Rate(int32_t link) const {
    const double gbps = topology_.links()[static_cast<size_t>(link)].bandwidth.value() / 1e9;
    return gbps * (system_.binary_gigabytes ? 1073741824.0 : 1e9);
  }
  ResourceId LinkResource(int32_t link) {
    ResourceId& id = link_resource_[static_cast<size_t>(link)];
    if (id == ~ResourceId{0}) id = graph_.AddResource(ResourceOrder::kFirstReady);
    return id;
  }

  const Topology& topology_;
  const Congestion congestion_;
  const AstraSystem& system_;
  TaskGraph graph_;
  ResourceId delay_ = 0;
  std::vector<ResourceId> link_resource_;
  std::vector<int32_t> route_;
  int64_t messages_ = 0;
};

int64_t Mod(int64_t a, int64_t n) { return ((a % n) + n) % n; }

// One chunk of `d` bytes on every NPU, each NPU starting after begin[i]; returns each NPU's end.
using Chunk = std::vector<TaskId>;

// Ring: `sends` messages of `msg` to the next NPU, each after the one received (the first
// `in_flight` at once); message k (from 1) carries reduced data when reduced(k).
template <typename Reduced>
Chunk RingChunk(AstraReplay& r, int64_t n, const Chunk& begin, int64_t sends, double msg,
                int64_t in_flight, Reduced reduced) {
  std::vector<std::vector<TaskId>> arrival(static_cast<size_t>(n));  // at NPU i, in order
  std::vector<std::vector<TaskId>> ready(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 1; k <= std::min(in_flight, sends); ++k) {
      ready[static_cast<size_t>(i)].push_back(
          r.BeforeSend(reduced(k) ? msg : 0, begin[static_cast<size_t>(i)]));
    }
  }
  for (int64_t k = 1; k <= sends; ++k) {
    for (int64_t i = 0; i < n; ++i) {
      const TaskId at = r.Message(i, Mod(i + 1, n), msg,
                                  ready[static_cast<size_t>(i)][static_cast<size_t>(k - 1)]);
      arrival[static_cast<size_t>(Mod(i + 1, n))].push_back(at);
    }
    // Each arrival lets its NPU send message k + in_flight.
    if (k + in_flight <= sends) {
      for (int64_t i = 0; i < n; ++i) {
        ready[static_cast<size_t>(i)].push_back(
            r.BeforeSend(reduced(k + in_flight) ? msg : 0,
                         arrival[static_cast<size_t>(i)][static_cast<size_t>(k - 1)]));
      }
    }
  }
  Chunk end(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    end[static_cast<size_t>(i)] = r.DelayAfterAll(Seconds(0), arrival[static_cast<size_t>(i)]);
  }
  return end;
}

// Direct: `msg` to every peer at once after `ready`; each NPU's arrivals.
std::vector<std::vector<TaskId>> AllPeers(AstraReplay& r, int64_t n, const Chunk& ready,
                                          double msg) {
  std::vector<std::vector<TaskId>> arrivals(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 1; k < n; ++k) {
      const int64_t peer = Mod(i + k, n);
      arrivals[static_cast<size_t>(peer)].push_back(
          r.Message(i, peer, msg, ready[static_cast<size_t>(i)]));
    }
  }
  return arrivals;
}

Chunk DirectChunk(AstraReplay& r, int64_t n, const Chunk& begin, double d, bool all_reduce) {
  Chunk ready(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ready[static_cast<size_t>(i)] = r.BeforeSend(0, begin[static_cast<size_t>(i)]);
  std::vector<std::vector<TaskId>> arrivals = AllPeers(r, n, ready, d / static_cast<double>(n));
  if (all_reduce) {
    // Reduce what arrived (the reductions run side by side), then the all-gather.
    for (int64_t i = 0; i < n; ++i) {
      const TaskId got = r.DelayAfterAll(Seconds(0), arrivals[static_cast<size_t>(i)]);
      ready[static_cast<size_t>(i)] = r.BeforeSend(d / static_cast<double>(n), got);
    }
    arrivals = AllPeers(r, n, ready, d / static_cast<double>(n));
  }
  Chunk end(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    end[static_cast<size_t>(i)] = r.DelayAfterAll(Seconds(0), arrivals[static_cast<size_t>(i)]);
  }
  return end;
}

// Halving-doubling all-reduce: log2(n) exchanges of d/2, d/4, ... with the partner 1, 2, ...
// away, then back; the 2nd to log2(n)-th carry reduced data of their own size.
Chunk HalvingDoublingChunk(AstraReplay& r, int64_t n, const Chunk& begin, double d) {
  const int64_t steps = std::countr_zero(static_cast<uint64_t>(n));
  std::vector<int64_t> offset;
  std::vector<double> size;
  for (int64_t k = 0; k < steps; ++k) {
    offset.push_back(int64_t{1} << k);
    size.push_back(d / static_cast<double>(int64_t{2} << k));
  }
  for (int64_t k = steps - 1; k >= 0; --k) {
    offset.push_back(int64_t{1} << k);
    size.push_back(d / static_cast<double>(int64_t{2} << k));
  }
  Chunk ready(static_cast<size_t>(n)), arrived(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ready[static_cast<size_t>(i)] = r.BeforeSend(0, begin[static_cast<size_t>(i)]);
  for (size_t k = 0; k < offset.size(); ++k) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t partner = i ^ offset[k];
      arrived[static_cast<size_t>(partner)] =
          r.Message(i, partner, size[k], ready[static_cast<size_t>(i)]);
    }
    if (k + 1 == offset.size()) break;
    const bool reduces = k + 1 >= 1 && k + 1 < static_cast<size_t>(steps);
    for (int64_t i = 0; i < n; ++i) {
      ready[static_cast<size_t>(i)] =
          r.BeforeSend(reduces ? size[k + 1] : 0, arrived[static_cast<size_t>(i)]);
    }
  }
  return arrived;
}

}  // namespace

absl::StatusOr<AstraCollectiveResult> SimulateAstraCollective(const NetworkSpec& network,
                                                              CollectiveKind kind,
                                                              CollectiveAlgorithm algorithm,
                                                              Bytes bytes, Congestion congestion,
                                                              const AstraSystem& system) {
  if (network.dimensions.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ASTRA-sim's semantics are replayed on one-dimensional networks; '",
                     network.name, "' has ", network.dimensions.size(), " dimensions"));
  }
  const TopologyKind topology = network.dimensions[0].topology;
  if (topology != TopologyKind::kRing && topology != TopologyKind::kFullyConnected &&
      topology != TopologyKind::kSwitch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ASTRA-sim's semantics are replayed on ring, fully_connected and switch networks; got ",
        std::string(TopologyName(topology))));
  }
  const int64_t n = network.NpuCount();
  if (n < 2) return absl::InvalidArgumentError("a collective needs at least 2 NPUs");
  const bool all_reduce = kind == CollectiveKind::kAllReduce;
  const bool all_to_all = kind == CollectiveKind::kAllToAll;
  const bool ring = algorithm == CollectiveAlgorithm::kRing;
  const bool direct = algorithm == CollectiveAlgorithm::kDirect;
  const bool halving = algorithm == CollectiveAlgorithm::kHalvingDoubling;
  const bool supported =
      (all_reduce && (ring || direct || halving)) || (all_to_all && (ring || direct)) ||
      ((kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllGather) && ring);
  if (!supported) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ASTRA-sim's semantics are replayed for all-reduce (ring, direct, halving-doubling), "
        "all-to-all (ring, direct), reduce-scatter and all-gather (ring); got ",
        std::string(CollectiveKindName(kind)), " with ",
        std::string(CollectiveAlgorithmName(algorithm))));
  }
  if (halving && !std::has_single_bit(static_cast<uint64_t>(n))) {
    return absl::InvalidArgumentError(
        absl::StrCat("halving-doubling needs a power-of-2 NPU count; the network has ", n));
  }
  const Topology built(network);
  AstraReplay r(built, congestion, system);
  // The dataset in chunks, `active` at a time per NPU.
  const int64_t chunks = system.dataset_splits;
  const double d = bytes.value() / static_cast<double>(chunks);
  const double nd = static_cast<double>(n);
  std::vector<Chunk> ends;
  for (int64_t c = 0; c < chunks; ++c) {
    Chunk begin(static_cast<size_t>(n), kNoTask);
    if (c >= system.active_chunks) begin = ends[static_cast<size_t>(c - system.active_chunks)];
    Chunk end;
    if (all_reduce && ring) {
      end = RingChunk(r, n, begin, 2 * (n - 1), d / nd, 1,
                      [n](int64_t k) { return k >= 2 && k <= n; });
    } else if (kind == CollectiveKind::kReduceScatter) {
      end = RingChunk(r, n, begin, n - 1, d / nd, 1, [](int64_t k) { return k >= 2; });
    } else if (kind == CollectiveKind::kAllGather) {
      end = RingChunk(r, n, begin, n - 1, d / nd, 1, [](int64_t) { return false; });
    } else if (all_to_all && ring) {
      end = RingChunk(r, n, begin, n * (n - 1) / 2, d / nd, 1, [](int64_t) { return false; });
    } else if (direct) {
      end = DirectChunk(r, n, begin, d, all_reduce);
    } else {
      end = HalvingDoublingChunk(r, n, begin, d);
    }
    // The stream ends a memory-bus pass after its last arrival.
    for (TaskId& t : end) t = r.Delay(system.endpoint_delay, t);
    ends.push_back(std::move(end));
  }
  events::Simulator sim;
  events::SimulationResult run;
  PROJECTOR_RETURN_IF_ERROR(sim.Run(r.graph(), run));
  return AstraCollectiveResult{
      .time = run.makespan, .messages = r.messages(), .events = run.events};
}

}  // namespace projector
