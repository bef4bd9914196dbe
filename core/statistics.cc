#include "core/statistics.h"

#include <algorithm>
#include <cmath>

namespace projector {

double PercentileOfSorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const size_t low = static_cast<size_t>(std::floor(rank));
  const size_t high = std::min(low + 1, sorted.size() - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - static_cast<double>(low));
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, 0.5);
}

}  // namespace projector
