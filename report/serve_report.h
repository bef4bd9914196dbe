// Renderings of `project serve` (serving/serve.h): a text report and JSON. Fields:
// docs/serving.md.
#ifndef PROJECTOR_REPORT_SERVE_REPORT_H_
#define PROJECTOR_REPORT_SERVE_REPORT_H_

#include <string>

#include "nlohmann/json.hpp"
#include "serving/serve.h"
#include "serving/serve_flags.h"
#include "serving/serve_validate.h"
#include "serving/slo_search.h"

namespace projector {

std::string ServeText(const ServeJob& job, const ServeResult& result);
nlohmann::json ServeJson(const ServeJob& job, const ServeResult& result);
// `project serve --max-qps` and `--search-layouts`: the highest rate under the latency target
// and its probes; every layout ranked.
// With `pools`, the search ran over those prefill and decode pools instead of the job's
// deployment.
std::string SloSearchText(const ServeJob& job, const SloTarget& slo, const SloSearchResult& r,
                          const DisaggregatedOptions* pools = nullptr);
nlohmann::json SloSearchJson(const ServeJob& job, const SloTarget& slo, const SloSearchResult& r,
                             const DisaggregatedOptions* pools = nullptr);
// `project serve --disaggregate --search-layouts`: every prefill/decode split ranked.
std::string PoolSplitText(const ServeJob& job, const SloRequest& slo,
                          const DisaggregatedOptions& pools, const std::vector<PoolSplit>& splits);
nlohmann::json PoolSplitJson(const ServeJob& job, const SloRequest& slo,
                             const DisaggregatedOptions& pools,
                             const std::vector<PoolSplit>& splits);
std::string LayoutSearchText(const ServeJob& job, const SloRequest& slo,
                             const std::vector<ServingLayout>& layouts);
nlohmann::json LayoutSearchJson(const ServeJob& job, const SloRequest& slo,
                                const std::vector<ServingLayout>& layouts);
// `project serve --disaggregate`: the aggregated deployment beside the prefill and decode pools.
std::string DisaggregatedText(const ServeJob& job, const DisaggregatedOptions& pools,
                              const ServeResult& aggregated, const DisaggregatedResult& split);
nlohmann::json DisaggregatedJson(const ServeJob& job, const DisaggregatedOptions& pools,
                                 const ServeResult& aggregated, const DisaggregatedResult& split);
// `project serve --validate FILE`: every published figure against its projection, and the
// median |error|.
std::string ServeValidationText(const ServeValidation& v);
nlohmann::json ServeValidationJson(const ServeValidation& v);

}  // namespace projector

#endif  // PROJECTOR_REPORT_SERVE_REPORT_H_
