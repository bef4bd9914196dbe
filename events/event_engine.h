// The discrete-event engine of the "high" level of detail: tasks with durations on resources,
// dependencies between tasks, simulated in time order.
//
// A resource runs one task at a time, in one of two orders:
//   kInOrder     a GPU stream: its tasks run in the order they were added to it (CUDA stream
//                semantics). A task starts when its predecessor on the stream has finished and
//                its dependencies are met, so a task blocked on a dependency also holds back the
//                tasks added after it (head-of-line blocking).
//   kFirstReady  an exclusive server (a link carrying one transfer at a time): of its tasks whose
//                dependencies are met, the one that became ready first runs first; ties go to the
//                lower task id.
//   kShared      a shared server (a NIC whose bandwidth concurrent transfers split, processor
//                sharing): every task whose dependencies are met runs at once, and while n run
//                each advances at 1/n of its rate, so a task's duration is its time alone. Two
//                tasks of d1 <= d2 started together finish at 2·d1 and d1 + d2; the last of any
//                set finishes at the sum of their durations, as on the exclusive server, but
//                none waits to start.
// A dependency (before, after) lets `after` start no earlier than `before` finishes.
//
// Determinism: events are taken in (time, task id) order, so equal inputs give equal outputs on
// any machine. Allocation: Simulator::Run sizes its buffers once per run (reused across runs of
// the same size); the event loop itself allocates nothing.
#ifndef PROJECTOR_EVENTS_EVENT_ENGINE_H_
#define PROJECTOR_EVENTS_EVENT_ENGINE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/units.h"

namespace projector::events {

using ResourceId = uint32_t;
using TaskId = uint32_t;

enum class ResourceOrder { kInOrder, kFirstReady, kShared };

// The work to simulate. Ids are dense, from 0, in the order of the Add calls.
class TaskGraph {
 public:
  ResourceId AddResource(ResourceOrder order);
  TaskId AddTask(ResourceId resource, Seconds duration);
  // `after` starts no earlier than `before` finishes.
  void AddDependency(TaskId before, TaskId after);
  // Reserves room for this many tasks and dependencies (optional).
  void Reserve(size_t tasks, size_t dependencies);
  // Removes every resource, task and dependency, keeping the memory for the next graph.
  void Clear();

  size_t num_resources() const { return resource_order_.size(); }
  size_t num_tasks() const { return task_resource_.size(); }
  size_t num_dependencies() const { return dependencies_.size(); }
  ResourceOrder order(ResourceId r) const { return resource_order_[r]; }
  ResourceId resource(TaskId t) const { return task_resource_[t]; }
  Seconds duration(TaskId t) const { return task_duration_[t]; }
  const std::vector<std::pair<TaskId, TaskId>>& dependencies() const { return dependencies_; }

 private:
  std::vector<ResourceOrder> resource_order_;
  std::vector<ResourceId> task_resource_;
  std::vector<Seconds> task_duration_;
  std::vector<std::pair<TaskId, TaskId>> dependencies_;
};

struct TaskTimes {
  Seconds start;
  Seconds finish;
};

struct SimulationResult {
  Seconds makespan;              // the last finish; 0 without tasks
  std::vector<TaskTimes> tasks;  // by TaskId
  std::vector<Seconds> busy;     // by ResourceId: the time it ran tasks (kShared: at least one)
  int64_t events = 0;            // task finishes taken from the queue (one per task)
};

// Simulates graphs, keeping its working buffers between runs.
class Simulator {
 public:
  // Validates the graph (resource and task ids in range, durations finite and >= 0) and
  // simulates it into `result`. A task that never runs (a dependency cycle, or an in-order
  // resource whose next task waits on a later task of the same resource) is an error naming it.
  absl::Status Run(const TaskGraph& graph, SimulationResult& result);

 private:
  struct QueuedEvent {
    Seconds time;
    TaskId task;
    // kShared: the resource's generation when queued; a later change of its running set makes
    // the event stale (skipped), its next finish queued anew.
    uint32_t generation = 0;
  };
  // Min-heap order of the event queue: earlier first, then the lower task id, then generation.
  static bool EventLater(const QueuedEvent& a, const QueuedEvent& b);
  absl::Status Prepare(const TaskGraph& graph);
  void Touch(ResourceId r);
  void MakeReady(const TaskGraph& graph, TaskId task, Seconds now);
  void TryStart(const TaskGraph& graph, ResourceId r, Seconds now, SimulationResult& result);
  // A task's finish: frees its resource (kInOrder, kFirstReady) and readies its successors.
  void Finish(const TaskGraph& graph, TaskId task, Seconds now, SimulationResult& result);
  // kShared: the work its running tasks did since it was last advanced (each 1/n of the time).
  void Advance(ResourceId r, Seconds now, SimulationResult& result);
  // kShared: queues the finish of its running task with the least work left (ties: lower id).
  void QueueNextShare(ResourceId r, Seconds now);
  // kShared: at a valid finish event, its task `due` and every running task whose work is done
  // finish.
  void FinishShares(const TaskGraph& graph, ResourceId r, TaskId due, Seconds now,
                    SimulationResult& result);

  // Dependencies as adjacency lists (compressed rows): successors of t are
  // successors_[first_successor_[t] .. first_successor_[t + 1]).
  std::vector<uint32_t> first_successor_;
  std::vector<TaskId> successors_;
  std::vector<uint32_t> unmet_;    // by task: dependencies not finished yet
  std::vector<Seconds> ready_at_;  // by task: when its last dependency finished
  std::vector<uint8_t> ready_;     // by task: dependencies met
  std::vector<uint8_t> started_;   // by task
  // By resource: its tasks in the order added (kInOrder walks them), the next one to run, and
  // whether it is running a task.
  std::vector<uint32_t> first_task_;  // compressed rows into resource_tasks_
  std::vector<TaskId> resource_tasks_;
  std::vector<uint32_t> next_in_order_;
  std::vector<uint8_t> running_;
  // kFirstReady: per resource a min-heap of ready tasks by (ready time, id), stored in its rows
  // of ready_heap_ (a resource never holds more ready tasks than it has tasks).
  std::vector<TaskId> ready_heap_;
  std::vector<uint32_t> heap_size_;
  std::vector<QueuedEvent> queue_;  // min-heap by (time, task, generation)
  // kShared: per resource its running tasks (in its rows of shared_running_), when it was last
  // advanced and its generation; per task the work (seconds alone) it has left.
  std::vector<TaskId> shared_running_;
  std::vector<uint32_t> shared_count_;
  std::vector<Seconds> shared_advanced_;
  std::vector<uint32_t> generation_;
  std::vector<Seconds> remaining_;
  // The resources freed or fed at the current instant, each once.
  std::vector<ResourceId> touched_;
  std::vector<uint8_t> is_touched_;
};

}  // namespace projector::events

#endif  // PROJECTOR_EVENTS_EVENT_ENGINE_H_
