// Projected vs measured: projects every case of a calibration JSONL file (the
// ../shared/calibration schema) in simulate mode and summarises the errors overall, by GPU and
// by source. Cases the tool cannot project are listed with the reason and counted.
#ifndef PROJECTOR_PROJECTION_VALIDATE_H_
#define PROJECTOR_PROJECTION_VALIDATE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace projector {

struct ValidationCase {
  int64_t line = 0;
  std::string id;
  std::string model;
  std::string gpu;
  std::string source;  // short source label used for grouping
  int64_t num_gpus = 0;
  std::string layout;
  double measured_tokens_per_s_per_gpu = 0;
  std::optional<double> projected_tokens_per_s_per_gpu;
  std::optional<double> error_pct;  // (projected − measured) / measured · 100
  std::string status;               // "ok" or "unsupported"
  std::string reason;               // why a case could not be projected
  std::string dominant_terms;       // "compute 81%, dp 7%"
  bool fits_in_memory = true;
};

struct ErrorSummary {
  std::string group;  // "all", a GPU name or a source label
  int64_t count = 0;
  int64_t projected = 0;
  double median_abs_error_pct = 0;
  double mean_error_pct = 0;
  double within_10_pct = 0;  // share of projected cases, in percent
  double within_20_pct = 0;
  double within_30_pct = 0;
};

struct ValidationReport {
  std::string file;
  std::vector<ValidationCase> cases;
  ErrorSummary summary;
  std::vector<ErrorSummary> by_gpu;
  std::vector<ErrorSummary> by_source;
  double elapsed_s = 0;
};

// Reads and projects every case. A malformed line (bad JSON, wrong type, missing or unknown
// field) fails the whole run with kInvalidArgument naming "file:line" and the field; a case
// that parses but cannot be projected (invalid layout, unsupported feature) is listed as
// "unsupported" with the reason. `threads` <= 0 uses all cores.
absl::StatusOr<ValidationReport> ValidateCasesFile(const std::string& path, int threads = 0);

// Summary over the projected cases of `cases` (count includes the unsupported ones).
ErrorSummary Summarise(const std::vector<const ValidationCase*>& cases, std::string group);

std::string FormatValidationText(const ValidationReport& report);
nlohmann::json ValidationToJson(const ValidationReport& report);

}  // namespace projector

#endif  // PROJECTOR_PROJECTION_VALIDATE_H_
