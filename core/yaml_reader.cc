#include "core/yaml_reader.h"

#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/json_reader.h"
#include "core/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace projector {
namespace {

nlohmann::json ScalarToJson(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  // Quoted scalars carry the non-specific tag "!": they are strings whatever they spell.
  if (node.Tag() == "!") return text;
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  int64_t integer = 0;
  if (absl::SimpleAtoi(text, &integer)) return integer;
  double number = 0;
  if (absl::SimpleAtod(text, &number)) return number;
  return text;
}

nlohmann::json NodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) array.push_back(NodeToJson(item));
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        object[entry.first.as<std::string>()] = NodeToJson(entry.second);
      }
      return object;
    }
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<nlohmann::json> ParseYamlText(std::string_view text, std::string_view origin) {
  try {
    return NodeToJson(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ": YAML: ", e.msg));
    }
    return absl::InvalidArgumentError(absl::StrCat(std::string(origin), ":", e.mark.line + 1, ":",
                                                   e.mark.column + 1, ": YAML syntax: ", e.msg));
  }
}

absl::StatusOr<nlohmann::json> ReadYamlFile(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  return ParseYamlText(text, path);
}

absl::StatusOr<nlohmann::json> ReadConfigFile(const std::string& path) {
  return IsYamlPath(path) ? ReadYamlFile(path) : ReadJsonFile(path);
}

bool IsYamlPath(std::string_view path) {
  const std::string lower = absl::AsciiStrToLower(std::string(path));
  return absl::EndsWith(lower, ".yaml") || absl::EndsWith(lower, ".yml");
}

}  // namespace projector
