// A benchmark's scenario from flag pairs, as the command line reads them; a scenario the flags
// do not make aborts the benchmark program with the reason (a benchmark has no caller to
// return an error to).
#ifndef PROJECTOR_BENCHMARKS_SCENARIO_FROM_FLAGS_H_
#define PROJECTOR_BENCHMARKS_SCENARIO_FROM_FLAGS_H_

#include <cstdlib>
#include <iostream>
#include <string_view>
#include <utility>
#include <vector>

#include "scenario/scenario_flags.h"

namespace projector {

inline Scenario BenchmarkScenario(std::string_view program,
                                  const std::vector<std::pair<const char*, const char*>>& given) {
  FlagValues flags;
  for (const auto& [name, value] : given) flags.Add(name, value);
  absl::StatusOr<Scenario> s = ScenarioFromFlags(flags);
  if (!s.ok()) {
    std::cerr << program << ": " << s.status() << "\n";
    std::abort();
  }
  return *std::move(s);
}

}  // namespace projector

#endif  // PROJECTOR_BENCHMARKS_SCENARIO_FROM_FLAGS_H_
