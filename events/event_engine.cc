#include "events/event_engine.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace projector::events {

ResourceId TaskGraph::AddResource(ResourceOrder order) {
  resource_order_.push_back(order);
  return static_cast<ResourceId>(resource_order_.size() - 1);
}

TaskId TaskGraph::AddTask(ResourceId resource, Seconds duration) {
  task_resource_.push_back(resource);
  task_duration_.push_back(duration);
  return static_cast<TaskId>(task_resource_.size() - 1);
}

void TaskGraph::AddDependency(TaskId before, TaskId after) {
  dependencies_.emplace_back(before, after);
}

void TaskGraph::Reserve(size_t tasks, size_t dependencies) {
  task_resource_.reserve(tasks);
  task_duration_.reserve(tasks);
  dependencies_.reserve(dependencies);
}

void TaskGraph::Clear() {
  resource_order_.clear();
  task_resource_.clear();
  task_duration_.clear();
  dependencies_.clear();
}

namespace {

// Rows of a compressed adjacency: first[k] .. first[k + 1] for key k, from the keys of `items`.
template <typename KeyOf>
void CountRows(size_t keys, size_t items, KeyOf key_of, std::vector<uint32_t>& first) {
  first.assign(keys + 1, 0);
  for (size_t i = 0; i < items; ++i) ++first[key_of(i) + 1];
  for (size_t k = 0; k < keys; ++k) first[k + 1] += first[k];
}

}  // namespace

bool Simulator::EventLater(const QueuedEvent& a, const QueuedEvent& b) {
  if (a.time != b.time) return a.time > b.time;
  return a.task != b.task ? a.task > b.task : a.generation > b.generation;
}

void Simulator::Touch(ResourceId r) {
  if (is_touched_[r]) return;
  is_touched_[r] = 1;
  touched_.push_back(r);
}

absl::Status Simulator::Prepare(const TaskGraph& graph) {
  const size_t n = graph.num_tasks();
  const size_t resources = graph.num_resources();
  for (TaskId t = 0; t < n; ++t) {
    if (graph.resource(t) >= resources) {
      return absl::InvalidArgumentError(absl::StrCat("task ", t, ": resource ", graph.resource(t),
                                                     " does not exist (", resources,
                                                     " resources)"));
    }
    const double d = graph.duration(t).value();
    if (!std::isfinite(d) || d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, ": duration must be finite and >= 0 s, got ", d));
    }
  }
  const auto& deps = graph.dependencies();
  for (const auto& [before, after] : deps) {
    if (before >= n || after >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("dependency ", before, " -> ", after, ": no such task (", n, " tasks)"));
    }
  }
  CountRows(
      n, deps.size(), [&](size_t i) { return deps[i].first; }, first_successor_);
  successors_.resize(deps.size());
  unmet_.assign(n, 0);
  {
    std::vector<uint32_t>& fill = next_in_order_;  // scratch: row cursors
    fill.assign(first_successor_.begin(), first_successor_.end() - 1);
    for (const auto& [before, after] : deps) {
      successors_[fill[before]++] = after;
      ++unmet_[after];
    }
  }
  CountRows(
      resources, n, [&](size_t t) { return graph.resource(static_cast<TaskId>(t)); }, first_task_);
  resource_tasks_.resize(n);
  next_in_order_.assign(first_task_.begin(), first_task_.end() - 1);
  for (TaskId t = 0; t < n; ++t) resource_tasks_[next_in_order_[graph.resource(t)]++] = t;
  next_in_order_.assign(resources, 0);
  running_.assign(resources, 0);
  heap_size_.assign(resources, 0);
  ready_heap_.resize(n);
  ready_at_.assign(n, Seconds(0));
  ready_.assign(n, 0);
  started_.assign(n, 0);
  is_touched_.assign(resources, 0);
  touched_.clear();
  touched_.reserve(resources);
  queue_.clear();
  queue_.reserve(n);
  shared_running_.resize(n);
  shared_count_.assign(resources, 0);
  shared_advanced_.assign(resources, Seconds(0));
  generation_.assign(resources, 0);
  remaining_.assign(n, Seconds(0));
  return absl::OkStatus();
}

void Simulator::MakeReady(const TaskGraph& graph, TaskId task, Seconds now) {
  ready_[task] = 1;
  ready_at_[task] = now;
  const ResourceId r = graph.resource(task);
  if (graph.order(r) == ResourceOrder::kInOrder) return;
  TaskId* heap = ready_heap_.data() + first_task_[r];
  heap[heap_size_[r]++] = task;
  std::push_heap(heap, heap + heap_size_[r], [this](TaskId a, TaskId b) {
    return ready_at_[a] != ready_at_[b] ? ready_at_[a] > ready_at_[b] : a > b;
  });
}

void Simulator::Advance(ResourceId r, Seconds now, SimulationResult& result) {
  const uint32_t n = shared_count_[r];
  const Seconds elapsed = now - shared_advanced_[r];
  shared_advanced_[r] = now;
  if (n == 0 || elapsed.value() <= 0) return;
  result.busy[r] += elapsed;
  const Seconds share = elapsed / static_cast<double>(n);
  const TaskId* running = shared_running_.data() + first_task_[r];
  for (uint32_t i = 0; i < n; ++i) remaining_[running[i]] -= share;
}

void Simulator::QueueNextShare(ResourceId r, Seconds now) {
  ++generation_[r];
  const uint32_t n = shared_count_[r];
  if (n == 0) return;
  const TaskId* running = shared_running_.data() + first_task_[r];
  TaskId next = running[0];
  for (uint32_t i = 1; i < n; ++i) {
    const TaskId t = running[i];
    if (remaining_[t] < remaining_[next] || (remaining_[t] == remaining_[next] && t < next)) {
      next = t;
    }
  }
  const Seconds left = remaining_[next].value() > 0 ? remaining_[next] : Seconds(0);
  queue_.push_back(
      {.time = now + left * static_cast<double>(n), .task = next, .generation = generation_[r]});
  std::push_heap(queue_.begin(), queue_.end(), EventLater);
}

void Simulator::FinishShares(const TaskGraph& graph, ResourceId r, TaskId due, Seconds now,
                             SimulationResult& result) {
  Advance(r, now, result);
  TaskId* running = shared_running_.data() + first_task_[r];
  uint32_t& n = shared_count_[r];
  // Done: the task the event was queued for (it had the least work left; whatever rounding left
  // of it, so that every valid event finishes a task and time moves on), and any other with no
  // work left beyond rounding (1e-12 of its duration, or 1 fs).
  auto done = [&](TaskId t) {
    return t == due || remaining_[t].value() <= std::max(1e-15, 1e-12 * graph.duration(t).value());
  };
  std::sort(running, running + n);
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const TaskId t = running[i];
    if (done(t)) {
      Finish(graph, t, now, result);
    } else {
      running[kept++] = t;
    }
  }
  n = kept;
  Touch(r);
}

void Simulator::Finish(const TaskGraph& graph, TaskId task, Seconds now, SimulationResult& result) {
  ++result.events;
  const ResourceId r = graph.resource(task);
  if (graph.order(r) != ResourceOrder::kShared) {
    running_[r] = 0;
    result.busy[r] += graph.duration(task);
  }
  result.tasks[task].finish = now;
  result.makespan = std::max(result.makespan, now);
  Touch(r);
  for (uint32_t i = first_successor_[task]; i < first_successor_[task + 1]; ++i) {
    const TaskId next = successors_[i];
    if (--unmet_[next] == 0) {
      MakeReady(graph, next, now);
      Touch(graph.resource(next));
    }
  }
}

void Simulator::TryStart(const TaskGraph& graph, ResourceId r, Seconds now,
                         SimulationResult& result) {
  if (graph.order(r) == ResourceOrder::kShared) {
    // Every ready task joins the running set; the shares change, so the next finish is queued
    // anew.
    Advance(r, now, result);
    TaskId* heap = ready_heap_.data() + first_task_[r];
    TaskId* running = shared_running_.data() + first_task_[r];
    for (uint32_t i = 0; i < heap_size_[r]; ++i) {
      const TaskId task = heap[i];
      running[shared_count_[r]++] = task;
      remaining_[task] = graph.duration(task);
      result.tasks[task].start = now;
      started_[task] = 1;
    }
    heap_size_[r] = 0;
    QueueNextShare(r, now);
    return;
  }
  if (running_[r]) return;
  TaskId task = 0;
  if (graph.order(r) == ResourceOrder::kInOrder) {
    const uint32_t index = first_task_[r] + next_in_order_[r];
    if (index == first_task_[r + 1] || !ready_[resource_tasks_[index]]) return;
    task = resource_tasks_[index];
    ++next_in_order_[r];
  } else {
    if (heap_size_[r] == 0) return;
    TaskId* heap = ready_heap_.data() + first_task_[r];
    std::pop_heap(heap, heap + heap_size_[r], [this](TaskId a, TaskId b) {
      return ready_at_[a] != ready_at_[b] ? ready_at_[a] > ready_at_[b] : a > b;
    });
    task = heap[--heap_size_[r]];
  }
  running_[r] = 1;
  result.tasks[task].start = now;
  result.tasks[task].finish = now + graph.duration(task);
  started_[task] = 1;
  queue_.push_back({.time = result.tasks[task].finish, .task = task});
  std::push_heap(queue_.begin(), queue_.end(), EventLater);
}

absl::Status Simulator::Run(const TaskGraph& graph, SimulationResult& result) {
  PROJECTOR_RETURN_IF_ERROR(Prepare(graph));
  const size_t n = graph.num_tasks();
  const size_t resources = graph.num_resources();
  result.makespan = Seconds(0);
  result.events = 0;
  result.tasks.assign(n, TaskTimes{});
  result.busy.assign(resources, Seconds(0));
  for (TaskId t = 0; t < n; ++t) {
    if (unmet_[t] == 0) MakeReady(graph, t, Seconds(0));
  }
  for (ResourceId r = 0; r < resources; ++r) TryStart(graph, r, Seconds(0), result);

  // Every finish at one instant is taken before any resource starts its next task, so that a
  // first-ready resource sees all the tasks that became ready at that instant (ties by id); the
  // resources freed or fed then try to start, in id order.
  while (!queue_.empty()) {
    const Seconds now = queue_.front().time;
    touched_.clear();
    while (!queue_.empty() && queue_.front().time == now) {
      std::pop_heap(queue_.begin(), queue_.end(), EventLater);
      const QueuedEvent event = queue_.back();
      queue_.pop_back();
      const ResourceId r = graph.resource(event.task);
      if (graph.order(r) != ResourceOrder::kShared) {
        Finish(graph, event.task, now, result);
      } else if (event.generation == generation_[r]) {
        FinishShares(graph, r, event.task, now, result);
      }  // else stale: the running set changed since it was queued
    }
    std::sort(touched_.begin(), touched_.end());
    for (ResourceId r : touched_) {
      is_touched_[r] = 0;
      TryStart(graph, r, now, result);
    }
  }
  if (static_cast<size_t>(result.events) != n) {
    TaskId stuck = 0;
    while (stuck < n && started_[stuck]) ++stuck;
    return absl::FailedPreconditionError(absl::StrCat(
        "task ", stuck, " (resource ", graph.resource(stuck), ") never ran: its dependencies form ",
        "a cycle, or it waits on a later task of its in-order resource (", result.events, " of ", n,
        " tasks ran)"));
  }
  return absl::OkStatus();
}

}  // namespace projector::events
