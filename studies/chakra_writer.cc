#include "studies/chakra_writer.h"

#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "chakra/et_def.pb.h"
#include "core/status_macros.h"
#include "google/protobuf/util/delimited_message_util.h"
#include "nlohmann/json.hpp"
#include "studies/chakra_trace.h"

namespace projector {
namespace {

using ChakraProtoMsg::AttributeProto;

void Attr(ChakraProtoMsg::Node& n, const char* name, auto set) {
  AttributeProto* a = n.add_attr();
  a->set_name(name);
  set(*a);
}

ChakraProtoMsg::Node ToProto(const ChakraNode& c) {
  ChakraProtoMsg::Node n;
  n.set_id(c.id);
  n.set_name(c.name);
  n.set_type(static_cast<ChakraProtoMsg::NodeType>(static_cast<int>(c.type)));
  for (uint64_t d : c.data_deps) n.add_data_deps(d);
  n.set_duration_micros(c.duration_us);
  Attr(n, "is_cpu_op", [](AttributeProto& a) { a.set_bool_val(false); });
  switch (c.type) {
    case ChakraNodeType::kCompute:
      Attr(n, "num_ops", [&](AttributeProto& a) { a.set_int64_val(c.num_ops); });
      Attr(n, "tensor_size", [&](AttributeProto& a) { a.set_uint64_val(c.tensor_size); });
      break;
    case ChakraNodeType::kCollective:
      Attr(n, "comm_type",
           [&](AttributeProto& a) { a.set_int64_val(static_cast<int>(c.comm_type)); });
      Attr(n, "comm_size", [&](AttributeProto& a) { a.set_int64_val(c.comm_size); });
      Attr(n, "pg_name", [&](AttributeProto& a) { a.set_string_val(c.pg_name); });
      break;
    case ChakraNodeType::kSend:
    case ChakraNodeType::kRecv:
      Attr(n, "comm_src", [&](AttributeProto& a) { a.set_int32_val(c.comm_src); });
      Attr(n, "comm_dst", [&](AttributeProto& a) { a.set_int32_val(c.comm_dst); });
      Attr(n, "comm_tag", [&](AttributeProto& a) { a.set_int32_val(c.comm_tag); });
      Attr(n, "comm_size", [&](AttributeProto& a) { a.set_int64_val(c.comm_size); });
      break;
  }
  return n;
}

absl::Status CannotWrite(const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat("--chakra-out: cannot write '", path, "' (does its directory exist?)"));
}

}  // namespace

absl::StatusOr<ChakraExportSummary> WriteChakraTraces(const Scenario& scenario,
                                                      const Projection& projection,
                                                      const std::string& prefix) {
  PROJECTOR_RETURN_IF_ERROR(CheckChakraExport(scenario, projection));
  ChakraExportSummary summary;
  ChakraGroups groups;
  ChakraProtoMsg::GlobalMetadata metadata;
  metadata.set_version(kChakraSchemaVersion);
  for (int64_t rank = 0; rank < scenario.num_gpus; ++rank) {
    PROJECTOR_ASSIGN_OR_RETURN(const std::vector<ChakraNode> program,
                               ChakraRankProgram(scenario, projection, rank, groups));
    const std::string path = absl::StrCat(prefix, ".", rank, ".et");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) return CannotWrite(path);
    bool ok = google::protobuf::util::SerializeDelimitedToOstream(metadata, &out);
    for (const ChakraNode& node : program) {
      ok = ok && google::protobuf::util::SerializeDelimitedToOstream(ToProto(node), &out);
    }
    out.close();
    if (!ok || !out) return CannotWrite(path);
    if (rank == 0) summary.first_file = path;
    summary.nodes += static_cast<int64_t>(program.size());
    ++summary.ranks;
  }
  nlohmann::json json = nlohmann::json::object();
  for (const auto& [name, ranks] : groups.groups()) json[name] = ranks;
  summary.groups = static_cast<int64_t>(groups.groups().size());
  summary.groups_file = absl::StrCat(prefix, ".comm_groups.json");
  std::ofstream g(summary.groups_file, std::ios::trunc);
  if (!g) return CannotWrite(summary.groups_file);
  g << json.dump(2) << "\n";
  g.close();
  if (!g) return CannotWrite(summary.groups_file);
  return summary;
}

}  // namespace projector
