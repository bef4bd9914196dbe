// Renderings of a layout search (studies/search.h): the ranked table as text, and JSON.
#ifndef PROJECTOR_REPORT_SEARCH_REPORT_H_
#define PROJECTOR_REPORT_SEARCH_REPORT_H_

#include <cstdint>
#include <string>

#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "studies/search.h"

namespace projector {

// JSON: scenario summary, candidates_enumerated, candidates_evaluated, elapsed_s, threads,
// objective, memory_limit_bytes (null for none), removed {constraint: count}, best_command and
// all ranked layouts.
nlohmann::json SearchResultToJson(const Scenario& base, const SearchResult& result);
// Text: the counts, removals per constraint and the top `top_k` layouts, then the best layout
// as a `project` command.
// "\rsearch: projecting layouts 1,234 / 5,678 (22%), 3.1 s, about 11 s left in this pass": the
// progress line a long search redraws.
std::string SearchProgressLine(const SearchProgress& progress);
std::string FormatSearchText(const Scenario& base, const SearchResult& result, int64_t top_k);

}  // namespace projector

#endif  // PROJECTOR_REPORT_SEARCH_REPORT_H_
