// Hardware what-ifs: `--hw-set PATH=VALUE` over the fields of a hardware profile's JSON file,
// and the named flags that are shorthands for the common ones (in-node and inter-node bandwidth,
// NICs per node, HBM bandwidth and capacity). The profile is read again from its file with the
// settings applied and validated as the file itself is, so a what-if meets the same checks
// (types, ranges, cross-field relations) and errors name the field.
#ifndef PROJECTOR_HW_PROFILES_HW_SETTINGS_H_
#define PROJECTOR_HW_PROFILES_HW_SETTINGS_H_

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hw_profiles/hardware_profile.h"
#include "nlohmann/json.hpp"

namespace projector {

// One what-if: a field of the profile file and its new value.
struct HwSetting {
  std::string pointer;  // JSON pointer into the profile file: "/scale_out/per_nic_bandwidth_gbps"
  nlohmann::json value;
  // As the user gave it, for messages, reports and commands: "--hw-set scale_out.nics_per_node=4",
  // "--hbm-gib 120".
  std::string text;
};

// "scale_out.per_nic_bandwidth_gbps=200" or "/gpu/hbm_bandwidth_tbs=4.8": the path in dots or as
// a JSON pointer, the value as JSON (a number, true/false, or a quoted string; anything else is
// taken as a string). kInvalidArgument without '=' or with an empty path or value.
absl::StatusOr<HwSetting> ParseHwSetting(std::string_view text);

// A named what-if flag and the profile field it sets ("nic-bandwidth-gbps" ->
// "/scale_out/per_nic_bandwidth_gbps").
struct HwShorthand {
  std::string_view flag;
  std::string_view pointer;
  std::string_view help;
};
std::span<const HwShorthand> HwShorthands();

// Re-reads hw's profile file, applies `settings` in order (a field holding {"value", "source"}
// gets the value, and "what-if" as its source) and parses and validates the result. Fields
// other than the settings' keep their values; gpus_per_node, a later overlay and kernel choices
// are the caller's to apply after. Setting the per-GPU scale-up bandwidth also scales the
// per-link one by the same factor, so links x per-link still covers it.
// kInvalidArgument "<text>: ..." for a path that is not a field of the profile (with the
// closest field), a section, a wrong type or a value out of range; kFailedPrecondition for a
// profile built in code (no file).
absl::Status ApplyHwSettings(std::span<const HwSetting> settings, HardwareProfile& hw);

}  // namespace projector

#endif  // PROJECTOR_HW_PROFILES_HW_SETTINGS_H_
