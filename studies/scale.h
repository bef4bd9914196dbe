// Scaling study (`project scale`): the same job on a list of GPU counts, each at its best layout
// under the memory limit (the layout search, or the user's fixed dimensions), with the scaling
// efficiency against the smallest count, the breakdown point where it falls under 70%, Amdahl's
// serial fraction fitted to the speedups and the maximum speedup it implies, and the step term
// whose share grows the most. Strong scaling keeps the global batch; weak scaling grows it with
// the GPU count.
#ifndef PROJECTOR_STUDIES_SCALE_H_
#define PROJECTOR_STUDIES_SCALE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/work_team.h"
#include "scenario/scenario.h"
#include "studies/search.h"

namespace projector {

enum class ScalingMode { kStrong, kWeak };
std::string_view ScalingModeName(ScalingMode mode);

// The efficiency under which a scale counts as broken down (the seed's 70%).
inline constexpr double kBreakdownEfficiency = 0.70;

struct ScalePoint {
  int64_t num_gpus = 0;
  int64_t global_batch = 0;
  bool found = false;     // a layout fits the memory limit
  std::string why_not;    // when none does
  RankedLayout best;      // the best layout (when found)
  double efficiency = 0;  // TGS / TGS at the smallest count with a layout
  double speedup = 0;     // throughput / throughput at that count (in units of it)
};

struct ScaleResult {
  ScalingMode mode = ScalingMode::kStrong;
  std::vector<ScalePoint> points;
  // The first GPU count whose efficiency is under kBreakdownEfficiency; nullopt when none is.
  std::optional<int64_t> breakdown_point;
  // Amdahl's law S(p) = 1 / (f + (1 − f)/p) fitted to the speedups (p = N / N0): its efficiency
  // E = S/p obeys 1/E − 1 = f·(p − 1), fitted by least squares through the origin (the large
  // scales, where the serial part shows, weigh most); max speedup 1/f (infinite when f = 0).
  double serial_fraction = 0;
  double max_speedup = 0;
  // The step term (kBreakdownTerms) whose share of the step grows the most from the smallest to
  // the largest count with a layout, and its shares there.
  std::string growing_term;
  double growing_from = 0;
  double growing_to = 0;
  double elapsed_s = 0;
};

// Efficiency of each throughput (tokens/s/GPU) against the first: tgs[i] / tgs[0].
std::vector<double> ScalingEfficiencies(std::span<const double> tgs);
// The index of the first efficiency under `threshold`; nullopt when none is.
std::optional<size_t> BreakdownIndex(std::span<const double> efficiency, double threshold);
// Amdahl's serial fraction from relative scales p (>= 1) and speedups S: least squares through
// the origin of y = p/S − 1 on x = p − 1; clamped to [0, 1]; 0 with no p > 1.
double FitAmdahlSerialFraction(std::span<const double> p, std::span<const double> speedup);

// The search options for one GPU count (the flags' space over that count's scenario).
using ScaleSearchOptions = std::function<absl::StatusOr<SearchOptions>(const Scenario&)>;

// Runs the study over `gpu_counts` (ascending, distinct, each >= 1; kInvalidArgument
// otherwise). Weak scaling multiplies the base's global batch by N / N0. A count where no
// layout fits is kept with the reason. `progress(done, total)` is called after each count. The
// counts' searches run side by side on the lanes of `team` (null: this process alone; lanes:
// the search options' threads), one lane each; under MPI every rank calls RunScaling with the
// same arguments, and every rank but the coordinator serves it and returns ServedStatus().
absl::StatusOr<ScaleResult> RunScaling(const Scenario& base, std::span<const int64_t> gpu_counts,
                                       ScalingMode mode, const ScaleSearchOptions& options,
                                       const std::function<void(int64_t, int64_t)>& progress = {},
                                       WorkTeam* team = nullptr);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SCALE_H_
