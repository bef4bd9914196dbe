#include "core/task_queue.h"

#include <algorithm>
#include <chrono>
#include <utility>

namespace projector {

TaskQueue::TaskQueue(const TaskHooks& hooks, int lanes)
    : hooks_(hooks), lanes_(std::max(1, lanes)) {}

TaskQueue::~TaskQueue() {
  Stop(absl::OkStatus());
  for (std::thread& t : local_) {
    if (t.joinable()) t.join();
  }
}

TaskQueue::Take TaskQueue::TryTakeLocked(Chunk& chunk) {
  if (stopped_ || next_ >= hooks_.count) return Take::kNone;
  const int64_t remaining = hooks_.count - next_;
  int64_t size = (remaining + 2 * lanes_ - 1) / (2 * static_cast<int64_t>(lanes_));
  size = std::clamp(size, std::max<int64_t>(1, hooks_.min_chunk),
                    std::max<int64_t>(1, hooks_.max_chunk));
  int64_t last = std::min(hooks_.count, next_ + size);
  if (hooks_.window > 0) {
    const int64_t oldest = in_flight_.empty() ? next_ : in_flight_.begin()->first;
    if (next_ >= oldest + hooks_.window) return Take::kWait;
    last = std::min(last, oldest + hooks_.window);
  }
  chunk.first = next_;
  chunk.last = last;
  chunk.request = hooks_.request(chunk.first, chunk.last);
  next_ = last;
  in_flight_.emplace(chunk.first, chunk.last);
  return Take::kChunk;
}

TaskQueue::Take TaskQueue::TryTake(Chunk& chunk) {
  std::lock_guard<std::mutex> lock(mu_);
  return TryTakeLocked(chunk);
}

void TaskQueue::Finish(const Chunk& chunk, std::string_view reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    in_flight_.erase(chunk.first);
    if (status_.ok() && !stopped_) {
      absl::Status collected = hooks_.collect(chunk.first, chunk.last, reply);
      if (!collected.ok()) {
        status_ = std::move(collected);
        stopped_ = true;
      }
    }
  }
  changed_.notify_all();
}

void TaskQueue::Stop(absl::Status why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(why);
    stopped_ = true;
  }
  changed_.notify_all();
}

std::string TaskQueue::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  stopped_ = true;
  if (status_.ok()) status_ = absl::AbortedError("the job was stopped");
  return hooks_.on_stop ? hooks_.on_stop() : std::string();
}

void TaskQueue::AddLanes(int lanes) {
  std::lock_guard<std::mutex> lock(mu_);
  lanes_ += lanes;
}

bool TaskQueue::Done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_flight_.empty() && (stopped_ || next_ >= hooks_.count);
}

absl::Status TaskQueue::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

std::vector<std::pair<int64_t, int64_t>> TaskQueue::InFlight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {in_flight_.begin(), in_flight_.end()};
}

int64_t TaskQueue::NotHandedOut() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hooks_.count - next_;
}

void TaskQueue::RunLane(int lane) {
  for (;;) {
    Chunk chunk;
    {
      std::unique_lock<std::mutex> lock(mu_);
      Take take;
      changed_.wait(lock, [&] { return (take = TryTakeLocked(chunk)) != Take::kWait; });
      if (take == Take::kNone) return;
    }
    const std::string reply = hooks_.perform(lane, chunk.request);
    Finish(chunk, reply);
  }
}

void TaskQueue::StartLocalLanes(int lanes) {
  for (int lane = 0; lane < lanes; ++lane) local_.emplace_back([this, lane] { RunLane(lane); });
}

void TaskQueue::WaitAll(const std::function<void()>& poll,
                        std::chrono::microseconds poll_interval) {
  using Clock = std::chrono::steady_clock;
  const auto tick_every = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(hooks_.tick_interval_s));
  Clock::time_point next_tick = Clock::now() + tick_every;
  const auto wait = poll ? std::chrono::duration_cast<Clock::duration>(poll_interval) : tick_every;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      const auto done = [&] { return in_flight_.empty() && (stopped_ || next_ >= hooks_.count); };
      changed_.wait_for(lock, wait, done);
      if (done()) break;
    }
    if (poll) poll();
    if (hooks_.tick && Clock::now() >= next_tick) {
      hooks_.tick();
      next_tick = Clock::now() + tick_every;
    }
  }
  for (std::thread& t : local_) t.join();
  local_.clear();
}

}  // namespace projector
