#include "studies/compare.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "core/status_macros.h"

namespace projector {

std::vector<TermChange> MainCauses(const Projection& a, const Projection& b) {
  const Seconds step_diff = b.step_time - a.step_time;
  const double floor = 1e-3 * std::max(a.step_time.value(), b.step_time.value());
  std::vector<TermChange> out;
  for (const BreakdownTerm& t : kBreakdownTerms) {
    const Seconds x = a.breakdown.*t.member;
    const Seconds y = b.breakdown.*t.member;
    if (std::fabs((y - x).value()) < floor) continue;
    out.push_back(TermChange{.term = std::string(t.short_name),
                             .a = x,
                             .b = y,
                             .share = step_diff.value() != 0 ? (y - x) / step_diff : 0.0});
  }
  std::stable_sort(out.begin(), out.end(), [](const TermChange& p, const TermChange& q) {
    return std::fabs((p.b - p.a).value()) > std::fabs((q.b - q.a).value());
  });
  return out;
}

absl::StatusOr<Comparison> CompareScenarios(std::vector<CompareSide> sides) {
  if (sides.size() < 2) {
    return absl::InvalidArgumentError("compare needs at least two sides");
  }
  Comparison c;
  for (CompareSide& side : sides) {
    absl::StatusOr<BackendSet> backends = MakeBackendSet(side.scenario.backends, side.scenario.hw);
    if (!backends.ok()) {
      return absl::Status(backends.status().code(),
                          absl::StrCat(side.name, ": ", backends.status().message()));
    }
    absl::StatusOr<Projection> p = Project(side.scenario, RefsOf(*backends));
    if (!p.ok()) {
      return absl::Status(p.status().code(), absl::StrCat(side.name, ": ", p.status().message()));
    }
    side.projection = *std::move(p);
    c.sides.push_back(std::move(side));
  }
  c.causes = MainCauses(c.sides[0].projection, c.sides[1].projection);
  return c;
}

}  // namespace projector
