#include "serving/slo_search.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "core/wire.h"

namespace projector {
namespace {

// The probed rates span capacity/1024 .. 1.25 x capacity and stop within 1% of each other.
constexpr double kLowestRateFraction = 1.0 / 1024.0;
constexpr double kHighestRateFraction = 1.25;
constexpr double kRateTolerance = 1.01;

double Pick(const LatencyStats& s, int percentile) {
  return percentile == 50 ? s.p50 : percentile == 99 ? s.p99 : s.p90;
}

absl::StatusOr<ServeMetrics> RunAt(const ServeRunner& run, WorkloadSpec workload,
                                   ArrivalKind arrival, double qps) {
  workload.arrival = arrival;
  workload.qps = qps > 0 ? qps : 1.0;
  PROJECTOR_RETURN_IF_ERROR(ValidateWorkload(workload));
  const std::vector<Request> requests = GenerateRequests(workload);
  return run(requests);
}

// Whether a search error means the candidate cannot run (it does not fit, or its layout is
// invalid) rather than an internal failure.
bool CandidateError(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition ||
         s.code() == absl::StatusCode::kInvalidArgument;
}

// A candidate's search: its result and tokens per GPU, or why it could not run (it does not fit,
// its layout is invalid); other errors end the whole search.
template <typename Candidate>
absl::Status Record(absl::StatusOr<SloSearchResult> r, Candidate& c) {
  if (!r.ok()) {
    if (!CandidateError(r.status())) return r.status();
    c.fits = false;
    c.problem = std::string(r.status().message());
    return absl::OkStatus();
  }
  c.result = *std::move(r);
  if (c.result.found) c.output_tokens_per_s_per_gpu = c.result.at_max.output_tokens_per_s_per_gpu;
  return absl::OkStatus();
}

// Candidates meeting the target first, by output tokens/s per GPU at their highest rate.
template <typename Candidate>
void RankByTokensPerGpu(std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.result.found != b.result.found) return a.result.found;
                     return a.output_tokens_per_s_per_gpu > b.output_tokens_per_s_per_gpu;
                   });
}

// What a candidate's search found, as bytes: the status of its search (an internal failure ends
// the whole search), then its outcome (fits, problem, result, tokens per GPU).
template <typename Candidate>
std::string OutcomeBytes(const absl::Status& recorded, const Candidate& c) {
  WireWriter w;
  w.Put(static_cast<int32_t>(recorded.code())).PutString(std::string(recorded.message()));
  w.Put(c.fits).PutString(c.problem);
  const SloSearchResult& r = c.result;
  w.Put(r.found).Put(r.max_qps).Put(r.at_max).Put(r.capacity_qps);
  w.Put(static_cast<uint64_t>(r.probes.size()));
  for (const SloProbe& probe : r.probes) w.Put(probe);
  w.PutString(r.why_not).Put(c.output_tokens_per_s_per_gpu);
  return w.Take();
}

template <typename Candidate>
absl::Status ReadOutcome(std::string_view bytes, Candidate& c) {
  WireReader in(bytes);
  const auto code = static_cast<absl::StatusCode>(in.Get<int32_t>());
  std::string message = in.GetString();
  if (code != absl::StatusCode::kOk) return absl::Status(code, message);
  c.fits = in.Get<bool>();
  c.problem = in.GetString();
  SloSearchResult& r = c.result;
  r.found = in.Get<bool>();
  r.max_qps = in.Get<double>();
  r.at_max = in.Get<ServeMetrics>();
  r.capacity_qps = in.Get<double>();
  r.probes.resize(in.Get<uint64_t>());
  for (SloProbe& probe : r.probes) probe = in.Get<SloProbe>();
  r.why_not = in.GetString();
  c.output_tokens_per_s_per_gpu = in.Get<double>();
  return absl::OkStatus();
}

// Every candidate's highest rate under the target (`search(c)`), side by side on `lanes`; under
// MPI every rank but the coordinator serves and returns ServedStatus(). The first internal
// failure, in candidate order, ends the search.
template <typename Candidate, typename Search>
absl::Status SearchEach(std::vector<Candidate>& candidates, const Search& search,
                        const ProbeLanes& lanes,
                        const std::function<void(int64_t, int64_t)>& progress) {
  WorkTeam& team = lanes.team != nullptr ? *lanes.team : Solo();
  PROJECTOR_RETURN_IF_ERROR(
      CheckRanksFor(team, static_cast<int64_t>(candidates.size()), Candidate::kWhat));
  std::vector<absl::Status> status(candidates.size());
  ItemHooks items;
  items.evaluate = [&](int64_t i) {
    Candidate c = candidates[static_cast<size_t>(i)];
    const absl::Status recorded = Record(search(c), c);
    return OutcomeBytes(recorded, c);
  };
  items.collect = [&](int64_t i, std::string_view outcome) {
    status[static_cast<size_t>(i)] = ReadOutcome(outcome, candidates[static_cast<size_t>(i)]);
    return absl::OkStatus();
  };
  items.describe = [&](int64_t i) { return candidates[static_cast<size_t>(i)].Label(); };
  items.progress = progress;
  // A serving rank returns ServedStatus() here.
  PROJECTOR_RETURN_IF_ERROR(
      EvaluateItems(team, std::max(1, lanes.lanes), static_cast<int64_t>(candidates.size()), items));
  for (const absl::Status& s : status) PROJECTOR_RETURN_IF_ERROR(s);
  return absl::OkStatus();
}

// Powers of two from 1 to `limit`.
std::vector<int64_t> PowersOfTwo(int64_t limit) {
  std::vector<int64_t> out;
  for (int64_t v = 1; v <= limit; v *= 2) out.push_back(v);
  return out;
}

}  // namespace

std::string ServingLayout::Label() const {
  const std::string ranks = dp_attention > 1 ? absl::StrCat(" attention DP", dp_attention) : "";
  return absl::StrCat("TP", tp, " PP", pp, ranks, deepep ? " DeepEP" : "", " x", replicas,
                      " replicas");
}

std::string PoolSplit::Label() const {
  return absl::StrCat(prefill_replicas, " prefill + ", decode_replicas, " decode replicas");
}

absl::Status ValidateSloTarget(const SloTarget& slo) {
  if (!(slo.ttft_ms > 0 && std::isfinite(slo.ttft_ms))) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo-ttft: a time to first token in ms > 0, got ", slo.ttft_ms));
  }
  if (!(slo.tpot_ms > 0 && std::isfinite(slo.tpot_ms))) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo-tpot: a time per output token in ms > 0, got ", slo.tpot_ms));
  }
  if (slo.percentile != 50 && slo.percentile != 90 && slo.percentile != 99) {
    return absl::InvalidArgumentError(
        absl::StrCat("slo-percentile: accepted 50, 90 or 99, got ", slo.percentile));
  }
  return absl::OkStatus();
}

double SloTtft(const ServeMetrics& m, const SloTarget& slo) {
  return Pick(m.ttft_ms, slo.percentile);
}
double SloTpot(const ServeMetrics& m, const SloTarget& slo) {
  return Pick(m.tpot_ms, slo.percentile);
}

bool MeetsSlo(const ServeMetrics& m, const SloTarget& slo) {
  return SloTtft(m, slo) <= slo.ttft_ms && SloTpot(m, slo) <= slo.tpot_ms;
}

namespace {

// One simulated run of the search: all requests at once (the capacity) or Poisson arrivals at a
// rate.
struct RateRun {
  ArrivalKind arrival = ArrivalKind::kPoisson;
  double qps = 0;
};

// The runs of a rate search, several at once on the lanes of a team (or one after another on
// this thread): their metrics travel as bytes.
class RateRuns {
 public:
  RateRuns(const ServeRunner& run, const WorkloadSpec& workload, const ProbeLanes& lanes)
      : run_(run), workload_(workload), lanes_(lanes) {}

  // How many runs a round may hold: every lane of every rank busy.
  int64_t Width() const {
    if (lanes_.team == nullptr) return std::max(1, lanes_.lanes);
    return std::max<int64_t>(1, static_cast<int64_t>(lanes_.lanes) * lanes_.team->size());
  }

  std::string Perform(std::string_view request) const {
    WireReader in(request);
    const auto r = in.Get<RateRun>();
    const absl::StatusOr<ServeMetrics> m = RunAt(run_, workload_, r.arrival, r.qps);
    WireWriter out;
    out.Put(static_cast<int32_t>(m.status().code())).PutString(std::string(m.status().message()));
    if (m.ok()) out.Put(*m);
    return out.Take();
  }

  // The metrics of every run, in order.
  absl::StatusOr<std::vector<absl::StatusOr<ServeMetrics>>> Measure(
      const std::vector<RateRun>& runs) const {
    std::vector<absl::StatusOr<ServeMetrics>> out(runs.size(), absl::UnknownError("not run"));
    auto take = [&](size_t i, std::string_view bytes) {
      WireReader in(bytes);
      const auto code = static_cast<absl::StatusCode>(in.Get<int32_t>());
      std::string message = in.GetString();
      out[i] = code == absl::StatusCode::kOk ? absl::StatusOr<ServeMetrics>(in.Get<ServeMetrics>())
                                             : absl::Status(code, message);
    };
    auto request = [&](size_t i) {
      WireWriter w;
      w.Put(runs[i]);
      return w.Take();
    };
    if (Width() == 1 || runs.size() == 1) {
      for (size_t i = 0; i < runs.size(); ++i) take(i, Perform(request(i)));
      return out;
    }
    TaskHooks hooks;
    hooks.count = static_cast<int64_t>(runs.size());
    hooks.max_chunk = 1;
    hooks.request = [&](int64_t first, int64_t) { return request(static_cast<size_t>(first)); };
    hooks.perform = [this](int, std::string_view r) { return Perform(r); };
    hooks.collect = [&](int64_t first, int64_t, std::string_view reply) {
      take(static_cast<size_t>(first), reply);
      return absl::OkStatus();
    };
    hooks.describe = [&](int64_t first, int64_t) {
      return absl::StrFormat("the run at %.4g req/s", runs[static_cast<size_t>(first)].qps);
    };
    WorkTeam& team = lanes_.team != nullptr ? *lanes_.team : Solo();
    PROJECTOR_RETURN_IF_ERROR(team.Distribute(hooks, std::max(1, lanes_.lanes)));
    return out;
  }

 private:
  const ServeRunner& run_;
  const WorkloadSpec& workload_;
  const ProbeLanes& lanes_;
};

// The bisection's next `levels` probes from [low, high] as a tree in breadth-first order: node k's
// children are 2k+1 (the target missed: high = mid) and 2k+2 (met: low = mid); a node whose
// interval is already within the tolerance is not probed (its rate 0).
std::vector<double> BisectionTree(double low, double high, int levels) {
  std::vector<double> mids((size_t{1} << levels) - 1, 0.0);
  std::vector<std::pair<double, double>> bounds(mids.size());
  bounds[0] = {low, high};
  for (size_t k = 0; k < mids.size(); ++k) {
    const auto [lo, hi] = bounds[k];
    if (lo <= 0 || !(hi / lo > kRateTolerance)) continue;
    mids[k] = std::sqrt(lo * hi);
    if (2 * k + 2 < mids.size()) {
      bounds[2 * k + 1] = {lo, mids[k]};
      bounds[2 * k + 2] = {mids[k], hi};
    }
  }
  return mids;
}

}  // namespace

absl::StatusOr<SloSearchResult> MaxRateUnderSlo(const ServeRunner& run,
                                                const WorkloadSpec& workload,
                                                const SloTarget& slo, const ProbeLanes& lanes) {
  PROJECTOR_RETURN_IF_ERROR(ValidateSloTarget(slo));
  const RateRuns runs(run, workload, lanes);
  if (lanes.team != nullptr && !lanes.team->coordinator()) {
    return lanes.team->Serve([&runs](int, std::string_view r) { return runs.Perform(r); },
                             std::max(1, lanes.lanes));
  }
  std::optional<StudyScope> study;
  if (lanes.team != nullptr) study.emplace(*lanes.team);
  SloSearchResult out;
  PROJECTOR_ASSIGN_OR_RETURN(auto offline, runs.Measure({{ArrivalKind::kAllAtOnce, 0}}));
  PROJECTOR_ASSIGN_OR_RETURN(const ServeMetrics capacity, std::move(offline[0]));
  out.capacity_qps = capacity.requests_per_s;
  // Records a probe as the sequential bisection would, in the order it would make them.
  auto probe = [&](double qps, absl::StatusOr<ServeMetrics>& measured) -> absl::StatusOr<bool> {
    PROJECTOR_ASSIGN_OR_RETURN(const ServeMetrics m, std::move(measured));
    const bool meets = MeetsSlo(m, slo);
    out.probes.push_back(SloProbe{
        .qps = qps, .ttft_ms = SloTtft(m, slo), .tpot_ms = SloTpot(m, slo), .meets = meets});
    if (meets && qps >= out.max_qps) {
      out.found = true;
      out.max_qps = qps;
      out.at_max = m;
    }
    return meets;
  };
  double high = kHighestRateFraction * out.capacity_qps;
  double low = kLowestRateFraction * out.capacity_qps;
  // The lowest rate is needed unless the highest meets the target: run both at once when there
  // are lanes for both.
  std::vector<RateRun> ends = {{ArrivalKind::kPoisson, high}};
  if (runs.Width() > 1) ends.push_back({ArrivalKind::kPoisson, low});
  PROJECTOR_ASSIGN_OR_RETURN(auto end_metrics, runs.Measure(ends));
  PROJECTOR_ASSIGN_OR_RETURN(const bool high_meets, probe(high, end_metrics[0]));
  if (high_meets) return out;
  if (end_metrics.size() < 2) {
    PROJECTOR_ASSIGN_OR_RETURN(end_metrics, runs.Measure({{ArrivalKind::kPoisson, low}}));
    end_metrics.insert(end_metrics.begin(), absl::UnknownError("unused"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(const bool low_meets, probe(low, end_metrics[1]));
  if (!low_meets) {
    const SloProbe& p = out.probes.back();
    out.why_not = absl::StrFormat(
        "no arrival rate meets the target: even at %.3g req/s the p%d TTFT is %.1f ms (target "
        "%.1f) and the p%d TPOT %.1f ms (target %.1f); a lone request's prefill or decode step "
        "is already slower, so the deployment (GPU, TP, precision) must change",
        low, slo.percentile, p.ttft_ms, slo.ttft_ms, slo.percentile, p.tpot_ms, slo.tpot_ms);
    return out;
  }
  // Speculative bisection: with L lanes, the next floor(log2(L + 1)) levels of the bisection at
  // once, then the path the results take, probe by probe as the sequential bisection takes it;
  // the probes off the path are dropped, so the result is the sequential one whatever the lanes.
  const int levels = std::max(1, static_cast<int>(std::floor(std::log2(
                                    static_cast<double>(runs.Width()) + 1.0))));
  while (high / low > kRateTolerance) {
    const std::vector<double> mids = BisectionTree(low, high, levels);
    std::vector<RateRun> round;
    std::vector<size_t> node_of_run(mids.size(), 0);
    for (size_t k = 0; k < mids.size(); ++k) {
      if (mids[k] <= 0) continue;
      node_of_run[k] = round.size();
      round.push_back({ArrivalKind::kPoisson, mids[k]});
    }
    PROJECTOR_ASSIGN_OR_RETURN(auto measured, runs.Measure(round));
    for (size_t k = 0; k < mids.size() && high / low > kRateTolerance;) {
      const double mid = std::sqrt(low * high);
      PROJECTOR_ASSIGN_OR_RETURN(const bool meets, probe(mid, measured[node_of_run[k]]));
      (meets ? low : high) = mid;
      k = 2 * k + (meets ? 2 : 1);
    }
  }
  return out;
}

absl::StatusOr<SloSearchResult> MaxQpsUnderSlo(const ServeOptions& options,
                                               const WorkloadSpec& workload, const SloTarget& slo,
                                               const ProbeLanes& lanes) {
  const ServeRunner run =
      [&options](std::span<const Request> requests) -> absl::StatusOr<ServeMetrics> {
    PROJECTOR_ASSIGN_OR_RETURN(const ServeResult r, Serve(options, requests));
    return r.metrics;
  };
  return MaxRateUnderSlo(run, workload, slo, lanes);
}

absl::StatusOr<SloSearchResult> MaxQpsUnderSlo(const DisaggregatedOptions& pools,
                                               const WorkloadSpec& workload, const SloTarget& slo,
                                               const ProbeLanes& lanes) {
  const ServeRunner run =
      [&pools](std::span<const Request> requests) -> absl::StatusOr<ServeMetrics> {
    PROJECTOR_ASSIGN_OR_RETURN(const DisaggregatedResult r, ServeDisaggregated(pools, requests));
    return r.metrics;
  };
  return MaxRateUnderSlo(run, workload, slo, lanes);
}

absl::StatusOr<std::vector<ServingLayout>> SearchServingLayouts(
    const ServeOptions& base, const WorkloadSpec& workload, const SloTarget& slo,
    int64_t num_gpus, const std::function<void(int64_t, int64_t)>& progress,
    const ProbeLanes& lanes) {
  PROJECTOR_RETURN_IF_ERROR(ValidateSloTarget(slo));
  if (num_gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num-gpus: must be >= 1, got ", num_gpus));
  }
  const ModelSpec& model = base.deployment.model;
  std::vector<ServingLayout> layouts;
  for (int64_t tp : PowersOfTwo(std::min(num_gpus, base.deployment.hw.gpus_per_node))) {
    if (model.num_attention_heads % tp != 0) continue;
    for (int64_t pp : PowersOfTwo(std::min(num_gpus / tp, model.num_layers))) {
      if (num_gpus % (tp * pp) != 0) continue;
      ServingLayout layout;
      layout.tp = tp;
      layout.pp = pp;
      layout.replicas = num_gpus / (tp * pp);
      layouts.push_back(layout);
      if (pp != 1 || model.NumMoeLayers() == 0) continue;
      for (int64_t ranks : PowersOfTwo(tp)) {
        if (ranks < 2) continue;
        layout.dp_attention = ranks;
        layout.deepep = false;
        layouts.push_back(layout);
        if (!base.deployment.expert_parallel) continue;
        layout.deepep = true;
        layouts.push_back(layout);
      }
    }
  }
  PROJECTOR_RETURN_IF_ERROR(SearchEach(
      layouts,
      [&](const ServingLayout& layout) {
        ServeOptions options = base;
        options.deployment.tp = layout.tp;
        options.deployment.pp = layout.pp;
        options.deployment.dp_attention = layout.dp_attention;
        options.deployment.deepep = layout.deepep;
        options.replicas = layout.replicas;
        return MaxQpsUnderSlo(options, workload, slo);
      },
      lanes, progress));
  RankByTokensPerGpu(layouts);
  return layouts;
}

absl::StatusOr<std::vector<PoolSplit>> SearchPoolSplits(
    const DisaggregatedOptions& pools, const WorkloadSpec& workload, const SloTarget& slo,
    int64_t num_gpus, const std::function<void(int64_t, int64_t)>& progress,
    const ProbeLanes& lanes) {
  PROJECTOR_RETURN_IF_ERROR(ValidateSloTarget(slo));
  const int64_t prefill_gpus = pools.prefill.deployment.NumGpus();
  const int64_t decode_gpus = pools.decode.deployment.NumGpus();
  std::vector<PoolSplit> splits;
  for (int64_t p = 1; p * prefill_gpus < num_gpus; ++p) {
    const int64_t rest = num_gpus - p * prefill_gpus;
    if (rest % decode_gpus != 0) continue;
    PoolSplit split;
    split.prefill_replicas = p;
    split.decode_replicas = rest / decode_gpus;
    splits.push_back(std::move(split));
  }
  if (splits.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num-gpus: ", num_gpus, " GPUs do not split into prefill replicas of ", prefill_gpus,
        " GPUs and decode replicas of ", decode_gpus, " (at least one of each)"));
  }
  PROJECTOR_RETURN_IF_ERROR(SearchEach(
      splits,
      [&](const PoolSplit& split) {
        DisaggregatedOptions options = pools;
        options.prefill.replicas = split.prefill_replicas;
        options.decode.replicas = split.decode_replicas;
        return MaxQpsUnderSlo(options, workload, slo);
      },
      lanes, progress));
  RankByTokensPerGpu(splits);
  return splits;
}

}  // namespace projector
