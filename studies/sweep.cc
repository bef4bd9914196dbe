#include "studies/sweep.h"

#include <algorithm>
#include <map>
#include <memory>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/backend_registry.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "core/wire.h"
#include "core/work_team.h"
#include "network/network_file.h"
#include "projection/projection.h"
#include "studies/lod_high.h"

namespace projector {
namespace {

// Points evaluated ahead of the first one not yet written, at most (tool choice): lines in
// memory, a few MB.
constexpr int64_t kWindow = 1024;

// The candidate applied to the base: its layout, micro-batch and recompute.
Scenario PointScenario(const Scenario& base, const SearchCandidate& candidate,
                       const SweepNetwork& network) {
  Scenario s = base;
  ApplyCandidate(candidate, base.training.moe_imbalance, s);
  s.backends.network = network.spec;
  return s;
}

// How a point names its layout: the layout summary, the micro-batch and the recompute.
std::string CandidateName(const Scenario& s) {
  return absl::StrCat(LayoutSummary(s.parallel), " mb", s.training.micro_batch, " recompute ",
                      RecomputePhrase(s.training.recompute, s.training.recompute_modules));
}

nlohmann::json PointLine(int64_t index, const SweepNetwork& network, const Scenario& s) {
  return {{"index", index},
          {"gpu_arch", s.hw.gpu.name},
          {"network", network.label},
          {"layout", CandidateName(s)},
          {"parallel", ParallelConfigJson(s.parallel)},
          {"micro_batch", s.training.micro_batch},
          {"recompute", std::string(RecomputeName(s.training.recompute))},
          {"recompute_modules", s.training.recompute == Recompute::kSelective
                                    ? RecomputeModuleNames(s.training.recompute_modules)
                                    : std::vector<std::string>{}}};
}

// One point: projected (medium: stopped at the memory limit; high: replayed as events) and its
// figures added to its line; a projection error is recorded in it.
nlohmann::json EvaluatePoint(int64_t index, const SweepNetwork& network, const Scenario& s,
                             Bytes memory_limit, const BackendRefs& backends,
                             const SweepOptions& options) {
  nlohmann::json line = PointLine(index, network, s);
  line["lod"] = options.high_lod ? "high" : "medium";
  Projection p;
  std::optional<double> high_step_s;
  if (options.high_lod) {
    absl::StatusOr<HighLodResult> r = ProjectAtHighLod(s, backends);
    if (!r.ok()) {
      line["error"] = std::string(r.status().message());
      return line;
    }
    high_step_s = r->step_time.value();
    p = std::move(r->medium);
  } else {
    ProjectionOptions projection;
    if (options.stop_above_limit) projection.abandon_above_memory = memory_limit;
    absl::StatusOr<Projection> r = Project(s, backends, projection);
    if (!r.ok()) {
      line["error"] = std::string(r.status().message());
      return line;
    }
    p = *std::move(r);
  }
  const bool fits = p.peak_memory_per_gpu <= memory_limit && !p.over_memory_limit;
  line["peak_memory_gib"] = p.peak_memory_per_gpu.value() / Gibibytes(1).value();
  line["fits"] = fits;
  line["error"] = nullptr;
  if (p.over_memory_limit) {
    line["step_time_s"] = nullptr;
    line["tokens_per_s_per_gpu"] = nullptr;
    return line;
  }
  const double step_s = high_step_s.value_or(p.step_time.value());
  line["step_time_s"] = step_s;
  line["tokens_per_s_per_gpu"] =
      step_s > 0 ? p.tokens_per_s_per_gpu * p.step_time.value() / step_s : 0.0;
  line["medium_step_time_s"] = p.step_time.value();
  line["mfu"] = p.mfu * p.step_time.value() / std::max(step_s, 1e-30);
  return line;
}

// What the summary reads of a point: its index, whether it failed or is over the memory limit,
// and its tokens/s/GPU when it fits. Made where the point is evaluated, so the coordinator of many
// ranks reads these few bytes and writes the line's text without parsing it.
struct PointDigest {
  int64_t index = 0;
  bool failed = false;
  bool over_memory = false;
  bool ranks = false;  // fits, with a tokens/s/GPU
  double tokens_per_s_per_gpu = 0;
};

PointDigest DigestOf(const nlohmann::json& line) {
  PointDigest d;
  d.index = line["index"].get<int64_t>();
  d.failed = line.contains("error") && !line["error"].is_null();
  d.over_memory = line.contains("fits") && !line["fits"].get<bool>();
  d.ranks = line.value("fits", false) && line.contains("tokens_per_s_per_gpu") &&
            line["tokens_per_s_per_gpu"].is_number();
  if (d.ranks) d.tokens_per_s_per_gpu = line["tokens_per_s_per_gpu"].get<double>();
  return d;
}

// The summary's counts and its `count` best fitting points, highest tokens/s/GPU first (ties:
// lower index); a point's line (`line_json()`) is made only when it enters the best.
class SummaryTally {
 public:
  SummaryTally(SweepSummary& summary, int64_t count) : summary_(summary), count_(count) {}

  template <typename LineJson>
  void Add(const PointDigest& d, const LineJson& line_json) {
    if (d.failed) ++summary_.failed;
    if (d.over_memory) ++summary_.over_memory;
    if (!d.ranks) return;
    auto better = [](const PointDigest& a, const PointDigest& b) {
      return a.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu ||
             (a.tokens_per_s_per_gpu == b.tokens_per_s_per_gpu && a.index < b.index);
    };
    if (static_cast<int64_t>(kept_.size()) == count_ && !better(d, kept_.back())) return;
    const auto at = static_cast<size_t>(
        std::upper_bound(kept_.begin(), kept_.end(), d, better) - kept_.begin());
    kept_.insert(kept_.begin() + static_cast<std::ptrdiff_t>(at), d);
    summary_.best.insert(summary_.best.begin() + static_cast<std::ptrdiff_t>(at), line_json());
    if (static_cast<int64_t>(kept_.size()) > count_) {
      kept_.pop_back();
      summary_.best.pop_back();
    }
  }

 private:
  SweepSummary& summary_;
  const int64_t count_;
  std::vector<PointDigest> kept_;  // of summary_.best, in its order
};

// Where a point lies: its GPU, network and candidate.
struct PointPlace {
  size_t gpu = 0;
  size_t network = 0;
  size_t candidate = 0;
};

// The points' index ranges: GPU g's points start at first[g]; inside, network-major.
class PointIndex {
 public:
  PointIndex(const std::vector<SweepGpu>& gpus, size_t networks) {
    int64_t at = 0;
    for (const SweepGpu& g : gpus) {
      first_.push_back(at);
      per_network_.push_back(static_cast<int64_t>(g.candidates.size()));
      at += static_cast<int64_t>(networks * g.candidates.size());
    }
    count_ = at;
  }
  int64_t count() const { return count_; }
  PointPlace Locate(int64_t index) const {
    const auto g = static_cast<size_t>(
        std::upper_bound(first_.begin(), first_.end(), index) - first_.begin() - 1);
    const int64_t local = index - first_[g];
    return {.gpu = g,
            .network = static_cast<size_t>(local / per_network_[g]),
            .candidate = static_cast<size_t>(local % per_network_[g])};
  }

 private:
  std::vector<int64_t> first_;
  std::vector<int64_t> per_network_;
  int64_t count_ = 0;
};

// The lanes' side of a sweep: a request is a list of point indices, its reply each point's digest
// and line (a JSON document). Every backend set (a GPU on a network) is built once, before any
// point, and shared by the lanes of the rank.
class PointEvaluator {
 public:
  static absl::StatusOr<std::shared_ptr<const PointEvaluator>> Make(
      const std::vector<SweepGpu>& gpus, const SweepOptions& options) {
    auto e = std::shared_ptr<PointEvaluator>(new PointEvaluator(gpus, options));
    for (const SweepGpu& gpu : gpus) {
      if (gpu.candidates.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("sweep: no layout to evaluate on ", gpu.base.hw.gpu.name));
      }
      for (const SweepNetwork& network : options.networks) {
        const Scenario first = PointScenario(gpu.base, gpu.candidates.front(), network);
        PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(first.backends, first.hw));
        e->sets_.push_back(std::make_unique<BackendSet>(std::move(set)));
        e->refs_.push_back(RefsOf(*e->sets_.back()));
      }
    }
    return e;
  }

  std::string Perform(std::string_view request) const {
    WireReader in(request);
    WireWriter out;
    while (!in.AtEnd()) {
      const auto index = in.Get<int64_t>();
      const PointPlace at = index_.Locate(index);
      const SweepGpu& gpu = gpus_[at.gpu];
      const SweepNetwork& network = options_.networks[at.network];
      const Scenario s = PointScenario(gpu.base, gpu.candidates[at.candidate], network);
      const nlohmann::json line =
          EvaluatePoint(index, network, s, gpu.memory_limit,
                        refs_[at.gpu * options_.networks.size() + at.network], options_);
      out.Put(DigestOf(line)).PutString(line.dump());
    }
    return out.Take();
  }

 private:
  PointEvaluator(const std::vector<SweepGpu>& gpus, const SweepOptions& options)
      : gpus_(gpus), options_(options), index_(gpus, options.networks.size()) {}

  const std::vector<SweepGpu>& gpus_;
  const SweepOptions& options_;
  const PointIndex index_;
  std::vector<std::unique_ptr<BackendSet>> sets_;  // GPU-major, a network each
  std::vector<BackendRefs> refs_;
};

// Hands the points to `sink` in task order as chunks of them are collected in any order.
class InOrderLines {
 public:
  using Sink = std::function<absl::Status(const PointDigest&, std::string_view)>;
  explicit InOrderLines(Sink sink) : sink_(std::move(sink)) {}

  // Hands on every point collected, in task order but past the gaps (the job was stopped): a
  // resumed sweep reads its points in any order. Returns how many.
  int64_t Flush() {
    int64_t n = 0;
    for (const auto& [first, chunk] : waiting_) {
      for (const auto& [digest, text] : chunk) {
        if (!sink_(digest, text).ok()) return n;
        ++n;
      }
    }
    waiting_.clear();
    return n;
  }

  absl::Status Collect(int64_t first, std::string_view reply) {
    std::vector<std::pair<PointDigest, std::string>>& points = waiting_[first];
    for (WireReader in(reply); !in.AtEnd();) {
      const auto digest = in.Get<PointDigest>();
      points.emplace_back(digest, in.GetString());
    }
    while (!waiting_.empty() && waiting_.begin()->first == next_) {
      for (const auto& [digest, text] : waiting_.begin()->second) {
        PROJECTOR_RETURN_IF_ERROR(sink_(digest, text));
      }
      next_ += static_cast<int64_t>(waiting_.begin()->second.size());
      waiting_.erase(waiting_.begin());
    }
    return absl::OkStatus();
  }

 private:
  Sink sink_;
  std::map<int64_t, std::vector<std::pair<PointDigest, std::string>>> waiting_;  // by first task
  int64_t next_ = 0;
};

// The request for points pending[first, last).
std::string PointsRequest(const std::vector<int64_t>& pending, int64_t first, int64_t last) {
  WireWriter out;
  for (int64_t k = first; k < last; ++k) out.Put(pending[static_cast<size_t>(k)]);
  return out.Take();
}

}  // namespace

int64_t SweepPointCount(const std::vector<SweepGpu>& gpus, const SweepOptions& options) {
  return PointIndex(gpus, options.networks.size()).count();
}

nlohmann::json SweepHeader(const std::vector<SweepGpu>& gpus, const SweepOptions& options) {
  nlohmann::json networks = nlohmann::json::array();
  for (const SweepNetwork& n : options.networks) {
    networks.push_back(
        {{"label", n.label}, {"spec", n.spec ? NetworkSpecJson(*n.spec) : nlohmann::json()}});
  }
  nlohmann::json gpu_list = nlohmann::json::array();
  for (const SweepGpu& gpu : gpus) {
    nlohmann::json layouts = nlohmann::json::array();
    for (const SearchCandidate& c : gpu.candidates) {
      layouts.push_back(CandidateName(PointScenario(gpu.base, c, SweepNetwork{})));
    }
    gpu_list.push_back({{"gpu_arch", gpu.base.hw.gpu.name},
                        {"memory_limit_gib", gpu.memory_limit.value() / Gibibytes(1).value()},
                        {"candidates", std::move(layouts)}});
  }
  const Scenario& base = gpus.front().base;
  return {{"sweep",
           {{"version", 2},
            {"model", base.model.name},
            {"num_gpus", base.num_gpus},
            {"seq_len", base.training.seq_len},
            {"global_batch", base.training.global_batch},
            {"precision", std::string(DTypeName(base.training.precision))},
            {"lod", options.high_lod ? "high" : "medium"},
            {"stop_above_limit", options.stop_above_limit},
            {"networks", std::move(networks)},
            {"gpus", std::move(gpu_list)},
            {"points", SweepPointCount(gpus, options)}}}};
}

absl::StatusOr<SweepFile> ReadSweepFile(const std::string& path, const nlohmann::json& header) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("--resume: cannot read '", path, "' (a sweep's JSON lines file)"));
  }
  const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SweepFile file;
  const int64_t points = header["sweep"]["points"].get<int64_t>();
  size_t at = 0;
  for (int64_t line_number = 1; at < content.size(); ++line_number) {
    const size_t end = content.find('\n', at);
    if (end == std::string::npos) break;  // a last line cut short: dropped
    const std::string_view text(content.data() + at, end - at);
    at = end + 1;
    const nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (line_number == 1) {
      if (line != header) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--resume: '", path,
            "' was written by another sweep (its first line differs from this sweep's header: "
            "the job, level of detail, memory limit, networks or layouts changed); resume it with "
            "the flags that wrote it, or start a new file with --out"));
      }
      file.whole_bytes = at;
      continue;
    }
    const bool indexed =
        line.is_object() && line.contains("index") && line["index"].is_number_integer();
    const int64_t index = indexed ? line["index"].get<int64_t>() : -1;
    if (!indexed || index < 0 || index >= points || file.points.contains(index)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--resume: '", path, "' line ", line_number,
                       " is not a point of this sweep (each line after the header is one point, "
                       "\"index\" 0 to ",
                       points - 1, ", once)"));
    }
    file.points.emplace(index, line);
    file.whole_bytes = at;
  }
  if (file.whole_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--resume: '", path, "' holds no sweep header (it is empty or cut short)"));
  }
  return file;
}

absl::StatusOr<SweepSummary> RunSweep(
    const std::vector<SweepGpu>& gpus, const SweepOptions& options, const SweepPoints& done,
    const std::function<absl::Status(std::string_view)>& write, int64_t best_count) {
  WorkTeam& team = options.team != nullptr ? *options.team : Solo();
  SweepSummary summary;
  SummaryTally tally(summary, best_count);
  const PointIndex index_of(gpus, options.networks.size());
  summary.points = index_of.count();
  std::vector<int64_t> pending;
  for (int64_t index = 0; index < summary.points; ++index) {
    if (auto it = done.find(index); it != done.end()) {
      ++summary.resumed;
      tally.Add(DigestOf(it->second), [&] { return it->second; });
    } else {
      pending.push_back(index);
    }
  }
  if (pending.empty()) return summary;
  PROJECTOR_ASSIGN_OR_RETURN(std::shared_ptr<const PointEvaluator> evaluator,
                             PointEvaluator::Make(gpus, options));
  InOrderLines lines([&](const PointDigest& digest, std::string_view text) -> absl::Status {
    PROJECTOR_RETURN_IF_ERROR(write(text));
    ++summary.evaluated;
    tally.Add(digest, [&] { return nlohmann::json::parse(text); });
    return absl::OkStatus();
  });
  TaskHooks hooks;
  hooks.count = static_cast<int64_t>(pending.size());
  // Tool choice: a high-detail point takes milliseconds to seconds, so one a chunk; 16 medium
  // points (about 30 µs each, team_benchmark) keep the hand-out near 1 µs a point.
  hooks.max_chunk = options.high_lod ? 1 : 16;
  hooks.window = kWindow;
  hooks.request = [&](int64_t first, int64_t last) { return PointsRequest(pending, first, last); };
  hooks.perform = [&](int, std::string_view request) { return evaluator->Perform(request); };
  hooks.collect = [&](int64_t first, int64_t, std::string_view reply) {
    return lines.Collect(first, reply);
  };
  hooks.on_stop = [&] {
    const int64_t past_gap = lines.Flush();
    return absl::StrCat(
        "the sweep file holds the ", summary.resumed + summary.evaluated,
        " points evaluated (", past_gap,
        " of them written past the first missing one); the same command with --resume FILE "
        "evaluates the rest");
  };
  hooks.describe = [&](int64_t first, int64_t last) {
    std::vector<std::string> names;
    for (int64_t k = first; k < last; ++k) {
      const int64_t index = pending[static_cast<size_t>(k)];
      const PointPlace at = index_of.Locate(index);
      const SweepGpu& gpu = gpus[at.gpu];
      names.push_back(absl::StrCat(
          "point ", index, " (",
          CandidateName(PointScenario(gpu.base, gpu.candidates[at.candidate], SweepNetwork{})),
          " on ", gpu.base.hw.gpu.name, ", ", options.networks[at.network].label, ")"));
    }
    return absl::StrJoin(names, ", ");
  };
  PROJECTOR_RETURN_IF_ERROR(team.Distribute(hooks, team.Lanes(options.threads)));
  return summary;
}

absl::Status ServeSweep(const std::vector<SweepGpu>& gpus, const SweepOptions& options) {
  WorkTeam& team = options.team != nullptr ? *options.team : Solo();
  PROJECTOR_ASSIGN_OR_RETURN(std::shared_ptr<const PointEvaluator> evaluator,
                             PointEvaluator::Make(gpus, options));
  return team.Serve(
      [evaluator](int, std::string_view request) { return evaluator->Perform(request); },
      team.Lanes(options.threads));
}

}  // namespace projector
