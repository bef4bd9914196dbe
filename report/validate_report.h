// Renderings of a validation (studies/validate.h): the per-case table with the error summaries
// and speedup checks as text, and JSON.
#ifndef PROJECTOR_REPORT_VALIDATE_REPORT_H_
#define PROJECTOR_REPORT_VALIDATE_REPORT_H_

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "studies/validate.h"

namespace projector {

// What one source's projected cases ran, each value with its count, the most frequent first
// ("fa1 144, fa2 72"): the stack the case schema does not state, from the defaults or the
// what-if flags.
struct SourceStack {
  std::string source;
  std::string stacks;
  std::string attention_kernels;
  std::string loss_kernels;
  std::string train_metric_passes;
};
// One row per source of report.by_source, in its order.
std::vector<SourceStack> StacksBySource(const ValidationReport& report);

std::string FormatValidationText(const ValidationReport& report);
// What an inconsistent case's measurement contradicts ("+14% vs 4-case series; 7% slower than
// seq 4096 at equal tokens"); empty when nothing does.
std::string InconsistencyNote(const ValidationCase& c);
nlohmann::json ValidationToJson(const ValidationReport& report);

}  // namespace projector

#endif  // PROJECTOR_REPORT_VALIDATE_REPORT_H_
