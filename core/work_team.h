// The processes that evaluate a study's tasks together: this process alone (SoloTeam, on its
// threads) or the ranks of an MPI job (cli/mpi_team.h). The coordinator (rank 0) runs the study:
// it hands its tasks out in chunks as lanes (worker threads, on any rank) free up, so that tasks
// whose costs differ by orders of magnitude still keep every lane busy, and gathers every reply
// in one place. The other ranks build the same study from the same command line and serve the
// coordinator's requests until it ends the study. A study's result therefore depends only on its
// tasks, never on how many ranks or threads evaluated them.
#ifndef PROJECTOR_CORE_WORK_TEAM_H_
#define PROJECTOR_CORE_WORK_TEAM_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace projector {

// Evaluates one request on lane `lane` (0 .. lanes-1 of its rank; lanes run at once, so a
// function keeps per-lane scratch by it) and returns the reply.
using PerformFn = std::function<std::string(int lane, std::string_view request)>;

// A study's tasks 0 .. count-1, evaluated in chunks [first, last).
struct TaskHooks {
  int64_t count = 0;
  // Tasks per request: guided self-scheduling, the tasks not yet handed out shared over twice
  // the lanes, within [min_chunk, max_chunk], so the chunks shrink towards the end and no lane is
  // left with a long tail.
  int64_t min_chunk = 1;
  int64_t max_chunk = 64;
  // > 0: a chunk is handed out only when it starts fewer than `window` tasks after the first task
  // not yet collected, so a coordinator that consumes replies in task order holds at most that
  // many out of order.
  int64_t window = 0;
  // Coordinator, one call at a time: the request for tasks [first, last).
  std::function<std::string(int64_t first, int64_t last)> request;
  // Any rank, several lanes at once: the reply to a request.
  PerformFn perform;
  // Coordinator, one call at a time: the reply for [first, last). An error stops the run (the
  // chunks in flight are collected, no new one is handed out) and is returned.
  std::function<absl::Status(int64_t first, int64_t last, std::string_view reply)> collect;
  // Coordinator: what tasks [first, last) are, for people ("TP2 PP1 DP8 mb1 none on builtin"),
  // when a rank stopped with them unevaluated. Empty: "tasks 3-5".
  std::function<std::string(int64_t first, int64_t last)> describe;
  // Coordinator, one call at a time with `request` and `collect`, when the job is stopped with
  // tasks unevaluated (a rank died): keeps what it can and returns a note for people, printed
  // after the report ("the 281 points evaluated are in F; continue with --resume F").
  std::function<std::string()> on_stop;
  // Coordinator, about every tick_interval_s while the tasks run (progress bars).
  std::function<void()> tick;
  double tick_interval_s = 0.5;
};

class WorkTeam {
 public:
  virtual ~WorkTeam() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool coordinator() const { return rank() == 0; }
  // The lanes this rank runs for a --threads value: `requested` when above 0, else this rank's
  // share of its node's cores.
  virtual int Lanes(int requested) const = 0;
  // Coordinator: evaluates every task of `hooks` on `lanes` threads here (0: none, when other
  // ranks serve; a process alone runs at least one) and on the lanes of the ranks serving, and
  // returns once every reply handed out is collected: the first error of `collect`, or (kAborted)
  // which ranks held which tasks when the job was stopped.
  virtual absl::Status Distribute(const TaskHooks& hooks, int lanes) = 0;
  // Every other rank: performs the coordinator's requests with `perform` on `lanes` threads until
  // the coordinator ends the study; returns ServedStatus().
  virtual absl::Status Serve(const PerformFn& perform, int lanes) = 0;
  // Coordinator: the study is over; the ranks in Serve return.
  virtual void EndStudy() = 0;
};

// What Serve returns: the rank served a study, and has nothing of its own to print.
absl::Status ServedStatus();
bool IsServedStatus(const absl::Status& status);

// Ends the coordinator's study when it goes out of scope, on every path out of a study.
class StudyScope {
 public:
  explicit StudyScope(WorkTeam& team) : team_(team) {}
  StudyScope(const StudyScope&) = delete;
  StudyScope& operator=(const StudyScope&) = delete;
  ~StudyScope() {
    if (team_.coordinator()) team_.EndStudy();
  }

 private:
  WorkTeam& team_;
};

// This process alone: Distribute runs the tasks on its threads.
class SoloTeam final : public WorkTeam {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int Lanes(int requested) const override;
  absl::Status Distribute(const TaskHooks& hooks, int lanes) override;
  absl::Status Serve(const PerformFn& perform, int lanes) override;
  void EndStudy() override {}
};

// The items 0 .. count-1 of a study, one per task, evaluated on the lanes of `team` (`lanes` on
// each rank): `evaluate(i)` on any rank returns item i's outcome as bytes, `collect(i, bytes)`
// takes it on the coordinator, one call at a time (its error stops the run), with
// `progress(done, count)` after each; `describe(i)` names an item for the report of a stopped job.
// Every rank calls it with the same items: the coordinator distributes them (and ends the study),
// every other rank serves and gets ServedStatus().
struct ItemHooks {
  std::function<std::string(int64_t item)> evaluate;
  std::function<absl::Status(int64_t item, std::string_view outcome)> collect;
  std::function<std::string(int64_t item)> describe;
  std::function<void(int64_t done, int64_t count)> progress;
};
absl::Status EvaluateItems(WorkTeam& team, int lanes, int64_t count, const ItemHooks& items);

// kInvalidArgument when a team of several ranks has more ranks than `tasks` `what` ("layouts")
// to evaluate, naming -np; the same on every rank, so rank 0 alone says it.
absl::Status CheckRanksFor(const WorkTeam& team, int64_t tasks, std::string_view what);

// The team of a process that was given none.
WorkTeam& Solo();

// The cores of this machine (at least 1).
int HardwareThreads();

}  // namespace projector

#endif  // PROJECTOR_CORE_WORK_TEAM_H_
