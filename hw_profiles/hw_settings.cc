#include "hw_profiles/hw_settings.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/json_reader.h"
#include "core/yaml_reader.h"
#include "core/status_macros.h"
#include "core/suggest.h"

namespace projector {
namespace {

using json = nlohmann::json;

constexpr HwShorthand kShorthands[] = {
    {"scale-up-bandwidth-gbs", "/scale_up/per_gpu_bandwidth_gbs",
     "In-node (scale-up) bandwidth per GPU, GB/s per direction (the per-link figure scales with "
     "it)"},
    {"nic-bandwidth-gbps", "/scale_out/per_nic_bandwidth_gbps",
     "Inter-node bandwidth per NIC, Gb/s"},
    {"nics-per-node", "/scale_out/nics_per_node", "NICs per node"},
    {"hbm-bandwidth-tbs", "/gpu/hbm_bandwidth_tbs", "HBM bandwidth per GPU, TB/s"},
    {"hbm-gib", "/gpu/hbm_capacity_gib", "HBM capacity per GPU, GiB"},
};

// The keys of an object, for a suggestion.
std::vector<std::string> KeysOf(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, unused] : object.items()) keys.push_back(key);
  return keys;
}

absl::Status SettingError(const HwSetting& s, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(s.text, ": ", problem));
}

// The field `s` names in `doc`: an existing leaf, or the {"value", ...} object of a figure.
absl::StatusOr<json*> FieldOf(json& doc, const HwSetting& s) {
  json* at = &doc;
  std::string walked;
  for (const absl::string_view part : absl::StrSplit(absl::StripPrefix(s.pointer, "/"), '/')) {
    const std::string key(part);
    if (!at->is_object()) {
      return SettingError(s, absl::StrCat("'", walked, "' is a value, not a section"));
    }
    if (!at->contains(key)) {
      const std::vector<std::string> keys = KeysOf(*at);
      return SettingError(
          s, absl::StrCat("the profile has no field '", walked, "/", key, "'",
                          DidYouMean(key, keys), "; fields here: ", absl::StrJoin(keys, ", ")));
    }
    at = &(*at)[key];
    absl::StrAppend(&walked, "/", key);
  }
  if (at->is_object() && !at->contains("value")) {
    return SettingError(s, absl::StrCat("'", walked, "' is a section; set one of its fields: ",
                                        absl::StrJoin(KeysOf(*at), ", ")));
  }
  return at;
}

// Sets the field, keeping the file's {"value", "source"} form.
absl::Status Set(json& doc, const HwSetting& s) {
  PROJECTOR_ASSIGN_OR_RETURN(json * field, FieldOf(doc, s));
  if (field->is_object()) {
    (*field)["value"] = s.value;
    (*field)["source"] = absl::StrCat("what-if: ", s.text);
    field->erase("derived");
  } else {
    *field = s.value;
  }
  return absl::OkStatus();
}

// The per-link scale-up figure scaled with a new per-GPU one (links x per-link >= per-GPU).
void ScalePerLink(json& doc, const json& old_per_gpu) {
  json& scale_up = doc["scale_up"];
  if (!scale_up.contains("per_link_bandwidth_gbs")) return;
  json& link = scale_up["per_link_bandwidth_gbs"];
  json& link_value = link.is_object() ? link["value"] : link;
  const json& per_gpu = scale_up["per_gpu_bandwidth_gbs"];
  const json& new_value = per_gpu.is_object() ? per_gpu["value"] : per_gpu;
  const json& old_value = old_per_gpu.is_object() ? old_per_gpu["value"] : old_per_gpu;
  if (!link_value.is_number() || !new_value.is_number() || !old_value.is_number() ||
      old_value.get<double>() <= 0) {
    return;
  }
  link_value = link_value.get<double>() * new_value.get<double>() / old_value.get<double>();
}

}  // namespace

std::span<const HwShorthand> HwShorthands() { return kShorthands; }

absl::StatusOr<HwSetting> ParseHwSetting(std::string_view text_view) {
  const std::string text(text_view);
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hw-set: '", text,
                     "' is not PATH=VALUE; e.g. scale_out.per_nic_bandwidth_gbps=200 or "
                     "/gpu/hbm_bandwidth_tbs=4.8 (fields of the hardware profile's JSON file)"));
  }
  HwSetting s;
  s.text = absl::StrCat("--hw-set ", text);
  const std::string path = text.substr(0, eq);
  s.pointer = absl::StartsWith(path, "/")
                  ? path
                  : absl::StrCat("/", absl::StrReplaceAll(path, {{".", "/"}}));
  const std::string value = text.substr(eq + 1);
  s.value = json::parse(value, nullptr, /*allow_exceptions=*/false);
  if (s.value.is_discarded() || s.value.is_structured() || s.value.is_null()) s.value = value;
  return s;
}

absl::Status ApplyHwSettings(std::span<const HwSetting> settings, HardwareProfile& hw) {
  if (settings.empty()) return absl::OkStatus();
  if (hw.source_file.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("--hw-set: the hardware profile '", hw.name,
                     "' was not loaded from a file; give --gpu-arch a library name or a file"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(json doc, ReadConfigFile(hw.source_file));
  std::vector<std::string> texts;
  for (const HwSetting& s : settings) {
    const bool per_gpu_scale_up = s.pointer == "/scale_up/per_gpu_bandwidth_gbs";
    const json old_per_gpu = per_gpu_scale_up && doc.contains("scale_up")
                                 ? doc["scale_up"].value("per_gpu_bandwidth_gbs", json())
                                 : json();
    PROJECTOR_RETURN_IF_ERROR(Set(doc, s));
    if (per_gpu_scale_up) ScalePerLink(doc, old_per_gpu);
    texts.push_back(s.text);
  }
  const std::string origin = absl::StrCat(hw.source_file, " with ", absl::StrJoin(texts, ", "));
  PROJECTOR_ASSIGN_OR_RETURN(HardwareProfile changed,
                             ParseHardwareProfile(doc, hw.source_file, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateHardwareProfile(changed, origin));
  hw = std::move(changed);
  return absl::OkStatus();
}

}  // namespace projector
