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
  if (resource < resource_order_.size() && resource_order_[resource] == ResourceOrder::kShared) {
    shares_.push_back({.link = resource, .share = 1});
  }
  first_share_.push_back(static_cast<uint32_t>(shares_.size()));
  return static_cast<TaskId>(task_resource_.size() - 1);
}

TaskId TaskGraph::AddFlow(std::span<const LinkShare> shares, Seconds duration) {
  // Without shares the task has no resource: Prepare refuses it.
  task_resource_.push_back(shares.empty() ? ~ResourceId{0} : shares.front().link);
  task_duration_.push_back(duration);
  shares_.insert(shares_.end(), shares.begin(), shares.end());
  first_share_.push_back(static_cast<uint32_t>(shares_.size()));
  return static_cast<TaskId>(task_resource_.size() - 1);
}

void TaskGraph::AddDependency(TaskId before, TaskId after) {
  dependencies_.emplace_back(before, after);
}

void TaskGraph::Reserve(size_t tasks, size_t dependencies) {
  task_resource_.reserve(tasks);
  task_duration_.reserve(tasks);
  first_share_.reserve(tasks + 1);
  dependencies_.reserve(dependencies);
}

void TaskGraph::Clear() {
  resource_order_.clear();
  task_resource_.clear();
  task_duration_.clear();
  dependencies_.clear();
  first_share_.assign(1, 0);
  shares_.clear();
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
    if (graph.resource(t) == ~ResourceId{0} && graph.shares(t).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, ": a flow needs at least one shared resource"));
    }
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
  PROJECTOR_RETURN_IF_ERROR(CheckShares(graph));
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
  remaining_.assign(n, Seconds(0));
  advanced_at_.assign(n, Seconds(0));
  speed_.assign(n, 0.0);
  generation_.assign(n, 0);
  const size_t shares = graph.num_shares();
  share_task_.resize(shares);
  for (TaskId t = 0; t < n; ++t) {
    for (uint32_t e = graph.first_share(t); e < graph.first_share(t + 1); ++e) share_task_[e] = t;
  }
  CountRows(
      resources, shares, [&](size_t e) { return graph.all_shares()[e].link; }, first_on_link_);
  on_link_.resize(shares);
  share_slot_.resize(shares);
  link_count_.assign(resources, 0);
  busy_since_.assign(resources, Seconds(0));
  link_changed_.assign(resources, 0);
  changed_links_.clear();
  joined_tasks_.clear();
  task_stamp_.assign(n, 0);
  link_stamp_.assign(resources, 0);
  stamp_ = 0;
  frozen_load_.assign(resources, 0.0);
  open_share_.assign(resources, 0.0);
  open_count_.assign(resources, 0);
  frozen_.assign(n, 0);
  return absl::OkStatus();
}

absl::Status Simulator::CheckShares(const TaskGraph& graph) {
  const size_t resources = graph.num_resources();
  link_stamp_.assign(resources, 0);
  for (TaskId t = 0; t < graph.num_tasks(); ++t) {
    const std::span<const LinkShare> shares = graph.shares(t);
    if (graph.order(graph.resource(t)) == ResourceOrder::kShared && shares.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, ": a flow needs a shared resource"));
    }
    for (const LinkShare& s : shares) {
      if (s.link >= resources || graph.order(s.link) != ResourceOrder::kShared) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", t, ": resource ", s.link, " is not a shared resource"));
      }
      if (!(s.share > 0 && s.share <= 1)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task ", t, ": the share of resource ", s.link, " must be in (0, 1], got ", s.share));
      }
      if (link_stamp_[s.link] == t + 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("task ", t, ": resource ", s.link, " listed twice"));
      }
      link_stamp_[s.link] = t + 1;
    }
  }
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

void Simulator::JoinLinks(const TaskGraph& graph, TaskId task, Seconds now) {
  remaining_[task] = graph.duration(task);
  advanced_at_[task] = now;
  speed_[task] = 0;
  for (uint32_t e = graph.first_share(task); e < graph.first_share(task + 1); ++e) {
    const ResourceId l = graph.all_shares()[e].link;
    if (link_count_[l] == 0) busy_since_[l] = now;
    share_slot_[e] = link_count_[l]++;
    on_link_[first_on_link_[l] + share_slot_[e]] = e;
    if (link_count_[l] >= 2) MarkChanged(l);  // the others on it get a new share
  }
  joined_tasks_.push_back(task);
}

void Simulator::MarkChanged(ResourceId l) {
  if (link_changed_[l]) return;
  link_changed_[l] = 1;
  changed_links_.push_back(l);
}

void Simulator::LeaveLinks(const TaskGraph& graph, TaskId task, Seconds now,
                           SimulationResult& result) {
  for (uint32_t e = graph.first_share(task); e < graph.first_share(task + 1); ++e) {
    const ResourceId l = graph.all_shares()[e].link;
    uint32_t* row = on_link_.data() + first_on_link_[l];
    const uint32_t moved = row[--link_count_[l]];
    row[share_slot_[e]] = moved;
    share_slot_[moved] = share_slot_[e];
    if (link_count_[l] == 0) {
      result.busy[l] += now - busy_since_[l];
    } else {
      MarkChanged(l);  // the others on it may speed up
    }
  }
}

// A link that carries only one task can neither bind it (its share is at most 1) nor join it
// to another: left out of components, so that a flow over many links of its own costs little.
void Simulator::AddToComponent(const TaskGraph& graph, TaskId t) {
  if (task_stamp_[t] == stamp_) return;
  task_stamp_[t] = stamp_;
  component_tasks_.push_back(t);
  for (uint32_t e = graph.first_share(t); e < graph.first_share(t + 1); ++e) {
    const ResourceId l = graph.all_shares()[e].link;
    if (link_stamp_[l] == stamp_ || link_count_[l] <= 1) continue;
    link_stamp_[l] = stamp_;
    component_links_.push_back(l);
  }
}

void Simulator::CollectComponent(const TaskGraph& graph, ResourceId from, TaskId task) {
  size_t next = component_links_.size();
  if (task != ~TaskId{0}) {
    AddToComponent(graph, task);
  } else if (link_stamp_[from] != stamp_) {
    link_stamp_[from] = stamp_;
    component_links_.push_back(from);
  }
  for (; next < component_links_.size(); ++next) {
    const ResourceId l = component_links_[next];
    for (uint32_t i = 0; i < link_count_[l]; ++i) {
      AddToComponent(graph, share_task_[on_link_[first_on_link_[l] + i]]);
    }
  }
}

void Simulator::FillSpeeds(const TaskGraph& graph) {
  for (const ResourceId l : component_links_) {
    frozen_load_[l] = 0;
    open_share_[l] = 0;
    open_count_[l] = link_count_[l];
    for (uint32_t i = 0; i < link_count_[l]; ++i) {
      open_share_[l] += graph.all_shares()[on_link_[first_on_link_[l] + i]].share;
    }
  }
  for (const TaskId t : component_tasks_) frozen_[t] = 0;
  auto freeze = [&](TaskId t, double speed) {
    frozen_[t] = 1;
    speed_[t] = speed;
    for (uint32_t e = graph.first_share(t); e < graph.first_share(t + 1); ++e) {
      const LinkShare& s = graph.all_shares()[e];
      frozen_load_[s.link] += speed * s.share;
      open_share_[s.link] -= s.share;
      --open_count_[s.link];
    }
  };
  // The speed at which link l's open tasks would fill it.
  auto fill_level = [&](ResourceId l) {
    return std::max(0.0, 1.0 - frozen_load_[l]) / std::max(open_share_[l], 1e-300);
  };
  size_t open = component_tasks_.size();
  double level = 0;
  while (open > 0) {
    double next = 1;
    for (const ResourceId l : component_links_) {
      if (open_count_[l] > 0) next = std::min(next, fill_level(l));
    }
    level = std::max(level, next);  // speeds only rise (rounding aside)
    bool saturated = false;
    for (const ResourceId l : component_links_) {
      if (open_count_[l] == 0 || fill_level(l) > level * (1 + 1e-12)) continue;
      saturated = true;
      for (uint32_t i = 0; i < link_count_[l]; ++i) {
        const TaskId t = share_task_[on_link_[first_on_link_[l] + i]];
        if (!frozen_[t]) {
          freeze(t, level);
          --open;
        }
      }
    }
    if (!saturated) {  // every open task runs at full speed
      for (const TaskId t : component_tasks_) {
        if (!frozen_[t]) freeze(t, 1.0);
      }
      open = 0;
    }
  }
}

void Simulator::SetSpeeds(const TaskGraph& graph, Seconds now) {
  if (changed_links_.empty() && joined_tasks_.empty()) return;
  if (++stamp_ == 0) {  // the stamps wrapped: start them over
    std::fill(task_stamp_.begin(), task_stamp_.end(), 0);
    std::fill(link_stamp_.begin(), link_stamp_.end(), 0);
    stamp_ = 1;
  }
  component_tasks_.clear();
  component_links_.clear();
  for (const TaskId t : joined_tasks_) CollectComponent(graph, 0, t);
  joined_tasks_.clear();
  for (const ResourceId l : changed_links_) {
    link_changed_[l] = 0;
    CollectComponent(graph, l, ~TaskId{0});
  }
  changed_links_.clear();
  for (const TaskId t : component_tasks_) {
    remaining_[t] = Max0(remaining_[t] - (now - advanced_at_[t]) * speed_[t]);
    advanced_at_[t] = now;
  }
  FillSpeeds(graph);
  for (const TaskId t : component_tasks_) {
    const Seconds finish = remaining_[t].value() > 0 ? now + remaining_[t] / speed_[t] : now;
    queue_.push_back({.time = finish, .task = t, .generation = ++generation_[t]});
    std::push_heap(queue_.begin(), queue_.end(), EventLater);
  }
}

void Simulator::Finish(const TaskGraph& graph, TaskId task, Seconds now, SimulationResult& result) {
  ++result.events;
  const ResourceId r = graph.resource(task);
  if (graph.order(r) == ResourceOrder::kShared) {
    LeaveLinks(graph, task, now, result);
  } else {
    running_[r] = 0;  // (never set on an unbounded resource)
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
    // Every ready flow homed here joins its links; SetSpeeds then shares them anew.
    TaskId* heap = ready_heap_.data() + first_task_[r];
    for (uint32_t i = 0; i < heap_size_[r]; ++i) {
      const TaskId task = heap[i];
      JoinLinks(graph, task, now);
      result.tasks[task].start = now;
      started_[task] = 1;
    }
    heap_size_[r] = 0;
    return;
  }
  if (graph.order(r) == ResourceOrder::kUnbounded) {
    // Every ready task starts at once, each at full speed.
    TaskId* heap = ready_heap_.data() + first_task_[r];
    for (uint32_t i = 0; i < heap_size_[r]; ++i) {
      const TaskId task = heap[i];
      result.tasks[task].start = now;
      result.tasks[task].finish = now + graph.duration(task);
      started_[task] = 1;
      queue_.push_back({.time = result.tasks[task].finish, .task = task});
      std::push_heap(queue_.begin(), queue_.end(), EventLater);
    }
    heap_size_[r] = 0;
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
  SetSpeeds(graph, Seconds(0));

  // Every finish at one instant is taken before any resource starts its next task, so that a
  // first-ready resource sees all the tasks that became ready at that instant (ties by id); the
  // resources freed or fed then try to start, in id order; then the flows whose links changed
  // are shared anew.
  while (!queue_.empty()) {
    const Seconds now = queue_.front().time;
    touched_.clear();
    while (!queue_.empty() && queue_.front().time == now) {
      std::pop_heap(queue_.begin(), queue_.end(), EventLater);
      const QueuedEvent event = queue_.back();
      queue_.pop_back();
      const bool flow = graph.order(graph.resource(event.task)) == ResourceOrder::kShared;
      if (!flow || event.generation == generation_[event.task]) {
        Finish(graph, event.task, now, result);
      }  // else stale: its speed changed since it was queued
    }
    std::sort(touched_.begin(), touched_.end());
    for (ResourceId r : touched_) {
      is_touched_[r] = 0;
      TryStart(graph, r, now, result);
    }
    SetSpeeds(graph, now);
  }
  result.carried = result.busy;
  for (ResourceId r = 0; r < resources; ++r) {
    if (graph.order(r) == ResourceOrder::kShared) result.carried[r] = Seconds(0);
  }
  for (TaskId t = 0; t < n; ++t) {
    for (const LinkShare& s : graph.shares(t)) result.carried[s.link] += graph.duration(t) * s.share;
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
