// A design-space sweep (`project sweep`): every layout of a search space on each network of a
// list and each GPU type of another, projected at the medium or the high level of detail and
// within a memory limit, each point written as one JSON line as soon as it is evaluated, so that
// a sweep stopped half way resumes where it stopped (`--resume`). Unlike the search nothing is pruned: every point is
// evaluated and recorded, which is what a design-space exploration over networks needs
// (`../shared/seeds/004`, Part 3). The points are independent: a team of MPI ranks
// (core/work_team.h) evaluates them together and writes the same file as one process.
#ifndef PROJECTOR_STUDIES_SWEEP_H_
#define PROJECTOR_STUDIES_SWEEP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/units.h"
#include "core/work_team.h"
#include "network/network_spec.h"
#include "nlohmann/json.hpp"
#include "scenario/scenario.h"
#include "studies/search.h"

namespace projector {

// One network of the sweep: a network file's, or (spec null) the hardware profile's built-in
// two-level one. `label` is what the points name it by: the file as given, or "builtin".
struct SweepNetwork {
  std::string label;
  std::shared_ptr<const NetworkSpec> spec;
};

// One GPU type of the sweep: the job on it, the layouts of the search space valid there (in
// enumeration order) and the memory limit its points are judged against (the user's, or its
// HBM less the reserve).
struct SweepGpu {
  Scenario base;
  std::vector<SearchCandidate> candidates;
  Bytes memory_limit;
};

struct SweepOptions {
  std::vector<SweepNetwork> networks;
  bool high_lod = false;  // ProjectAtHighLod instead of Project
  // A point above its GPU's limit is recorded with fits false; with stop_above_limit (a limit
  // the user gave) without a step, its projection stopped there.
  bool stop_above_limit = false;
  int threads = 0;  // lanes evaluating points at once on each rank; 0 = its share of the cores
  // The ranks that evaluate the points (null: this process alone). The coordinator runs
  // RunSweep; every other rank runs ServeSweep with the same arguments.
  WorkTeam* team = nullptr;
};

// The points in all: for each GPU, each network times its candidates. A point's index runs GPU
// outermost, then network, then candidate.
int64_t SweepPointCount(const std::vector<SweepGpu>& gpus, const SweepOptions& options);

// What identifies a sweep: its job (model, GPU count, sequence, batch, precision), the level of
// detail, each network (its label and its spec as JSON), and each GPU with its memory limit and
// its candidates in order. A resume file must start with the same header.
nlohmann::json SweepHeader(const std::vector<SweepGpu>& gpus, const SweepOptions& options);

// The points of a sweep already in a file, by index (their lines as written).
using SweepPoints = absl::flat_hash_map<int64_t, nlohmann::json>;

// A sweep file read to resume: its points, and how many of its bytes hold whole lines (a last
// line cut short when the process was killed is not among them: the file is cut back to
// `whole_bytes` before points are appended, and that point is evaluated again).
struct SweepFile {
  SweepPoints points;
  uint64_t whole_bytes = 0;
};

// Reads a sweep file to resume: its first line must be `header` (else kInvalidArgument naming
// --resume: another sweep's file), every other line a point of it (index in range, once).
// kNotFound when the file cannot be read.
absl::StatusOr<SweepFile> ReadSweepFile(const std::string& path, const nlohmann::json& header);

struct SweepSummary {
  int64_t points = 0;     // networks × candidates
  int64_t evaluated = 0;  // this run
  int64_t resumed = 0;    // taken from the resume file
  int64_t failed = 0;     // a point whose projection returned an error (its line says which)
  int64_t over_memory = 0;
  // The best points that fit, highest tokens/s/GPU first (at most `best_count`), over the whole
  // sweep (resumed points included).
  std::vector<nlohmann::json> best;
};

// Evaluates every point not in `done` (GPU outermost, candidate innermost) on the lanes of
// options.team, handing the lines (JSON documents) to `write` in index order as soon as each and those before it
// are evaluated (the same lines whatever the ranks and threads); stops at the first error `write`
// returns. A point's own projection error is recorded in its line ("error"), not returned. The
// caller holds the StudyScope (the sweep command checks its file between the two).
absl::StatusOr<SweepSummary> RunSweep(
    const std::vector<SweepGpu>& gpus, const SweepOptions& options, const SweepPoints& done,
    const std::function<absl::Status(std::string_view)>& write, int64_t best_count = 5);

// Every rank of options.team but the coordinator: evaluates the points the coordinator's RunSweep
// hands out until it ends; returns ServedStatus().
absl::Status ServeSweep(const std::vector<SweepGpu>& gpus, const SweepOptions& options);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_SWEEP_H_
