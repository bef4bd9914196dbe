// The Chakra export (issue 25 point 7): what the files hold, decoded with the same schema, against
// the projection's op tables and schedule.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/backend_registry.h"
#include "chakra/et_def.pb.h"
#include "core/status_macros.h"
#include "gmock/gmock.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "scenario/scenario_flags.h"
#include "studies/chakra_trace.h"
#include "studies/chakra_writer.h"
#include "tests/testing/given_flags.h"
#include "tests/testing/status_matchers.h"

namespace projector {
namespace {

using ::projector::testing::GivenFlags;
using ::projector::testing::IsOk;
using ::projector::testing::StatusIs;
using ::testing::HasSubstr;

struct Projected {
  Scenario scenario;
  Projection projection;
};

// Llama-3.1-8B on 8 GPUs as TP 2 · PP 2 · DP 2, 4 micro-batches per step.
absl::StatusOr<Projected> Project8(std::vector<std::pair<const char*, const char*>> extra = {}) {
  std::vector<std::pair<const char*, const char*>> flags = {{"model", "llama3.1-8b"},
                                                            {"gpu-arch", "h100-sxm"},
                                                            {"seq-len", "2048"},
                                                            {"num-gpus", "8"},
                                                            {"tp", "2"},
                                                            {"pp", "2"},
                                                            {"global-batch", "8"},
                                                            {"distributed-optimizer", "true"}};
  flags.insert(flags.end(), extra.begin(), extra.end());
  Projected out;
  PROJECTOR_ASSIGN_OR_RETURN(out.scenario, ScenarioFromFlags(GivenFlags(flags)));
  PROJECTOR_ASSIGN_OR_RETURN(BackendSet set,
                             MakeBackendSet(out.scenario.backends, out.scenario.hw));
  PROJECTOR_ASSIGN_OR_RETURN(out.projection,
                             Project(out.scenario, RefsOf(set),
                                     ProjectionOptions{.keep_ops = true, .keep_timeline = true}));
  return out;
}

struct Decoded {
  ChakraProtoMsg::GlobalMetadata metadata;
  std::vector<ChakraProtoMsg::Node> nodes;
};

Decoded Decode(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  google::protobuf::io::IstreamInputStream stream(&in);
  Decoded d;
  bool clean_eof = false;
  EXPECT_TRUE(
      google::protobuf::util::ParseDelimitedFromZeroCopyStream(&d.metadata, &stream, &clean_eof));
  while (true) {
    ChakraProtoMsg::Node n;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&n, &stream, &clean_eof)) break;
    d.nodes.push_back(std::move(n));
  }
  EXPECT_TRUE(clean_eof) << path << " ends inside a record";
  return d;
}

const ChakraProtoMsg::AttributeProto* FindAttr(const ChakraProtoMsg::Node& n,
                                               const std::string& name) {
  for (const auto& a : n.attr()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::string Prefix(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "projector_chakra";
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

// What the op tables say one rank of stage `stage` computes per step, by hand from the schedule:
// every forward pass runs each layer's forward compute ops (and the embedding's on stage 0, the
// output layer's on the last stage); every backward pass their dgrad and wgrad ops (no recompute
// here). Llama-3.1-8B has 32 layers: 16 per stage.
int64_t ExpectedComputeNodes(const Projection& p, int64_t stage, int64_t pp) {
  auto count = [&](const std::string& group, bool forward) {
    int64_t n = 0;
    for (const OpTable& t : p.op_tables) {
      if (t.group != group) continue;
      for (const Op& op : t.ops) {
        if (op.kind == OpKind::kCollective) continue;
        n += forward ? op.phase == OpPhase::kForward
                     : (op.phase == OpPhase::kBackwardDgrad || op.phase == OpPhase::kBackwardWgrad);
      }
    }
    return n;
  };
  const int64_t m = p.micro_batches;
  int64_t per_micro_batch = 16 * (count("dense layer", true) + count("dense layer", false));
  if (stage == 0) per_micro_batch += count("embedding", true) + count("embedding", false);
  if (stage == pp - 1) per_micro_batch += count("output", true) + count("output", false);
  return m * per_micro_batch + 1;  // + the optimizer step
}

TEST(ChakraTest, FilesHoldEveryOpOfTheScheduleWithMatchingSendsAndGroups) {
  absl::StatusOr<Projected> r = Project8();
  ASSERT_THAT(r, IsOk());
  const Scenario& s = r->scenario;
  const Projection& p = r->projection;
  ASSERT_EQ(p.micro_batches, 4);  // 8 / (1 · DP 2)
  const std::string prefix = Prefix("l8");
  absl::StatusOr<ChakraExportSummary> summary = WriteChakraTraces(s, p, prefix);
  ASSERT_THAT(summary, IsOk());
  EXPECT_EQ(summary->ranks, 8);

  std::map<int64_t, Decoded> decoded;
  int64_t total = 0;
  for (int64_t rank = 0; rank < 8; ++rank) {
    decoded[rank] = Decode(prefix + "." + std::to_string(rank) + ".et");
    EXPECT_EQ(decoded[rank].metadata.version(), kChakraSchemaVersion);
    total += static_cast<int64_t>(decoded[rank].nodes.size());
  }
  EXPECT_EQ(total, summary->nodes);

  // Ranks 0-3 are stage 0 (TP 2 · DP 2), 4-7 stage 1 (the PP stride is tp·cp·dp = 4).
  std::map<int64_t, std::set<int64_t>> sent_tags, received_tags;  // by (sender)
  for (const auto& [rank, d] : decoded) {
    const int64_t stage = rank / 4;
    std::map<int, int64_t> by_type;
    for (size_t i = 0; i < d.nodes.size(); ++i) {
      const ChakraProtoMsg::Node& n = d.nodes[i];
      ASSERT_EQ(n.id(), i) << "ids are the program order";
      for (uint64_t dep : n.data_deps()) EXPECT_LT(dep, n.id()) << "a dependency runs earlier";
      // One chain: each node after the node before it, but for the gradient buckets after the
      // first (also after the bucket before) and the optimizer (also after the last bucket).
      const bool joins_buckets = (n.name().starts_with("dp gradient bucket") &&
                                  !n.name().starts_with("dp gradient bucket 0")) ||
                                 n.name() == "optimizer step";
      if (i > 0) {
        EXPECT_EQ(n.data_deps_size(), joins_buckets ? 2 : 1) << n.name();
      }
      ++by_type[n.type()];
      if (n.type() == ChakraProtoMsg::COMP_NODE) {
        ASSERT_NE(FindAttr(n, "num_ops"), nullptr);
        ASSERT_NE(FindAttr(n, "tensor_size"), nullptr);
      }
      if (n.type() == ChakraProtoMsg::COMM_SEND_NODE ||
          n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
        const int64_t src = FindAttr(n, "comm_src")->int32_val();
        const int64_t dst = FindAttr(n, "comm_dst")->int32_val();
        const int64_t tag = FindAttr(n, "comm_tag")->int32_val();
        // Pipeline neighbours only (TP 2 has no ring steps): the same TP·DP position.
        EXPECT_EQ(std::abs(src - dst), 4);
        EXPECT_EQ(FindAttr(n, "comm_size")->int64_val(),
                  static_cast<int64_t>(2048 * 4096 * 2));  // [seq, hidden] bf16 (no SP)
        (n.type() == ChakraProtoMsg::COMM_SEND_NODE ? sent_tags : received_tags)[src].insert(
            tag * 16 + dst);
      }
      if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
        EXPECT_GT(FindAttr(n, "comm_size")->int64_val(), 0);
        ASSERT_NE(FindAttr(n, "pg_name"), nullptr);
      }
    }
    EXPECT_EQ(by_type[ChakraProtoMsg::COMP_NODE], ExpectedComputeNodes(p, stage, 2))
        << "rank " << rank;
    // Stage 0 sends 4 activations and receives 4 gradients; stage 1 the other way round.
    EXPECT_EQ(by_type[ChakraProtoMsg::COMM_SEND_NODE], 4) << "rank " << rank;
    EXPECT_EQ(by_type[ChakraProtoMsg::COMM_RECV_NODE], 4) << "rank " << rank;
  }
  EXPECT_EQ(sent_tags, received_tags) << "every send has its receive";

  // The groups: every collective names a group its rank belongs to; the DP group of rank 1
  // (TP index 1) is {1, 3}, its TP group {0, 1}.
  std::ifstream g(summary->groups_file);
  const nlohmann::json groups = nlohmann::json::parse(g);
  for (const auto& [rank, d] : decoded) {
    for (const ChakraProtoMsg::Node& n : d.nodes) {
      if (n.type() != ChakraProtoMsg::COMM_COLL_NODE) continue;
      const std::string pg = FindAttr(n, "pg_name")->string_val();
      ASSERT_TRUE(groups.contains(pg)) << pg;
      const std::vector<int64_t> members = groups[pg];
      EXPECT_NE(std::find(members.begin(), members.end(), rank), members.end());
    }
  }
  std::set<std::vector<int64_t>> all;
  for (const auto& [name, members] : groups.items())
    all.insert(members.get<std::vector<int64_t>>());
  EXPECT_TRUE(all.contains(std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(all.contains(std::vector<int64_t>{0, 1}));
  // The DP gradient buckets of stage 0 (the medium projection's, overlapped with the chunk's
  // last backward): one reduce-scatter node each with its bytes, chained one after another; the
  // optimizer after the last; the parameter all-gather at the end.
  const auto& last = decoded[0].nodes;
  std::multiset<int64_t> bucket_bytes, node_bytes;
  for (const TimelineEvent& e : p.timeline) {
    if (e.kind == TimelineKind::kGradReduce && e.rank == 0) {
      bucket_bytes.insert(static_cast<int64_t>(e.reduce_bytes.value()));
    }
  }
  ASSERT_FALSE(bucket_bytes.empty());
  std::optional<uint64_t> previous;
  for (const ChakraProtoMsg::Node& n : last) {
    if (!n.name().starts_with("dp gradient bucket")) continue;
    EXPECT_EQ(FindAttr(n, "comm_type")->int64_val(), ChakraProtoMsg::REDUCE_SCATTER);
    node_bytes.insert(FindAttr(n, "comm_size")->int64_val());
    if (previous) {
      EXPECT_TRUE(std::find(n.data_deps().begin(), n.data_deps().end(), *previous) !=
                  n.data_deps().end());
    }
    previous = n.id();
  }
  EXPECT_EQ(node_bytes, bucket_bytes);
  ASSERT_GE(last.size(), 2u);
  const ChakraProtoMsg::Node& optimizer = last[last.size() - 2];
  EXPECT_EQ(optimizer.name(), "optimizer step");
  EXPECT_TRUE(std::find(optimizer.data_deps().begin(), optimizer.data_deps().end(), *previous) !=
              optimizer.data_deps().end());
  EXPECT_EQ(last.back().name(), "dp parameter all-gather");
}

TEST(ChakraTest, TpCollectivesCarryTheOpTablesBytes) {
  absl::StatusOr<Projected> r = Project8();
  ASSERT_THAT(r, IsOk());
  ChakraGroups groups;
  absl::StatusOr<std::vector<ChakraNode>> program =
      ChakraRankProgram(r->scenario, r->projection, 0, groups);
  ASSERT_THAT(program, IsOk());
  std::multiset<int64_t> table_bytes, node_bytes;
  for (const OpTable& t : r->projection.op_tables) {
    if (t.group != "dense layer") continue;
    for (const Op& op : t.ops) {
      if (op.kind == OpKind::kCollective) {
        table_bytes.insert(static_cast<int64_t>(op.bytes.value()));
      }
    }
  }
  ASSERT_EQ(table_bytes.size(), 4u);
  // Micro-batch 0's forward and backward passes of layer 0 issue exactly the table's
  // collectives (TP 2 without SP: an all-reduce after attention and after the MLP, each way).
  for (const ChakraNode& n : *program) {
    if (n.type == ChakraNodeType::kCollective && n.name.starts_with("mb0 c0 layer 0 ")) {
      node_bytes.insert(n.comm_size);
    }
  }
  EXPECT_EQ(node_bytes, table_bytes);
}

// FSDP (Llama-3.1-8B, 8 GPUs, FSDP over all 8): every unit (the embedding, 32 layers, the output)
// is gathered before each pass runs it and, in a backward, reduce-scattered after: per
// micro-batch 2 x 34 gathers and 34 reduce-scatters of the units' bytes (bf16 weights, the
// gradients in the reduce dtype) over the DP group; each unit's first op waits for its gather;
// the optimizer for the last reduce-scatter; no whole-stage DP reduce.
TEST(ChakraTest, FsdpUnitsAreGatheredAndReduceScatteredAroundEachPass) {
  absl::StatusOr<Projected> fsdp =
      Project8({{"tp", "1"}, {"pp", "1"}, {"fsdp", "true"}, {"distributed-optimizer", "false"}});
  ASSERT_THAT(fsdp, IsOk());
  ASSERT_THAT(CheckChakraExport(fsdp->scenario, fsdp->projection), IsOk());
  ChakraGroups groups;
  absl::StatusOr<std::vector<ChakraNode>> program =
      ChakraRankProgram(fsdp->scenario, fsdp->projection, 3, groups);
  ASSERT_THAT(program, IsOk());
  ASSERT_EQ(fsdp->projection.chunk_fsdp.size(), 1u);
  const std::vector<FsdpUnitTraffic>& units = fsdp->projection.chunk_fsdp[0];
  ASSERT_EQ(units.size(), 34u);
  const int64_t m = fsdp->projection.micro_batches;
  std::multiset<int64_t> gathers, reduces, expected_gathers, expected_reduces;
  for (const FsdpUnitTraffic& u : units) {
    for (int64_t k = 0; k < m; ++k) {
      expected_gathers.insert(static_cast<int64_t>(u.dense_gather.value()));
      expected_gathers.insert(static_cast<int64_t>(u.dense_gather.value()));
      expected_reduces.insert(static_cast<int64_t>(u.dense_reduce.value()));
    }
  }
  for (const ChakraNode& n : *program) {
    if (n.type != ChakraNodeType::kCollective) continue;
    EXPECT_FALSE(n.name.starts_with("dp gradient")) << n.name;
    if (n.name.find("fsdp gather") != std::string::npos) {
      EXPECT_EQ(n.comm_type, ChakraCollective::kAllGather);
      gathers.insert(n.comm_size);
    } else if (n.name.find("fsdp reduce-scatter") != std::string::npos) {
      EXPECT_EQ(n.comm_type, ChakraCollective::kReduceScatter);
      reduces.insert(n.comm_size);
    }
  }
  EXPECT_EQ(gathers, expected_gathers);
  EXPECT_EQ(reduces, expected_reduces);
  // The first micro-batch's first compute op (the embedding's) waits for unit 0's gather.
  uint64_t gather0 = ~uint64_t{0};
  for (const ChakraNode& n : *program) {
    if (n.name == "mb0 c0 fsdp gather unit 0") gather0 = n.id;
    if (n.type == ChakraNodeType::kCompute && n.name.starts_with("mb0 c0 embedding")) {
      EXPECT_NE(std::find(n.data_deps.begin(), n.data_deps.end(), gather0), n.data_deps.end());
      break;
    }
  }
  uint64_t last_reduce = 0;
  for (const ChakraNode& n : *program) {
    if (n.name.find("fsdp reduce-scatter") != std::string::npos) last_reduce = n.id;
  }
  const ChakraNode& optimizer = program->back();
  EXPECT_EQ(optimizer.name, "optimizer step");
  EXPECT_NE(std::find(optimizer.data_deps.begin(), optimizer.data_deps.end(), last_reduce),
            optimizer.data_deps.end());
}

TEST(ChakraTest, RefusesUnwritablePathsAndProjectionsWithoutOps) {
  absl::StatusOr<Projected> r = Project8();
  ASSERT_THAT(r, IsOk());
  EXPECT_THAT(WriteChakraTraces(r->scenario, r->projection, "/nonexistent-dir/x"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--chakra-out: cannot write '/nonexistent-dir/x.0.et'")));
  Projection bare = r->projection;
  bare.op_tables.clear();
  EXPECT_THAT(CheckChakraExport(r->scenario, bare),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without its op tables")));
}

}  // namespace
}  // namespace projector
