// Reading a network description: the tool's own JSON (or the same fields in YAML), or
// ASTRA-sim's analytical network.yml (`topology`, `npus_count`, `bandwidth`, `latency` lists),
// into a validated NetworkSpec. Field tables and units: docs/network.md.
#ifndef PROJECTOR_NETWORK_NETWORK_FILE_H_
#define PROJECTOR_NETWORK_NETWORK_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "network/network_spec.h"
#include "nlohmann/json.hpp"

namespace projector {

// A .json, .yaml or .yml file. A document with `dimensions` is the tool's format; one with
// `topology` is ASTRA-sim's. kNotFound if it cannot be opened; kInvalidArgument naming the file
// and the JSON pointer of a bad field, what is wrong and what is accepted.
absl::StatusOr<NetworkSpec> LoadNetworkFile(const std::string& path);
// The same from a parsed document; `origin` names it in messages.
absl::StatusOr<NetworkSpec> NetworkFromJson(const nlohmann::json& doc, std::string_view origin);

// The tool's JSON form of a spec (what `project network show --format json` echoes); reading it
// back gives the same spec.
nlohmann::json NetworkSpecJson(const NetworkSpec& spec);

}  // namespace projector

#endif  // PROJECTOR_NETWORK_NETWORK_FILE_H_
