#include "scenario/network_flags.h"

#include <string>

#include "core/status_macros.h"
#include "network/network_file.h"

namespace projector {

absl::StatusOr<std::optional<NetworkSpec>> NetworkFromFlags(const FlagValues& flags) {
  if (!Given(flags, "network")) return std::nullopt;
  const std::string path = StringFlag(flags, "network");
  if (path.empty()) return FlagError("network", "empty file name; give a network file");
  PROJECTOR_ASSIGN_OR_RETURN(NetworkSpec spec, LoadNetworkFile(path));
  return spec;
}

}  // namespace projector
