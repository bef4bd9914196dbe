#include "core/work_team.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/task_queue.h"

namespace projector {

namespace {
constexpr absl::string_view kServed = "served the coordinator's study";
}  // namespace

absl::Status ServedStatus() { return absl::CancelledError(kServed); }

bool IsServedStatus(const absl::Status& status) {
  return absl::IsCancelled(status) && status.message() == kServed;
}

int HardwareThreads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

int SoloTeam::Lanes(int requested) const { return requested > 0 ? requested : HardwareThreads(); }

absl::Status SoloTeam::Distribute(const TaskHooks& hooks, int lanes) {
  if (hooks.count <= 0) return absl::OkStatus();
  lanes = static_cast<int>(std::clamp<int64_t>(lanes, 1, hooks.count));
  TaskQueue queue(hooks, lanes);
  queue.StartLocalLanes(lanes);
  queue.WaitAll();
  return queue.status();
}

absl::Status SoloTeam::Serve(const PerformFn& /*perform*/, int /*lanes*/) {
  return absl::InternalError("a process alone has no coordinator to serve");
}

absl::Status EvaluateItems(WorkTeam& team, int lanes, int64_t count, const ItemHooks& items) {
  auto perform = [&](int, std::string_view request) {
    int64_t item = 0;
    std::memcpy(&item, request.data(), sizeof(item));
    return items.evaluate(item);
  };
  if (!team.coordinator()) return team.Serve(perform, lanes);
  StudyScope study(team);
  int64_t done = 0;
  TaskHooks hooks;
  hooks.count = count;
  hooks.max_chunk = 1;
  hooks.request = [](int64_t first, int64_t) {
    return std::string(reinterpret_cast<const char*>(&first), sizeof(first));
  };
  hooks.perform = perform;
  hooks.collect = [&](int64_t first, int64_t, std::string_view outcome) {
    absl::Status collected = items.collect(first, outcome);
    if (items.progress) items.progress(++done, count);
    return collected;
  };
  if (items.describe)
    hooks.describe = [&](int64_t first, int64_t) { return items.describe(first); };
  return team.Distribute(hooks, lanes);
}

absl::Status CheckRanksFor(const WorkTeam& team, int64_t tasks, std::string_view what) {
  if (team.size() <= 1 || team.size() <= tasks) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "mpirun -np ", team.size(), ": more MPI ranks than the ", tasks, " ", std::string(what),
      " to evaluate; give -np ", std::max<int64_t>(1, tasks), " or fewer"));
}

WorkTeam& Solo() {
  static SoloTeam team;
  return team;
}

}  // namespace projector
