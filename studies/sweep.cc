#include "studies/sweep.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "core/dtype.h"
#include "core/status_macros.h"
#include "network/network_file.h"
#include "projection/projection.h"
#include "studies/lod_high.h"

namespace projector {
namespace {

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
                      std::string(RecomputeName(s.training.recompute)));
}

nlohmann::json PointLine(int64_t index, const SweepNetwork& network, const Scenario& s) {
  return {{"index", index},
          {"network", network.label},
          {"layout", CandidateName(s)},
          {"parallel", ParallelConfigJson(s.parallel)},
          {"micro_batch", s.training.micro_batch},
          {"recompute", std::string(RecomputeName(s.training.recompute))}};
}

// One point: projected (medium: stopped at the memory limit; high: replayed as events) and its
// figures added to its line; a projection error is recorded in it.
nlohmann::json EvaluatePoint(int64_t index, const SweepNetwork& network, const Scenario& s,
                             const BackendRefs& backends, const SweepOptions& options) {
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
    if (options.stop_above_limit) projection.abandon_above_memory = options.memory_limit;
    absl::StatusOr<Projection> r = Project(s, backends, projection);
    if (!r.ok()) {
      line["error"] = std::string(r.status().message());
      return line;
    }
    p = *std::move(r);
  }
  const bool fits = p.peak_memory_per_gpu <= options.memory_limit && !p.over_memory_limit;
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

// Keeps the `count` best fitting points, highest tokens/s/GPU first (ties: lower index).
void KeepBest(const nlohmann::json& line, int64_t count, std::vector<nlohmann::json>& best) {
  if (!line.value("fits", false) || !line.contains("tokens_per_s_per_gpu") ||
      !line["tokens_per_s_per_gpu"].is_number()) {
    return;
  }
  best.push_back(line);
  std::stable_sort(best.begin(), best.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
    const double ta = a["tokens_per_s_per_gpu"].get<double>();
    const double tb = b["tokens_per_s_per_gpu"].get<double>();
    return ta > tb || (ta == tb && a["index"].get<int64_t>() < b["index"].get<int64_t>());
  });
  if (static_cast<int64_t>(best.size()) > count) best.resize(static_cast<size_t>(count));
}

void Count(const nlohmann::json& line, SweepSummary& summary) {
  if (line.contains("error") && !line["error"].is_null()) ++summary.failed;
  if (line.contains("fits") && !line["fits"].get<bool>()) ++summary.over_memory;
}

// Evaluates `pending` on `threads` workers and hands the lines to `sink` in that order, as soon
// as each line and those before it are ready; at most kWindow lines wait to be handed on, so the
// workers wait for a slow sink rather than hold a whole sweep in memory. Stops at the first
// error of `sink`.
absl::Status EvaluateInOrder(const std::vector<int64_t>& pending, int threads,
                             const std::function<nlohmann::json(int64_t)>& evaluate,
                             const std::function<absl::Status(const nlohmann::json&)>& sink) {
  if (threads <= 1 || pending.size() < 2) {
    for (const int64_t index : pending) PROJECTOR_RETURN_IF_ERROR(sink(evaluate(index)));
    return absl::OkStatus();
  }
  constexpr size_t kWindow = 1024;  // tool choice: lines in flight, a few MB
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::optional<nlohmann::json>> ready;  // pending[handed ...], in order
  size_t next = 0, handed = 0;
  bool stop = false;
  auto worker = [&] {
    for (;;) {
      size_t k = 0;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stop || next >= pending.size() || next < handed + kWindow; });
        if (stop || next >= pending.size()) return;
        k = next++;
      }
      nlohmann::json line = evaluate(pending[k]);
      {
        std::lock_guard<std::mutex> lock(mu);
        const size_t slot = k - handed;
        if (ready.size() <= slot) ready.resize(slot + 1);
        ready[slot] = std::move(line);
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  const size_t workers = std::min(static_cast<size_t>(threads), pending.size());
  for (size_t t = 0; t < workers; ++t) pool.emplace_back(worker);
  absl::Status status;
  while (handed < pending.size()) {
    nlohmann::json line;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !ready.empty() && ready.front().has_value(); });
      line = std::move(*ready.front());
      ready.pop_front();
      ++handed;
    }
    cv.notify_all();
    status = sink(line);
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      break;
    }
  }
  cv.notify_all();
  for (std::thread& t : pool) t.join();
  return status;
}

}  // namespace

nlohmann::json SweepHeader(const Scenario& base, const SweepOptions& options,
                           const std::vector<SearchCandidate>& candidates) {
  nlohmann::json networks = nlohmann::json::array();
  for (const SweepNetwork& n : options.networks) {
    networks.push_back(
        {{"label", n.label}, {"spec", n.spec ? NetworkSpecJson(*n.spec) : nlohmann::json()}});
  }
  nlohmann::json layouts = nlohmann::json::array();
  for (const SearchCandidate& c : candidates) {
    layouts.push_back(CandidateName(PointScenario(base, c, SweepNetwork{})));
  }
  return {{"sweep",
           {{"version", 1},
            {"model", base.model.name},
            {"gpu_arch", base.hw.gpu.name},
            {"num_gpus", base.num_gpus},
            {"seq_len", base.training.seq_len},
            {"global_batch", base.training.global_batch},
            {"precision", std::string(DTypeName(base.training.precision))},
            {"lod", options.high_lod ? "high" : "medium"},
            {"memory_limit_gib", options.memory_limit.value() / Gibibytes(1).value()},
            {"stop_above_limit", options.stop_above_limit},
            {"networks", std::move(networks)},
            {"candidates", std::move(layouts)},
            {"points", static_cast<int64_t>(options.networks.size() * candidates.size())}}}};
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
    const Scenario& base, const SweepOptions& options,
    const std::vector<SearchCandidate>& candidates, const SweepPoints& done,
    const std::function<absl::Status(const nlohmann::json&)>& write, int64_t best_count) {
  SweepSummary summary;
  const int64_t per_network = static_cast<int64_t>(candidates.size());
  summary.points = per_network * static_cast<int64_t>(options.networks.size());
  const int threads = options.threads > 0
                          ? options.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<int64_t> pending;
  for (size_t n = 0; n < options.networks.size(); ++n) {
    const SweepNetwork& network = options.networks[n];
    pending.clear();
    for (int64_t c = 0; c < per_network; ++c) {
      const int64_t index = static_cast<int64_t>(n) * per_network + c;
      if (auto it = done.find(index); it != done.end()) {
        ++summary.resumed;
        Count(it->second, summary);
        KeepBest(it->second, best_count, summary.best);
      } else {
        pending.push_back(index);
      }
    }
    if (pending.empty()) continue;
    // One backend set per network, shared by the workers (as the search shares one).
    const Scenario first = PointScenario(base, candidates.front(), network);
    PROJECTOR_ASSIGN_OR_RETURN(const BackendSet backends, MakeBackendSet(first.backends, first.hw));
    const BackendRefs refs = RefsOf(backends);
    auto evaluate = [&](int64_t index) {
      const size_t c = static_cast<size_t>(index % per_network);
      return EvaluatePoint(index, network, PointScenario(base, candidates[c], network), refs,
                           options);
    };
    auto sink = [&](const nlohmann::json& line) {
      if (absl::Status written = write(line); !written.ok()) return written;
      ++summary.evaluated;
      Count(line, summary);
      KeepBest(line, best_count, summary.best);
      return absl::OkStatus();
    };
    PROJECTOR_RETURN_IF_ERROR(EvaluateInOrder(pending, threads, evaluate, sink));
  }
  return summary;
}

}  // namespace projector
