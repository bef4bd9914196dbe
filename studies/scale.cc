#include "studies/scale.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/wire.h"

namespace projector {
namespace {

double D(int64_t v) { return static_cast<double>(v); }

absl::Status CheckCounts(std::span<const int64_t> counts) {
  if (counts.empty()) return absl::InvalidArgumentError("num-gpus: give at least one GPU count");
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("num-gpus: every GPU count must be >= 1, got ", counts[i]));
    }
    if (i > 0 && counts[i] <= counts[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("num-gpus: GPU counts must rise, got ", counts[i - 1], " then ", counts[i]));
    }
  }
  return absl::OkStatus();
}

// The shares of the step each breakdown term takes.
std::array<double, kNumBreakdownTerms> Shares(const LayoutMetrics& m) {
  std::array<double, kNumBreakdownTerms> out{};
  if (m.step_time.value() <= 0) return out;
  for (size_t t = 0; t < kNumBreakdownTerms; ++t) out[t] = m.breakdown[t] / m.step_time;
  return out;
}

// A count's search as the coordinator needs it: its error, or its best layout (none when it
// ranked nothing), as bytes.
std::string CountReply(const absl::StatusOr<SearchResult>& found) {
  WireWriter w;
  w.Put(static_cast<int32_t>(found.status().code())).PutString(std::string(found.status().message()));
  if (!found.ok()) return w.Take();
  w.Put(static_cast<uint8_t>(!found->ranked.empty()));
  if (!found->ranked.empty()) w.Put(found->ranked.front());
  return w.Take();
}

// The search result CountReply sent: its error, or its best layout alone.
absl::StatusOr<SearchResult> FromCountReply(std::string_view reply) {
  WireReader in(reply);
  const auto code = static_cast<absl::StatusCode>(in.Get<int32_t>());
  std::string message = in.GetString();
  if (code != absl::StatusCode::kOk) return absl::Status(code, message);
  SearchResult result;
  if (in.Get<uint8_t>() != 0) result.ranked.push_back(in.Get<RankedLayout>());
  return result;
}

}  // namespace

std::string_view ScalingModeName(ScalingMode mode) {
  return mode == ScalingMode::kStrong ? "strong" : "weak";
}

std::vector<double> ScalingEfficiencies(std::span<const double> tgs) {
  std::vector<double> out;
  out.reserve(tgs.size());
  for (double v : tgs) out.push_back(tgs.empty() || tgs[0] <= 0 ? 0.0 : v / tgs[0]);
  return out;
}

std::optional<size_t> BreakdownIndex(std::span<const double> efficiency, double threshold) {
  for (size_t i = 0; i < efficiency.size(); ++i) {
    if (efficiency[i] < threshold) return i;
  }
  return std::nullopt;
}

double FitAmdahlSerialFraction(std::span<const double> p, std::span<const double> speedup) {
  double xy = 0, xx = 0;
  for (size_t i = 0; i < p.size() && i < speedup.size(); ++i) {
    if (p[i] <= 1.0 || speedup[i] <= 0) continue;
    const double x = p[i] - 1.0;
    const double y = p[i] / speedup[i] - 1.0;  // 1/E − 1
    xy += x * y;
    xx += x * x;
  }
  if (xx <= 0) return 0.0;
  return std::clamp(xy / xx, 0.0, 1.0);
}

absl::StatusOr<ScaleResult> RunScaling(const Scenario& base, std::span<const int64_t> gpu_counts,
                                       ScalingMode mode, const ScaleSearchOptions& options,
                                       const std::function<void(int64_t, int64_t)>& progress,
                                       WorkTeam* workers) {
  PROJECTOR_RETURN_IF_ERROR(CheckCounts(gpu_counts));
  const auto start = std::chrono::steady_clock::now();
  ScaleResult result;
  result.mode = mode;
  const int64_t n0 = gpu_counts.front();
  // The scenario and search options of every count, checked before any search runs.
  std::vector<Scenario> scenarios;
  std::vector<SearchOptions> searches;
  int lanes = 0;
  for (const int64_t n : gpu_counts) {
    Scenario s = base;
    s.num_gpus = n;
    s.parallel.dp = n;
    if (mode == ScalingMode::kWeak) {
      if (base.training.global_batch * n % n0 != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "num-gpus: weak scaling grows the global batch ", base.training.global_batch, " by N/",
            n0, ", which is not whole at N = ", n));
      }
      s.training.global_batch = base.training.global_batch * n / n0;
    }
    PROJECTOR_ASSIGN_OR_RETURN(SearchOptions opts, options(s));
    // The counts run side by side, one lane each (a search's own threads gain little).
    lanes = opts.threads;
    opts.threads = 1;
    opts.progress = nullptr;
    opts.team = nullptr;
    scenarios.push_back(std::move(s));
    searches.push_back(std::move(opts));
  }
  WorkTeam& team = workers != nullptr ? *workers : Solo();
  std::vector<absl::StatusOr<SearchResult>> found(gpu_counts.size(),
                                                  absl::UnknownError("not evaluated"));
  ItemHooks items;
  items.evaluate = [&](int64_t i) {
    return CountReply(SearchLayouts(scenarios[static_cast<size_t>(i)], searches[static_cast<size_t>(i)]));
  };
  items.collect = [&](int64_t i, std::string_view outcome) {
    found[static_cast<size_t>(i)] = FromCountReply(outcome);
    return absl::OkStatus();
  };
  items.describe = [&](int64_t i) {
    return absl::StrCat("the layout search at ", gpu_counts[static_cast<size_t>(i)], " GPUs");
  };
  items.progress = progress;
  // A serving rank returns ServedStatus() here.
  PROJECTOR_RETURN_IF_ERROR(
      EvaluateItems(team, team.Lanes(lanes), static_cast<int64_t>(gpu_counts.size()), items));
  for (size_t i = 0; i < gpu_counts.size(); ++i) {
    // A count where no layout is valid or fits (the search says why) is a point of the study,
    // not its end: the curve starts at the first count that has one.
    const bool none_here =
        !found[i].ok() && found[i].status().code() == absl::StatusCode::kFailedPrecondition;
    if (!found[i].ok() && !none_here) return found[i].status();
    ScalePoint point;
    point.num_gpus = gpu_counts[i];
    point.global_batch = scenarios[i].training.global_batch;
    if (none_here) {
      point.why_not = std::string(found[i].status().message());
    } else if (!found[i]->ranked.empty() && found[i]->ranked.front().fits_memory) {
      point.found = true;
      point.best = found[i]->ranked.front();
    } else {
      point.why_not = found[i]->ranked.empty()
                          ? "no valid layout (the global batch or the model does not split)"
                          : "no layout fits the memory limit";
    }
    result.points.push_back(std::move(point));
  }
  // Efficiency and speedup against the first count with a layout.
  const ScalePoint* first = nullptr;
  const ScalePoint* last = nullptr;
  std::vector<double> p, speedup;
  for (ScalePoint& point : result.points) {
    if (!point.found) continue;
    if (first == nullptr) first = &point;
    last = &point;
    const double tgs0 = first->best.metrics.tokens_per_s_per_gpu;
    point.efficiency = tgs0 > 0 ? point.best.metrics.tokens_per_s_per_gpu / tgs0 : 0.0;
    const double scale = D(point.num_gpus) / D(first->num_gpus);
    point.speedup = point.efficiency * scale;
    p.push_back(scale);
    speedup.push_back(point.speedup);
    if (!result.breakdown_point && point.efficiency < kBreakdownEfficiency) {
      result.breakdown_point = point.num_gpus;
    }
  }
  result.serial_fraction = FitAmdahlSerialFraction(p, speedup);
  result.max_speedup = result.serial_fraction > 0 ? 1.0 / result.serial_fraction
                                                  : std::numeric_limits<double>::infinity();
  if (first != nullptr && last != first) {
    const std::array<double, kNumBreakdownTerms> from = Shares(first->best.metrics);
    const std::array<double, kNumBreakdownTerms> to = Shares(last->best.metrics);
    double grown = 0;
    for (size_t t = 0; t < kNumBreakdownTerms; ++t) {
      if (to[t] - from[t] > grown) {
        grown = to[t] - from[t];
        result.growing_term = std::string(BreakdownTermName(static_cast<int>(t)));
        result.growing_from = from[t];
        result.growing_to = to[t];
      }
    }
  }
  result.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace projector
