// Chakra execution traces of one projected training step (`project --chakra-out PREFIX`, issue 25
// point 7): the same op lists the projection timed, as one program per GPU rank in the order the
// pipeline schedule runs them, so that ASTRA-sim (or any Chakra consumer) replays the workload
// this tool projected.
//
// Per rank, in program order (each node data-depends on the one before it, so one stream):
//   - every pass of the schedule (the projection's replay, rank by rank: forward, backward and,
//     under zero bubble, weight-gradient passes of each micro-batch and model chunk);
//   - inside a pass, the layers of the chunk (the embedding first and the output layer last on
//     the chunks holding them; the MTP modules on the output chunk), each as its op table lists
//     it: compute ops (GEMM, attention, memory-bound) as COMP nodes with num_ops (FLOPs),
//     tensor_size (HBM bytes) and the projected duration; the layer's TP/CP/EP collectives as
//     COMM_COLL nodes (comm_type, comm_size in bytes, pg_name of the process group) placed after
//     the last compute op of the same module and phase; ring send/receive collectives (CP) as a
//     COMM_SEND to the next and a COMM_RECV from the previous rank of the group;
//   - between pipeline stages, a COMM_RECV before a pass whose input comes from another stage
//     and a COMM_SEND after it (comm_src/comm_dst, comm_tag matching on both sides, the layer
//     input's bytes); the send hangs off the chain so that the next pass does not wait for it;
//   - after the last pass, the data-parallel gradient collective of the rank's parameters
//     (all-reduce, or reduce-scatter with the distributed optimizer), the optimizer step as a
//     COMP node, and (distributed optimizer) the all-gather of the updated bf16 weights.
// The communicator groups go to a JSON map {"<pg_name>": [ranks]}.
//
// Not exported: FSDP layouts (their per-layer gathers follow the FSDP unit schedule, not yet
// laid out here); the overlap of the gradient collectives with the backward (one collective per
// rank at the end, as without overlap_grad_reduce).
#ifndef PROJECTOR_STUDIES_CHAKRA_TRACE_H_
#define PROJECTOR_STUDIES_CHAKRA_TRACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

// Chakra's NodeType numbers for the kinds written.
enum class ChakraNodeType : int { kCompute = 4, kSend = 5, kRecv = 6, kCollective = 7 };
// Chakra's CollectiveCommType numbers.
enum class ChakraCollective : int {
  kAllReduce = 0,
  kAllGather = 2,
  kBroadcast = 5,
  kAllToAll = 6,
  kReduceScatter = 7
};

struct ChakraNode {
  uint64_t id = 0;
  std::string name;
  ChakraNodeType type = ChakraNodeType::kCompute;
  std::vector<uint64_t> data_deps;
  uint64_t duration_us = 0;
  // kCompute
  int64_t num_ops = 0;       // FLOPs
  uint64_t tensor_size = 0;  // HBM bytes
  // kCollective
  ChakraCollective comm_type = ChakraCollective::kAllReduce;
  std::string pg_name;
  // kCollective, kSend, kRecv
  int64_t comm_size = 0;  // bytes
  // kSend, kRecv
  int32_t comm_src = 0;
  int32_t comm_dst = 0;
  int32_t comm_tag = 0;
};

// The process groups the ranks' collectives name: pg_name → ranks. Shared by the ranks of one
// export so that every member of a group uses the same name.
class ChakraGroups {
 public:
  // The name of the group of `rank` with `size` members `stride` apart.
  std::string NameOf(int64_t rank, const ProcessGroup& group);
  const std::map<std::string, std::vector<int64_t>>& groups() const { return groups_; }

 private:
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::string> names_;  // (size, stride, first)
  std::map<std::string, std::vector<int64_t>> groups_;
};

// The most nodes an export writes over all ranks (a file per GPU; ~100 bytes a node).
inline constexpr int64_t kMaxChakraNodes = 20'000'000;

// kInvalidArgument (naming --chakra-out) when the projection cannot be exported: an FSDP layout,
// a projection without its op tables or replayed timeline, more than kMaxChakraNodes nodes over
// all ranks, or tags beyond 32 bits.
absl::Status CheckChakraExport(const Scenario& scenario, const Projection& projection);

// The program of global rank `rank` (0 ≤ rank < scenario.num_gpus). `projection` must come from
// Project with keep_ops and keep_timeline, and pass CheckChakraExport.
absl::StatusOr<std::vector<ChakraNode>> ChakraRankProgram(const Scenario& scenario,
                                                          const Projection& projection,
                                                          int64_t rank, ChakraGroups& groups);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_CHAKRA_TRACE_H_
