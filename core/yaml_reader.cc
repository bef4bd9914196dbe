#include "core/yaml_reader.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
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

// Where a value sits in its file, 1-based.
using Positions = std::map<std::string, std::pair<int, int>, std::less<>>;

void Record(Positions& positions, const std::string& pointer, const YAML::Mark& mark) {
  if (!mark.is_null()) positions[pointer] = {mark.line + 1, mark.column + 1};
}

// The JSON value of `node` at JSON pointer `pointer`, recording where each value (a map entry:
// its key) sits.
nlohmann::json NodeToJson(const YAML::Node& node, const std::string& pointer,
                          Positions& positions) {
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return nullptr;
    case YAML::NodeType::Scalar:
      return ScalarToJson(node);
    case YAML::NodeType::Sequence: {
      nlohmann::json array = nlohmann::json::array();
      for (const YAML::Node& item : node) {
        const std::string at = absl::StrCat(pointer, "/", array.size());
        Record(positions, at, item.Mark());
        array.push_back(NodeToJson(item, at, positions));
      }
      return array;
    }
    case YAML::NodeType::Map: {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) {
        const std::string key = entry.first.as<std::string>();
        const std::string at = absl::StrCat(pointer, "/", EscapePointerToken(key));
        Record(positions, at, entry.first.Mark());
        object[key] = NodeToJson(entry.second, at, positions);
      }
      return object;
    }
  }
  return nullptr;
}

// The positions of the YAML files read so far, by origin: what JsonFieldError adds to a message.
struct PositionRegistry {
  absl::Mutex mu;
  std::map<std::string, Positions, std::less<>> by_origin ABSL_GUARDED_BY(mu);
};

PositionRegistry& Registry() {
  static PositionRegistry* registry = new PositionRegistry();
  return *registry;
}

}  // namespace

std::optional<std::pair<int, int>> YamlPositionOf(std::string_view origin,
                                                  std::string_view pointer) {
  PositionRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  auto file = r.by_origin.find(origin);
  if (file == r.by_origin.end()) return std::nullopt;
  // The value itself, else the nearest enclosing one (a missing field: its object).
  std::string at(pointer);
  while (true) {
    auto it = file->second.find(at);
    if (it != file->second.end()) return it->second;
    const size_t slash = at.rfind('/');
    if (slash == std::string::npos || at.empty()) return std::nullopt;
    at.resize(slash);
    if (at.empty()) return std::nullopt;
  }
}

absl::StatusOr<nlohmann::json> ParseYamlText(std::string_view text, std::string_view origin) {
  try {
    Positions positions;
    nlohmann::json value = NodeToJson(YAML::Load(std::string(text)), "", positions);
    PositionRegistry& r = Registry();
    absl::MutexLock lock(&r.mu);
    r.by_origin[std::string(origin)] = std::move(positions);
    return value;
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
