// Serving under a latency target: the highest Poisson arrival rate whose TTFT and TPOT
// percentiles both meet it (bisection over the rate, every probe a whole simulation of the same
// seeded workload), and the search over layouts (TP x PP x replicas of a GPU budget) for the most
// output tokens per second per GPU at that rate.
#ifndef PROJECTOR_SERVING_SLO_SEARCH_H_
#define PROJECTOR_SERVING_SLO_SEARCH_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/work_team.h"
#include "serving/disaggregated.h"
#include "serving/serve.h"
#include "serving/workload.h"

namespace projector {

struct SloTarget {
  double ttft_ms = 0;
  double tpot_ms = 0;
  int percentile = 90;  // 50, 90 or 99
};

// kInvalidArgument naming the flag for a target <= 0 or a percentile other than 50, 90, 99.
absl::Status ValidateSloTarget(const SloTarget& slo);

// The chosen percentile of TTFT and TPOT and whether both meet the target.
double SloTtft(const ServeMetrics& m, const SloTarget& slo);
double SloTpot(const ServeMetrics& m, const SloTarget& slo);
bool MeetsSlo(const ServeMetrics& m, const SloTarget& slo);

struct SloProbe {
  double qps = 0;
  double ttft_ms = 0;  // at the target's percentile
  double tpot_ms = 0;
  bool meets = false;
};

struct SloSearchResult {
  bool found = false;
  double max_qps = 0;       // the highest rate probed that meets the target
  ServeMetrics at_max;      // the run at that rate
  double capacity_qps = 0;  // requests/s with every request at once (the rate's upper bound)
  std::vector<SloProbe> probes;
  std::string why_not;  // when nothing meets: which percentile misses at the lowest rate
};

// Serves a set of requests and measures them (an aggregated or a disaggregated deployment).
using ServeRunner = std::function<absl::StatusOr<ServeMetrics>(std::span<const Request>)>;

// Where a rate search's simulations run: one after another on this thread (the default), or
// several at once on `lanes` lanes of this process (team null) or of every rank of `team`.
struct ProbeLanes {
  WorkTeam* team = nullptr;
  int lanes = 1;
};

// Rates from capacity/1024 to 1.25 x capacity, bisected (geometric) to 1% of the rate. `workload`
// gives the lengths, request count and seed; its arrival process is replaced by Poisson arrivals
// at each probed rate. Errors of the runner pass through. With several lanes the bisection runs
// speculatively (the next levels of its tree at once, the path the results take kept): the same
// probes and result as one lane. Under MPI every rank calls it with the same arguments, and
// every rank but the coordinator serves and returns ServedStatus().
absl::StatusOr<SloSearchResult> MaxRateUnderSlo(const ServeRunner& run,
                                                const WorkloadSpec& workload, const SloTarget& slo,
                                                const ProbeLanes& lanes = {});
// The same for an aggregated deployment (Serve) and for prefill and decode pools
// (ServeDisaggregated).
absl::StatusOr<SloSearchResult> MaxQpsUnderSlo(const ServeOptions& options,
                                               const WorkloadSpec& workload, const SloTarget& slo,
                                               const ProbeLanes& lanes = {});
absl::StatusOr<SloSearchResult> MaxQpsUnderSlo(const DisaggregatedOptions& pools,
                                               const WorkloadSpec& workload, const SloTarget& slo,
                                               const ProbeLanes& lanes = {});

struct ServingLayout {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t replicas = 1;
  int64_t dp_attention = 1;  // attention ranks per replica (Deployment::dp_attention)
  bool deepep = false;       // the MoE by DeepEP's kernels in auto mode (Deployment::deepep)
  bool fits = true;
  std::string problem;  // why it was not evaluated (does not fit, TP does not divide ...)
  SloSearchResult result;
  double output_tokens_per_s_per_gpu = 0;  // at the highest rate meeting the target
  // "TP4 PP1 x2 replicas", "TP8 PP1 attention DP8 DeepEP x1 replicas"
  std::string Label() const;
  static constexpr std::string_view kWhat = "serving layouts";
};

// Every TP (powers of two within a node that divide the heads) x PP (powers of two up to the
// layers) whose product divides `num_gpus`, the rest as replicas, and for a MoE model every
// data-parallel attention of 2 or more ranks (powers of two dividing TP) at PP 1, with whole
// experts (expert_parallel) both gathering and by DeepEP's kernels (auto mode); each with its
// highest rate under the target. Sorted best first: layouts meeting the target by output tokens/s per GPU,
// then the others. The layouts are searched side by side on `lanes` (one at a time by default),
// each bisection on one lane; under MPI every rank calls it with the same arguments, and every
// rank but the coordinator serves and returns ServedStatus(). The same for SearchPoolSplits.
// `progress(done, total)` after each layout.
absl::StatusOr<std::vector<ServingLayout>> SearchServingLayouts(
    const ServeOptions& base, const WorkloadSpec& workload, const SloTarget& slo,
    int64_t num_gpus, const std::function<void(int64_t, int64_t)>& progress = {},
    const ProbeLanes& lanes = {});

// One split of a GPU budget between a prefill and a decode pool (their TP and GPUs as given).
struct PoolSplit {
  int64_t prefill_replicas = 0;
  int64_t decode_replicas = 0;
  bool fits = true;
  std::string problem;
  SloSearchResult result;
  double output_tokens_per_s_per_gpu = 0;
  std::string Label() const;  // "2 prefill + 6 decode replicas"
  static constexpr std::string_view kWhat = "prefill/decode splits";
};

// Every split of `num_gpus` into prefill replicas of pools.prefill's TP and decode replicas of
// pools.decode's TP (at least one each, no GPU left over), each at its highest rate under the
// target, ranked as SearchServingLayouts ranks. kInvalidArgument when no split uses the budget
// exactly.
absl::StatusOr<std::vector<PoolSplit>> SearchPoolSplits(
    const DisaggregatedOptions& pools, const WorkloadSpec& workload, const SloTarget& slo,
    int64_t num_gpus, const std::function<void(int64_t, int64_t)>& progress = {},
    const ProbeLanes& lanes = {});

}  // namespace projector

#endif  // PROJECTOR_SERVING_SLO_SEARCH_H_
