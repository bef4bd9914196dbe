// YAML input read into the JSON value every loader already checks (core/json_reader.h), so a
// YAML file gets the same field checks and "<file>: <json-pointer>: <problem>" messages as JSON.
// Scalars: quoted ones stay strings; plain ones become null (~, null), booleans (true, false),
// integers, numbers, or else strings (YAML 1.2 core schema).
#ifndef PROJECTOR_CORE_YAML_READER_H_
#define PROJECTOR_CORE_YAML_READER_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace projector {

// kNotFound if the file cannot be opened; kInvalidArgument "<file>:<line>:<column>: <problem>"
// for a syntax error.
absl::StatusOr<nlohmann::json> ReadYamlFile(const std::string& path);
// Parses YAML text; `origin` names it in messages.
absl::StatusOr<nlohmann::json> ParseYamlText(std::string_view text, std::string_view origin);
// Where the value at JSON pointer `pointer` (or, when it has none, the nearest value enclosing
// it) sits in the YAML text last parsed under `origin`, as (line, column), 1-based; nullopt when
// `origin` is no YAML text read so far. JsonFieldError adds it to its messages.
std::optional<std::pair<int, int>> YamlPositionOf(std::string_view origin,
                                                  std::string_view pointer);
// True for a path ending in .yaml or .yml (any case).
bool IsYamlPath(std::string_view path);
// An input file of the tool (scenario, model, hardware profile, overlay): YAML when IsYamlPath,
// else JSON (ReadJsonFile). Either way the loaders check the same fields with the same
// "<file>: <json-pointer>: <problem>" messages.
absl::StatusOr<nlohmann::json> ReadConfigFile(const std::string& path);

}  // namespace projector

#endif  // PROJECTOR_CORE_YAML_READER_H_
