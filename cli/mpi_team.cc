#include "cli/mpi_team.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/task_queue.h"
#include "core/wire.h"

namespace projector {
namespace {

enum Tag : int { kReady = 1, kTask = 2, kReply = 3, kEnd = 4 };

// How long a rank's main thread waits for its lanes between looks at the network (tool choice):
// short next to a task (tens of microseconds to seconds), long enough to leave the cores to the
// lanes. With it a chunk's round trip between two busy ranks is about 570 µs (team_benchmark's
// BM_Team_EmptyTasks, 3,500 tasks/s with two chunks in flight).
constexpr auto kPollInterval = std::chrono::microseconds(100);

// Chunks a serving rank holds per lane (tool choice): one running and one waiting (while more tasks
// are left than lanes), so that a lane never waits a message's round trip (hundreds of microseconds
// between busy processes) for its next chunk.
constexpr int kChunksPerLane = 2;

// Rank 0 while it distributes: a SIGTERM or SIGINT (the launcher stopping the job because a rank
// died, or the user cancelling it) asks for the report; outside, the signal does what it always
// does.
std::atomic<bool> g_distributing{false};
std::atomic<bool> g_stop_requested{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void OnStopSignal(int sig) {
  if (!g_distributing.load()) {
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_requested.store(true);
}

// Non-blocking sends whose buffers live until MPI has sent them.
class Sends {
 public:
  void Post(int destination, int tag, std::string bytes) {
    pending_.push_back({std::make_unique<std::string>(std::move(bytes)), MPI_REQUEST_NULL});
    Pending& p = pending_.back();
    MPI_Isend(p.bytes->data(), static_cast<int>(p.bytes->size()), MPI_BYTE, destination, tag,
              MPI_COMM_WORLD, &p.request);
  }
  // Lets MPI progress and frees what it has sent.
  void Progress() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }
  void WaitAll() {
    for (Pending& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    pending_.clear();
  }

 private:
  struct Pending {
    std::unique_ptr<std::string> bytes;
    MPI_Request request;
  };
  std::list<Pending> pending_;
};

// The message whose envelope MPI_Iprobe or MPI_Probe returned.
std::string Receive(const MPI_Status& status) {
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  std::string bytes(static_cast<size_t>(count), '\0');
  MPI_Recv(bytes.data(), count, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return bytes;
}

std::string WithId(uint64_t id, std::string_view payload) {
  WireWriter w;
  w.Put(id);
  std::string bytes = w.Take();
  bytes.append(payload.data(), payload.size());
  return bytes;
}

// PROJECTOR_MPI_KILL_AFTER_TASKS=R:N (fault injection for the tests and for trying a job's
// failure handling): rank R kills itself with SIGKILL when its N-th task arrives, as a node
// failure would end it.
bool KilledAt(int rank, int64_t tasks_received) {
  const char* spec = std::getenv("PROJECTOR_MPI_KILL_AFTER_TASKS");
  if (spec == nullptr) return false;
  const std::vector<std::string> parts = absl::StrSplit(spec, ':');
  int target = -1;
  int64_t n = -1;
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], &target) &&
         absl::SimpleAtoi(parts[1], &n) && target == rank && n == tasks_received;
}

// What the ranks held when the job was stopped, for people.
std::string StoppedReport(
    const TaskHooks& hooks, const TaskQueue& queue,
    const std::unordered_map<uint64_t, std::pair<int, TaskQueue::Chunk>>& held) {
  auto name = [&](int64_t first, int64_t last) {
    std::string text =
        hooks.describe ? hooks.describe(first, last) : absl::StrCat("tasks ", first, "-", last - 1);
    constexpr size_t kMost = 600;  // characters per chunk: the report stays readable
    if (text.size() > kMost) text = absl::StrCat(text.substr(0, kMost), " ...");
    return text;
  };
  std::vector<std::pair<int64_t, int64_t>> local = queue.InFlight();
  std::map<int, std::vector<std::string>> by_rank;
  std::map<int, int64_t> tasks_of;
  for (const auto& [id, at] : held) {
    const auto& [rank, chunk] = at;
    by_rank[rank].push_back(name(chunk.first, chunk.last));
    tasks_of[rank] += chunk.last - chunk.first;
    local.erase(std::remove(local.begin(), local.end(), std::pair{chunk.first, chunk.last}),
                local.end());
  }
  for (const auto& [first, last] : local) {
    by_rank[0].push_back(name(first, last));
    tasks_of[0] += last - first;
  }
  std::string out =
      "the MPI job was stopped (SIGTERM or SIGINT: a rank died, its node failed, or the job was "
      "cancelled; the launcher's message names the rank) before every task was evaluated; these "
      "were not:\n";
  for (const auto& [rank, names] : by_rank) {
    absl::StrAppend(&out, "  rank ", rank, " held ", tasks_of[rank],
                    " task(s): ", absl::StrJoin(names, "; "), "\n");
  }
  absl::StrAppend(&out, "  ", queue.NotHandedOut(), " task(s) were not handed out yet\n");
  return out;
}

}  // namespace

bool LaunchedByMpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

MpiTeam::MpiTeam(int& argc, char**& argv, std::ostream& err) : err_(err) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &ranks_on_node_);
  MPI_Comm_free(&node);
  lanes_of_.assign(static_cast<size_t>(size_), 0);
  tasks_of_.assign(static_cast<size_t>(size_), 0);
  if (rank_ == 0) {
    std::signal(SIGTERM, OnStopSignal);
    std::signal(SIGINT, OnStopSignal);
  }
}

MpiTeam::~MpiTeam() { MPI_Finalize(); }

int MpiTeam::Lanes(int requested) const {
  return requested > 0 ? requested : std::max(1, HardwareThreads() / std::max(1, ranks_on_node_));
}

namespace {

// The coordinator's side of one Distribute: the serving ranks' chunks in flight, handed out
// from the same queue as the coordinator's own lanes take theirs, and their replies gathered.
class RemoteLanes {
 public:
  // `all_lanes`: the lanes of every rank, the coordinator's included.
  RemoteLanes(TaskQueue& queue, std::vector<int>& lanes_of, std::vector<int64_t>& tasks_of,
              int all_lanes)
      : queue_(queue),
        lanes_of_(lanes_of),
        tasks_of_(tasks_of),
        busy_(lanes_of.size(), 0),
        all_lanes_(all_lanes) {}

  // Takes every message waiting (a rank's lanes, a reply), then keeps every serving rank's lanes
  // supplied; true when it did anything.
  bool Poll() {
    bool handled = false;
    int flag = 0;
    MPI_Status status;
    while (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status), flag) {
      handled = true;
      const std::string bytes = Receive(status);
      const auto from = static_cast<size_t>(status.MPI_SOURCE);
      if (status.MPI_TAG == kReady) {
        lanes_of_[from] = WireReader(bytes).Get<int32_t>();
        queue_.AddLanes(lanes_of_[from]);
      } else if (status.MPI_TAG == kReply) {
        Gather(from, bytes);
      }
    }
    // A chunk for every idle lane first; a second one waiting behind it only while more tasks
    // are left than there are lanes, so the last tasks go to idle lanes, not into queues.
    for (size_t r = 1; r < lanes_of_.size(); ++r) {
      while (busy_[r] < lanes_of_[r] && HandOut(r)) handled = true;
    }
    for (size_t r = 1; r < lanes_of_.size(); ++r) {
      while (busy_[r] < kChunksPerLane * lanes_of_[r] && queue_.NotHandedOut() > all_lanes_ &&
             HandOut(r)) {
        handled = true;
      }
    }
    sends_.Progress();
    return handled;
  }

  void Finish() { sends_.WaitAll(); }
  int64_t tasks() const { return tasks_; }
  int64_t chunks() const { return chunks_; }
  const std::unordered_map<uint64_t, std::pair<int, TaskQueue::Chunk>>& held() const {
    return held_;
  }

 private:
  // The reply to a chunk rank `from` held.
  void Gather(size_t from, std::string_view bytes) {
    auto it = held_.find(WireReader(bytes).Get<uint64_t>());
    const TaskQueue::Chunk& chunk = it->second.second;
    tasks_of_[from] += chunk.last - chunk.first;
    tasks_ += chunk.last - chunk.first;
    queue_.Finish(chunk, bytes.substr(sizeof(uint64_t)));
    held_.erase(it);
    --busy_[from];
  }

  // Sends rank r the next chunk; false when the queue has none for now.
  bool HandOut(size_t r) {
    TaskQueue::Chunk chunk;
    if (queue_.TryTake(chunk) != TaskQueue::Take::kChunk) return false;
    sends_.Post(static_cast<int>(r), kTask, WithId(next_id_, chunk.request));
    chunk.request.clear();
    held_.emplace(next_id_++, std::pair{static_cast<int>(r), std::move(chunk)});
    ++busy_[r];
    ++chunks_;
    return true;
  }

  TaskQueue& queue_;
  std::vector<int>& lanes_of_;
  std::vector<int64_t>& tasks_of_;
  std::vector<int> busy_;  // chunks each rank holds
  const int64_t all_lanes_;
  std::unordered_map<uint64_t, std::pair<int, TaskQueue::Chunk>> held_;  // by chunk id
  uint64_t next_id_ = 0;
  int64_t tasks_ = 0;   // gathered from other ranks
  int64_t chunks_ = 0;  // handed out to other ranks
  Sends sends_;
};

}  // namespace

absl::Status MpiTeam::Distribute(const TaskHooks& hooks, int lanes) {
  if (hooks.count <= 0) return absl::OkStatus();
  // With other ranks to serve it, the coordinator may only coordinate (0 lanes of its own).
  lanes = std::max(size_ > 1 ? 0 : 1, lanes);
  int remote_lanes = 0;
  for (const int n : lanes_of_) remote_lanes += n;
  g_stop_requested = false;
  g_distributing = true;
  // Every serving rank builds the same study and announces its lanes moments after this one
  // gets here: wait for them, so the first chunks are shared out among every lane.
  for (size_t r = 1; r < lanes_of_.size(); ++r) {
    while (lanes_of_[r] == 0) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(static_cast<int>(r), kReady, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        lanes_of_[r] = WireReader(Receive(status)).Get<int32_t>();
        remote_lanes += lanes_of_[r];
      } else if (g_stop_requested.load()) {
        err_ << "project: error: the MPI job was stopped before rank " << r
             << " joined the study; nothing was evaluated\n"
             << std::flush;
        std::_Exit(1);
      } else {
        std::this_thread::sleep_for(kPollInterval);
      }
    }
  }
  TaskQueue queue(hooks, lanes + remote_lanes);
  RemoteLanes remote(queue, lanes_of_, tasks_of_, lanes + remote_lanes);
  // The serving ranks' first chunks before this rank's lanes start: every rank gets work even
  // when there are as few tasks as lanes.
  remote.Poll();
  queue.StartLocalLanes(lanes);
  auto poll = [&] {
    const auto began = std::chrono::steady_clock::now();
    if (remote.Poll()) {
      gather_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
    if (g_stop_requested.load()) {
      const std::string report = StoppedReport(hooks, queue, remote.held());
      const std::string note = queue.Abandon();
      err_ << "project: error: " << report << (note.empty() ? "" : note + "\n") << std::flush;
      std::_Exit(1);
    }
  };
  queue.WaitAll(poll, kPollInterval);
  remote.Finish();
  g_distributing = false;
  tasks_of_[0] += hooks.count - queue.NotHandedOut() - remote.tasks();
  remote_chunks_ += remote.chunks();
  coordinator_lanes_ = lanes;
  return queue.status();
}

namespace {

// A serving rank's lanes: threads that perform the chunks its main thread receives and leave
// their replies for the main thread to send (only it calls MPI).
class LanePool {
 public:
  LanePool(const PerformFn& perform, int lanes) {
    for (int lane = 0; lane < lanes; ++lane) {
      threads_.emplace_back([this, &perform, lane] { Run(perform, lane); });
    }
  }
  ~LanePool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
    }
    work_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void Submit(uint64_t id, std::string request) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.emplace_back(id, std::move(request));
    }
    work_.notify_one();
  }

  // The replies finished since the last call; waits up to `wait` for one when there is none.
  std::deque<std::string> TakeReplies(std::chrono::microseconds wait) {
    std::unique_lock<std::mutex> lock(mu_);
    if (replies_.empty() && wait.count() > 0) finished_.wait_for(lock, wait);
    std::deque<std::string> ready;
    ready.swap(replies_);
    return ready;
  }

 private:
  void Run(const PerformFn& perform, int lane) {
    for (;;) {
      std::pair<uint64_t, std::string> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_.wait(lock, [&] { return ended_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      std::string reply = WithId(job.first, perform(lane, job.second));
      {
        std::lock_guard<std::mutex> lock(mu_);
        replies_.push_back(std::move(reply));
      }
      finished_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable work_, finished_;
  std::deque<std::pair<uint64_t, std::string>> jobs_;
  std::deque<std::string> replies_;
  bool ended_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

absl::Status MpiTeam::Serve(const PerformFn& perform, int lanes) {
  lanes = std::max(1, lanes);
  Sends sends;
  {
    WireWriter w;
    w.Put(static_cast<int32_t>(lanes));
    sends.Post(0, kReady, w.Take());
  }
  {
    LanePool pool(perform, lanes);
    int64_t received = 0;
    for (bool end = false; !end;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &status);
      if (flag) {
        std::string bytes = Receive(status);
        end = status.MPI_TAG == kEnd;
        if (status.MPI_TAG == kTask) {
          if (KilledAt(rank_, ++received)) std::raise(SIGKILL);
          pool.Submit(WireReader(bytes).Get<uint64_t>(), bytes.substr(sizeof(uint64_t)));
        }
      }
      for (std::string& reply :
           pool.TakeReplies(flag ? std::chrono::microseconds(0) : kPollInterval)) {
        sends.Post(0, kReply, std::move(reply));
      }
      sends.Progress();
    }
  }
  sends.WaitAll();
  return ServedStatus();
}

void MpiTeam::EndStudy() {
  for (int r = 1; r < size_; ++r) {
    // A rank that served no task of this study still announced itself: take that message, so
    // that it is not read as part of the next study.
    if (lanes_of_[static_cast<size_t>(r)] == 0) {
      MPI_Status status;
      MPI_Probe(r, kReady, MPI_COMM_WORLD, &status);
      Receive(status);
    }
    MPI_Send(nullptr, 0, MPI_BYTE, r, kEnd, MPI_COMM_WORLD);
  }
  std::vector<std::string> ranks;
  for (int r = 0; r < size_; ++r) {
    const auto at = static_cast<size_t>(r);
    ranks.push_back(absl::StrCat("rank ", r, " ", tasks_of_[at], " (",
                                 r == 0 ? coordinator_lanes_ : lanes_of_[at], " lanes)"));
  }
  err_ << "mpi: " << size_ << " ranks, tasks evaluated: " << absl::StrJoin(ranks, ", ");
  if (remote_chunks_ > 0) {
    err_ << absl::StrFormat("; rank 0 handed out and gathered %d chunks at %.1f us each",
                            remote_chunks_, gather_s_ / static_cast<double>(remote_chunks_) * 1e6);
  }
  err_ << "\n";
  std::fill(lanes_of_.begin(), lanes_of_.end(), 0);
  std::fill(tasks_of_.begin(), tasks_of_.end(), 0);
  all_remote_chunks_ += remote_chunks_;
  all_gather_s_ += gather_s_;
  remote_chunks_ = 0;
  gather_s_ = 0;
}

}  // namespace projector
