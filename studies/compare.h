// Comparison of projections (`project compare`): two scenarios (or one scenario and the flags
// that change it, or the same job on several GPUs) projected side by side, term by term, with
// what sets the first two apart ranked: the step terms whose difference is largest, each with its
// share of the step-time difference.
#ifndef PROJECTOR_STUDIES_COMPARE_H_
#define PROJECTOR_STUDIES_COMPARE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "projection/projection.h"
#include "scenario/scenario.h"

namespace projector {

struct CompareSide {
  std::string name;  // the file, or "gpu h100-sxm"
  Scenario scenario;
  Projection projection;
};

// One step term of two projections.
struct TermChange {
  std::string term;  // kBreakdownTerms' short name
  Seconds a;
  Seconds b;
  double share = 0;  // (b − a) over the step-time difference (signed; 0 when the steps tie)
};

struct Comparison {
  std::vector<CompareSide> sides;
  // Between the first two sides: every term that differs, largest |b − a| first.
  std::vector<TermChange> causes;
};

// Projects every scenario (each on backends built for it). Errors name the side. At least two.
absl::StatusOr<Comparison> CompareScenarios(std::vector<CompareSide> sides);

// The terms of b − a, largest difference first, those differing by at least 0.1% of the larger
// step.
std::vector<TermChange> MainCauses(const Projection& a, const Projection& b);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_COMPARE_H_
