// --network FILE: the network description a command runs on (network/network_file.h), read
// once for every command that takes it.
#ifndef PROJECTOR_SCENARIO_NETWORK_FLAGS_H_
#define PROJECTOR_SCENARIO_NETWORK_FLAGS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "core/flag_values.h"
#include "network/network_spec.h"

namespace projector {

inline constexpr FlagSpec kNetworkFlag = {
    "network", "Network file: the tool's JSON/YAML (docs/network.md) or ASTRA-sim's network.yml",
    "FILE"};

// nullopt when --network is not given; the file's errors (file, JSON pointer) otherwise, and
// "--network: empty file name" for an empty value.
absl::StatusOr<std::optional<NetworkSpec>> NetworkFromFlags(const FlagValues& flags);

}  // namespace projector

#endif  // PROJECTOR_SCENARIO_NETWORK_FLAGS_H_
