// Calibration cases "measured" at chosen throughputs: a copy of a cases file whose i-th line
// takes the i-th value, for tests that need measurements a projection is known to match.
#ifndef PROJECTOR_TESTS_TESTING_SYNTHETIC_CASES_H_
#define PROJECTOR_TESTS_TESTING_SYNTHETIC_CASES_H_

#include <cstddef>
#include <fstream>
#include <functional>
#include <string>

#include "nlohmann/json.hpp"

namespace projector::testing {

// Writes `from` to `to` with each line's measured.tokens_per_s_per_gpu replaced by
// measured(line index, from 0).
inline void WriteCasesMeasuredAt(const std::string& from, const std::string& to,
                                 const std::function<double(size_t)>& measured) {
  std::ifstream in(from);
  std::ofstream out(to);
  std::string line;
  size_t i = 0;
  while (std::getline(in, line)) {
    nlohmann::json c = nlohmann::json::parse(line);
    c["measured"]["tokens_per_s_per_gpu"] = measured(i++);
    out << c.dump() << "\n";
  }
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_SYNTHETIC_CASES_H_
