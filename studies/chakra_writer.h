// Writes the Chakra execution traces of one projected step (studies/chakra_trace.h) as Chakra's
// files: PREFIX.<rank>.et per GPU rank, each the GlobalMetadata record then the rank's Nodes,
// every record preceded by its length as a varint (protobuf's delimited format, which Chakra's
// feeder reads), and PREFIX.comm_groups.json, {"<pg_name>": [ranks]}. Built when CMake finds
// Debian's protobuf (PROJECTOR_HAVE_CHAKRA).
#ifndef PROJECTOR_STUDIES_CHAKRA_WRITER_H_
#define PROJECTOR_STUDIES_CHAKRA_WRITER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

// The schema version written in GlobalMetadata: Chakra's execution-trace format 0.0.4, the
// version string mlcommons/chakra's converters write and its feeder reads (a label, not a figure).
inline constexpr char kChakraSchemaVersion[] = "0.0.4";

struct ChakraExportSummary {
  int64_t ranks = 0;
  int64_t nodes = 0;  // over all ranks
  int64_t groups = 0;
  std::string first_file;   // PREFIX.0.et
  std::string groups_file;  // PREFIX.comm_groups.json
};

// CheckChakraExport's errors, or kInvalidArgument naming --chakra-out when a file cannot be
// written.
absl::StatusOr<ChakraExportSummary> WriteChakraTraces(const Scenario& scenario,
                                                      const Projection& projection,
                                                      const std::string& prefix);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_CHAKRA_WRITER_H_
