// Order statistics shared by the studies and reports: the median and percentiles of samples,
// interpolated between closest ranks as numpy's default (linear) method does.
#ifndef PROJECTOR_CORE_STATISTICS_H_
#define PROJECTOR_CORE_STATISTICS_H_

#include <span>
#include <vector>

namespace projector {

// The q-quantile (q in [0, 1]) of ascending `sorted` values: rank q·(n − 1), linear between the
// two closest ranks; 0 when empty.
double PercentileOfSorted(std::span<const double> sorted, double q);
// The median of `values` (sorted here); 0 when empty.
double Median(std::vector<double> values);

}  // namespace projector

#endif  // PROJECTOR_CORE_STATISTICS_H_
