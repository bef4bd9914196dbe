// Strict JSON reading shared by every loader (models, hardware profiles, scenarios, cases,
// profiles): typed field access that names the file and JSON pointer of a bad field, and a
// check that rejects unknown keys (typos) listing the accepted ones.
// Message format: "<file>: <json-pointer>: <problem>; <what is accepted>".
#ifndef PROJECTOR_CORE_JSON_READER_H_
#define PROJECTOR_CORE_JSON_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace projector {

// Reads and parses a JSON file. kNotFound if it cannot be opened; kInvalidArgument with the
// line/column for a syntax error.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);
// The bytes of a file: kNotFound if it cannot be opened, kInvalidArgument for a directory (the
// messages ReadJsonFile gives).
absl::StatusOr<std::string> ReadTextFile(const std::string& path);
// Parses JSON text; `origin` names it in messages (a file, or "file:line" for JSONL).
absl::StatusOr<nlohmann::json> ParseJsonText(std::string_view text, std::string_view origin);

// "<origin>: <pointer>: <problem>" as kInvalidArgument.
absl::Status JsonFieldError(std::string_view origin, std::string_view pointer,
                            std::string_view problem);

// A view of one JSON object. Each accessor marks its key as known; CheckNoUnknownKeys() then
// fails on any other key. Accessors return kInvalidArgument naming origin and pointer.
// `key` as one JSON-pointer token (RFC 6901: "~" as "~0", "/" as "~1").
std::string EscapePointerToken(std::string_view key);

class JsonObject {
 public:
  // kInvalidArgument if `value` is not an object.
  static absl::StatusOr<JsonObject> Make(const nlohmann::json& value, std::string origin,
                                         std::string pointer);

  const std::string& origin() const { return origin_; }
  const std::string& pointer() const { return pointer_; }
  std::string PathOf(std::string_view key) const;
  bool Has(std::string_view key) const;
  // Marks a key as known without reading it.
  void Accept(std::string_view key);

  // Required fields.
  absl::StatusOr<int64_t> Int(std::string_view key);
  absl::StatusOr<double> Number(std::string_view key);
  absl::StatusOr<bool> Bool(std::string_view key);
  absl::StatusOr<std::string> String(std::string_view key);
  absl::StatusOr<JsonObject> Object(std::string_view key);
  absl::StatusOr<const nlohmann::json*> Array(std::string_view key);
  // Required positive integer (> 0) or >= 0 when allow_zero.
  absl::StatusOr<int64_t> PositiveInt(std::string_view key, bool allow_zero = false);
  absl::StatusOr<double> PositiveNumber(std::string_view key, bool allow_zero = false);

  // Optional fields: absent or null gives the fallback / nullopt.
  absl::StatusOr<int64_t> IntOr(std::string_view key, int64_t fallback);
  absl::StatusOr<std::optional<int64_t>> OptionalInt(std::string_view key);
  absl::StatusOr<double> NumberOr(std::string_view key, double fallback);
  absl::StatusOr<std::optional<double>> OptionalNumber(std::string_view key);
  absl::StatusOr<bool> BoolOr(std::string_view key, bool fallback);
  absl::StatusOr<std::string> StringOr(std::string_view key, std::string fallback);
  // nullopt when absent or null.
  absl::StatusOr<std::optional<JsonObject>> OptionalObject(std::string_view key);
  // A string that must be one of `valid`.
  absl::StatusOr<std::string> Enum(std::string_view key, const std::vector<std::string>& valid);
  absl::StatusOr<std::string> EnumOr(std::string_view key, const std::vector<std::string>& valid,
                                     std::string fallback);

  // kInvalidArgument naming the first unknown key and listing the accepted ones.
  absl::Status CheckNoUnknownKeys() const;

  // Error about one key of this object.
  absl::Status FieldError(std::string_view key, std::string_view problem) const;

  const nlohmann::json& json() const { return *value_; }

 private:
  JsonObject(const nlohmann::json& value, std::string origin, std::string pointer)
      : value_(&value), origin_(std::move(origin)), pointer_(std::move(pointer)) {}
  absl::StatusOr<const nlohmann::json*> Get(std::string_view key, bool required);

  const nlohmann::json* value_;
  std::string origin_;
  std::string pointer_;
  std::vector<std::string> known_;
};

// Sorted stems of the regular *.json files in `dir` (a library directory: models, GPU profiles);
// empty when it cannot be read.
std::vector<std::string> JsonFileStems(const std::string& dir);

// JSON type name for messages ("string", "number", ...).
std::string_view JsonTypeName(const nlohmann::json& value);

}  // namespace projector

#endif  // PROJECTOR_CORE_JSON_READER_H_
