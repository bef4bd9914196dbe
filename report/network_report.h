// Renderings of `project network show` and `route` (network/network_summary.h): text tables and
// JSON. Fields: docs/network.md.
#ifndef PROJECTOR_REPORT_NETWORK_REPORT_H_
#define PROJECTOR_REPORT_NETWORK_REPORT_H_

#include <string>

#include "network/network_summary.h"
#include "nlohmann/json.hpp"
#include "studies/network_validate.h"

namespace projector {

std::string NetworkSummaryText(const NetworkSummary& s);
nlohmann::json NetworkSummaryJson(const NetworkSummary& s);
std::string RouteText(const RouteSummary& r);
nlohmann::json RouteJson(const RouteSummary& r);
std::string NetworkValidationText(const NetworkValidation& v);
nlohmann::json NetworkValidationJson(const NetworkValidation& v);

}  // namespace projector

#endif  // PROJECTOR_REPORT_NETWORK_REPORT_H_
