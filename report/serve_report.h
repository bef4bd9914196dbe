// Renderings of `project serve` (serving/serve.h): a text report and JSON. Fields:
// docs/serving.md.
#ifndef PROJECTOR_REPORT_SERVE_REPORT_H_
#define PROJECTOR_REPORT_SERVE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "serving/serve_validate.h"

namespace projector {

std::string ServeText(const ServeJob& job, const ServeResult& result);
nlohmann::json ServeJson(const ServeJob& job, const ServeResult& result);
// `project serve --validate FILE`: every published figure against its projection, and the
// median |error|.
std::string ServeValidationText(const ServeValidation& v);
nlohmann::json ServeValidationJson(const ServeValidation& v);

}  // namespace projector

#endif  // PROJECTOR_REPORT_SERVE_REPORT_H_
