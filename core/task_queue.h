// The coordinator's side of WorkTeam::Distribute (core/work_team.h): the tasks not yet handed
// out, the chunks in flight, the window, and the lanes of this process that take chunks from it.
// A team that spans processes (cli/mpi_team.h) hands chunks to its remote lanes from the same
// queue, so every lane anywhere draws from one pool.
#ifndef PROJECTOR_CORE_TASK_QUEUE_H_
#define PROJECTOR_CORE_TASK_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/work_team.h"

namespace projector {

class TaskQueue {
 public:
  // `lanes`: the lanes known now (this process's); remote ones join with AddLanes.
  TaskQueue(const TaskHooks& hooks, int lanes);
  ~TaskQueue();
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  struct Chunk {
    int64_t first = 0;
    int64_t last = 0;
    std::string request;
  };
  enum class Take { kChunk, kWait, kNone };
  // The next chunk with its request (kChunk), or kWait while the window is full, or kNone once
  // every task is handed out or the run stops.
  Take TryTake(Chunk& chunk);
  // Collects the reply of a chunk taken before; an error of `collect` stops the run.
  void Finish(const Chunk& chunk, std::string_view reply);
  // Stops handing out chunks; the first status given is the one Status returns.
  void Stop(absl::Status why);
  void AddLanes(int lanes);
  // Stops the run for good (a rank died): no chunk is handed out or collected after it; returns
  // hooks.on_stop's note (empty without one).
  std::string Abandon();

  // Starts `lanes` threads that take, perform and finish chunks until none is left.
  void StartLocalLanes(int lanes);
  // Waits until every chunk is handed out and collected, calling hooks.tick meanwhile and
  // `poll` (when given) between waits of at most `poll_interval`; joins the local lanes.
  void WaitAll(const std::function<void()>& poll = {},
               std::chrono::microseconds poll_interval = std::chrono::microseconds(200));
  // Every task handed out and every chunk collected (or the run stopped and nothing in flight).
  bool Done() const;
  absl::Status status() const;
  // The chunks handed out and not yet collected ([first, last) each), and the tasks not yet
  // handed out: what a stopped run did not evaluate.
  std::vector<std::pair<int64_t, int64_t>> InFlight() const;
  int64_t NotHandedOut() const;
  const TaskHooks& hooks() const { return hooks_; }

 private:
  Take TryTakeLocked(Chunk& chunk);
  void RunLane(int lane);

  const TaskHooks& hooks_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  int64_t next_ = 0;
  int lanes_ = 1;
  std::map<int64_t, int64_t> in_flight_;  // chunks handed out, not yet collected: first -> last
  bool stopped_ = false;
  absl::Status status_;
  std::vector<std::thread> local_;
};

}  // namespace projector

#endif  // PROJECTOR_CORE_TASK_QUEUE_H_
