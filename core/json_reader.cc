#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "core/yaml_reader.h"

namespace projector {
namespace {

using nlohmann::json;

// Debian's Abseil 20220623 has its own absl::string_view, which StrCat needs.
absl::string_view AbslView(std::string_view s) { return absl::string_view(s.data(), s.size()); }


}  // namespace

std::string_view JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::object:
      return "object";
    case json::value_t::array:
      return "array";
    case json::value_t::string:
      return "string";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    default:
      return "value";
  }
}

std::string EscapePointerToken(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

absl::Status JsonFieldError(std::string_view origin, std::string_view pointer,
                            std::string_view problem) {
  // A YAML file's message says where in it, as its syntax errors do: "<file>:<line>:<column>:".
  std::string where(origin);
  if (const std::optional<std::pair<int, int>> at = YamlPositionOf(origin, pointer)) {
    where = absl::StrCat(where, ":", at->first, ":", at->second);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      where, ": ", pointer.empty() ? "/" : AbslView(pointer), ": ", AbslView(problem)));
}

namespace {

// Why a text is not the JSON we accept, and where (byte offset, 0 when unknown).
struct JsonTextError {
  std::string problem;
  size_t byte = 0;
};

// Parses strictly: nlohmann's syntax errors, numbers beyond a double (1e999: out_of_range 406)
// and, unlike nlohmann (which keeps the last), a key given twice in one object, which would
// otherwise silently drop a value.
std::variant<json, JsonTextError> ParseStrict(std::string_view text) {
  std::vector<std::vector<std::string>> keys;  // per open object, the keys seen so far
  std::string duplicate;
  auto callback = [&keys, &duplicate](int /*depth*/, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (event == json::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (event == json::parse_event_t::key && !keys.empty() && duplicate.empty()) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (std::find(keys.back().begin(), keys.back().end(), key) != keys.back().end()) {
        duplicate = key;
      } else {
        keys.back().push_back(key);
      }
    }
    return true;
  };
  try {
    json value = json::parse(text.begin(), text.end(), callback);
    if (!duplicate.empty()) {
      return JsonTextError{absl::StrCat("key '", AbslView(duplicate),
                                        "' appears twice in one object; give each key once")};
    }
    return value;
  } catch (const json::parse_error& e) {
    return JsonTextError{e.what(), e.byte};
  } catch (const json::out_of_range& e) {
    return JsonTextError{absl::StrCat(e.what(), " (numbers must fit a double: |x| < 1.8e308)")};
  }
}

}  // namespace

absl::StatusOr<json> ParseJsonText(std::string_view text, std::string_view origin) {
  auto parsed = ParseStrict(text);
  if (auto* error = std::get_if<JsonTextError>(&parsed)) {
    return absl::InvalidArgumentError(
        absl::StrCat(AbslView(origin), ": invalid JSON",
                     error->byte > 0 ? absl::StrCat(" at byte ", error->byte) : std::string(), ": ",
                     error->problem));
  }
  return std::get<json>(std::move(parsed));
}

absl::StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory; give the path of a JSON file"));
  }
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

absl::StatusOr<json> ReadJsonFile(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(const std::string text, ReadTextFile(path));
  auto parsed = ParseStrict(text);
  if (auto* error = std::get_if<JsonTextError>(&parsed)) {
    if (error->byte == 0) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": invalid JSON: ", error->problem));
    }
    // Translate the byte offset into a line number for people.
    size_t byte = std::min<size_t>(error->byte, text.size());
    int64_t line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n');
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": invalid JSON near line ", line, ": ", error->problem));
  }
  return std::get<json>(std::move(parsed));
}

absl::StatusOr<JsonObject> JsonObject::Make(const nlohmann::json& value, std::string origin,
                                            std::string pointer) {
  if (!value.is_object()) {
    return JsonFieldError(origin, pointer,
                          absl::StrCat("expected an object, got ", AbslView(JsonTypeName(value))));
  }
  return JsonObject(value, std::move(origin), std::move(pointer));
}

std::string JsonObject::PathOf(std::string_view key) const {
  return absl::StrCat(pointer_, "/", EscapePointerToken(key));
}

bool JsonObject::Has(std::string_view key) const {
  auto it = value_->find(std::string(key));
  return it != value_->end() && !it->is_null();
}

void JsonObject::Accept(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
    known_.emplace_back(key);
  }
}

absl::Status JsonObject::FieldError(std::string_view key, std::string_view problem) const {
  return JsonFieldError(origin_, PathOf(key), problem);
}

absl::StatusOr<const nlohmann::json*> JsonObject::Get(std::string_view key, bool required) {
  Accept(key);
  auto it = value_->find(std::string(key));
  if (it == value_->end() || it->is_null()) {
    if (required) return FieldError(key, "required field is missing");
    return nullptr;
  }
  return &*it;
}

absl::StatusOr<int64_t> JsonObject::Int(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  const nlohmann::json& j = **v;
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return FieldError(key, absl::StrCat("integer ", j.dump(), " is beyond int64 (at most ",
                                        std::numeric_limits<int64_t>::max(), ")"));
  }
  if (j.is_number_integer() || j.is_number_unsigned()) return j.get<int64_t>();
  if (j.is_number_float()) {
    double d = j.get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  return FieldError(key, absl::StrCat("expected an integer, got ", AbslView(JsonTypeName(j)),
                                      j.is_primitive() ? absl::StrCat(" ", j.dump()) : ""));
}

absl::StatusOr<double> JsonObject::Number(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  const nlohmann::json& j = **v;
  if (!j.is_number()) {
    return FieldError(key, absl::StrCat("expected a number, got ", AbslView(JsonTypeName(j)),
                                        j.is_primitive() ? absl::StrCat(" ", j.dump()) : ""));
  }
  double d = j.get<double>();
  if (!std::isfinite(d)) return FieldError(key, "must be a finite number");
  return d;
}

absl::StatusOr<bool> JsonObject::Bool(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  const nlohmann::json& j = **v;
  if (!j.is_boolean()) {
    return FieldError(key, absl::StrCat("expected true or false, got ", AbslView(JsonTypeName(j)),
                                        j.is_primitive() ? absl::StrCat(" ", j.dump()) : ""));
  }
  return j.get<bool>();
}

absl::StatusOr<std::string> JsonObject::String(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  const nlohmann::json& j = **v;
  if (!j.is_string()) {
    return FieldError(key, absl::StrCat("expected a string, got ", AbslView(JsonTypeName(j))));
  }
  return j.get<std::string>();
}

absl::StatusOr<JsonObject> JsonObject::Object(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  return Make(**v, origin_, PathOf(key));
}

absl::StatusOr<const nlohmann::json*> JsonObject::Array(std::string_view key) {
  auto v = Get(key, true);
  if (!v.ok()) return v.status();
  if (!(*v)->is_array()) {
    return FieldError(key, absl::StrCat("expected an array, got ", AbslView(JsonTypeName(**v))));
  }
  return *v;
}

absl::StatusOr<int64_t> JsonObject::PositiveInt(std::string_view key, bool allow_zero) {
  auto v = Int(key);
  if (!v.ok()) return v.status();
  if (allow_zero ? *v < 0 : *v <= 0) {
    return FieldError(key, absl::StrCat("must be ", allow_zero ? ">= 0" : "> 0", ", got ", *v));
  }
  return *v;
}

absl::StatusOr<double> JsonObject::PositiveNumber(std::string_view key, bool allow_zero) {
  auto v = Number(key);
  if (!v.ok()) return v.status();
  if (allow_zero ? *v < 0 : *v <= 0) {
    return FieldError(key, absl::StrCat("must be ", allow_zero ? ">= 0" : "> 0", ", got ", *v));
  }
  return *v;
}

absl::StatusOr<int64_t> JsonObject::IntOr(std::string_view key, int64_t fallback) {
  if (!Has(key)) {
    Accept(key);
    return fallback;
  }
  return Int(key);
}

absl::StatusOr<std::optional<int64_t>> JsonObject::OptionalInt(std::string_view key) {
  if (!Has(key)) {
    Accept(key);
    return std::optional<int64_t>();
  }
  auto v = Int(key);
  if (!v.ok()) return v.status();
  return std::optional<int64_t>(*v);
}

absl::StatusOr<double> JsonObject::NumberOr(std::string_view key, double fallback) {
  if (!Has(key)) {
    Accept(key);
    return fallback;
  }
  return Number(key);
}

absl::StatusOr<std::optional<double>> JsonObject::OptionalNumber(std::string_view key) {
  if (!Has(key)) {
    Accept(key);
    return std::optional<double>();
  }
  auto v = Number(key);
  if (!v.ok()) return v.status();
  return std::optional<double>(*v);
}

absl::StatusOr<bool> JsonObject::BoolOr(std::string_view key, bool fallback) {
  if (!Has(key)) {
    Accept(key);
    return fallback;
  }
  return Bool(key);
}

absl::StatusOr<std::string> JsonObject::StringOr(std::string_view key, std::string fallback) {
  if (!Has(key)) {
    Accept(key);
    return fallback;
  }
  return String(key);
}

absl::StatusOr<std::optional<JsonObject>> JsonObject::OptionalObject(std::string_view key) {
  if (!Has(key)) {
    Accept(key);
    return std::optional<JsonObject>();
  }
  auto v = Object(key);
  if (!v.ok()) return v.status();
  return std::optional<JsonObject>(std::move(*v));
}

absl::StatusOr<std::string> JsonObject::Enum(std::string_view key,
                                             const std::vector<std::string>& valid) {
  auto v = String(key);
  if (!v.ok()) return v.status();
  if (std::find(valid.begin(), valid.end(), *v) == valid.end()) {
    return FieldError(key, absl::StrCat("unknown value '", *v, "'", DidYouMean(*v, valid),
                                        "; accepted: ", absl::StrJoin(valid, ", ")));
  }
  return *v;
}

absl::StatusOr<std::string> JsonObject::EnumOr(std::string_view key,
                                               const std::vector<std::string>& valid,
                                               std::string fallback) {
  if (!Has(key)) {
    Accept(key);
    return fallback;
  }
  return Enum(key, valid);
}

absl::Status JsonObject::CheckNoUnknownKeys() const {
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) == known_.end()) {
      std::vector<std::string> accepted = known_;
      std::sort(accepted.begin(), accepted.end());
      return FieldError(it.key(), absl::StrCat("unknown key '", it.key(), "'",
                                               DidYouMean(it.key(), accepted),
                                               "; accepted keys: ", absl::StrJoin(accepted, ", ")));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> JsonFileStems(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return names;
  for (const auto& entry : it) {
    std::error_code type_ec;
    if (!entry.is_regular_file(type_ec) || entry.path().extension() != ".json") continue;
    names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace projector
