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
//   kShared      a shared server (a NIC or a network link whose bandwidth concurrent transfers
//                split): every task whose dependencies are met runs at once, and while n run
//                each advances at 1/n of its rate, so a task's duration is its time alone. Two
//                tasks of d1 <= d2 started together finish at 2·d1 and d1 + d2; the last of any
//                set finishes at the sum of their durations, as on the exclusive server, but
//                none waits to start.
//   kUnbounded   a delay (a latency, a barrier): every task whose dependencies are met runs at
//                once at full speed; busy is the sum of its tasks' durations.
// A flow (AddFlow) runs on several shared resources at once: a collective's step whose
// transfers cross many links, using on each link a share of its capacity (1 on the links that
// bound it alone, less on the others). Its speed (1 = its duration alone) is set max-min fairly
// with every other running task on those links (progressive filling): all speeds rise together
// until a link is full (the sum over its tasks of speed · share reaches 1), the tasks on it keep
// that speed, and the rest rise on; a task alone runs at 1. A task added with AddTask on a shared
// resource is a flow of share 1 on it, so on one resource this is the processor sharing above.
// Speeds are set anew whenever a task joins or leaves a link, for the tasks linked to it through
// shared links (its component), and the finishes queued before are marked stale.
// A dependency (before, after) lets `after` start no earlier than `before` finishes.
//
// Determinism: events are taken in (time, task id) order, so equal inputs give equal outputs on
// any machine. Allocation: Simulator::Run sizes its buffers once per run (reused across runs of
// the same size); the event loop itself allocates nothing.
#ifndef PROJECTOR_EVENTS_EVENT_ENGINE_H_
#define PROJECTOR_EVENTS_EVENT_ENGINE_H_

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "core/units.h"

namespace projector::events {

using ResourceId = uint32_t;
using TaskId = uint32_t;
// No task: a dependency or predecessor not (yet) there.
inline constexpr TaskId kNoTask = ~TaskId{0};

enum class ResourceOrder { kInOrder, kFirstReady, kShared, kUnbounded };

// A flow's use of one shared resource: the share of its capacity the flow takes when it runs at
// full speed (0 < share <= 1).
struct LinkShare {
  ResourceId link = 0;
  double share = 1;
};

// The work to simulate. Ids are dense, from 0, in the order of the Add calls.
class TaskGraph {
 public:
  ResourceId AddResource(ResourceOrder order);
  TaskId AddTask(ResourceId resource, Seconds duration);
  // A task on several shared resources at once (see the file comment); `shares` not empty, its
  // resources kShared and distinct. Its resource() is the first.
  TaskId AddFlow(std::span<const LinkShare> shares, Seconds duration);
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
  // The shared resources task t runs on (empty for a task on an in-order or first-ready one).
  std::span<const LinkShare> shares(TaskId t) const {
    return {shares_.data() + first_share_[t], first_share_[t + 1] - first_share_[t]};
  }
  size_t num_shares() const { return shares_.size(); }
  // Every task's shares, task by task: task t's start at first_share(t).
  const std::vector<LinkShare>& all_shares() const { return shares_; }
  uint32_t first_share(TaskId t) const { return first_share_[t]; }
  const std::vector<std::pair<TaskId, TaskId>>& dependencies() const { return dependencies_; }

 private:
  std::vector<ResourceOrder> resource_order_;
  std::vector<ResourceId> task_resource_;
  std::vector<Seconds> task_duration_;
  std::vector<std::pair<TaskId, TaskId>> dependencies_;
  // Compressed rows of each task's shares: task t's are shares_[first_share_[t] ..
  // first_share_[t + 1]).
  std::vector<uint32_t> first_share_ = {0};
  std::vector<LinkShare> shares_;
};

struct TaskTimes {
  Seconds start;
  Seconds finish;
};

struct SimulationResult {
  Seconds makespan;              // the last finish; 0 without tasks
  std::vector<TaskTimes> tasks;  // by TaskId
  // By ResourceId: the time it ran tasks (kShared: at least one; kUnbounded: their sum).
  std::vector<Seconds> busy;
  // By ResourceId: the capacity it gave its tasks, in seconds of its whole rate: for a kShared
  // resource the sum over its tasks of duration · share (at most `busy`; equal where every share
  // is 1); for the others `busy`. Over the makespan: its utilisation.
  std::vector<Seconds> carried;
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
    // A task on shared resources: its generation when queued; a change of its speed since makes
    // the event stale (skipped), its finish queued anew.
    uint32_t generation = 0;
  };
  // Min-heap order of the event queue: earlier first, then the lower task id, then generation.
  static bool EventLater(const QueuedEvent& a, const QueuedEvent& b);
  absl::Status Prepare(const TaskGraph& graph);
  // Every task on a shared resource has shares; every share names a distinct shared resource
  // with 0 < share <= 1.
  absl::Status CheckShares(const TaskGraph& graph);
  void Touch(ResourceId r);
  void MakeReady(const TaskGraph& graph, TaskId task, Seconds now);
  void TryStart(const TaskGraph& graph, ResourceId r, Seconds now, SimulationResult& result);
  // A task's finish: frees its resource (kInOrder, kFirstReady) or leaves its links (a flow),
  // and readies its successors.
  void Finish(const TaskGraph& graph, TaskId task, Seconds now, SimulationResult& result);
  // A flow joins or leaves its links; the links are marked for SetSpeeds.
  void JoinLinks(const TaskGraph& graph, TaskId task, Seconds now);
  void LeaveLinks(const TaskGraph& graph, TaskId task, Seconds now, SimulationResult& result);
  // For the flows linked to a marked link: their work done at the old speeds, their max-min
  // fair speeds anew (progressive filling), and their finishes queued.
  void SetSpeeds(const TaskGraph& graph, Seconds now);
  void MarkChanged(ResourceId link);
  // The component (running tasks joined through links that carry two or more) of `task`, or of
  // link `from`'s tasks when `task` is ~0, added to component_tasks_ and component_links_.
  void CollectComponent(const TaskGraph& graph, ResourceId from, TaskId task);
  void AddToComponent(const TaskGraph& graph, TaskId t);
  void FillSpeeds(const TaskGraph& graph);

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
  // Flows. Per task: the work (seconds at full speed) it had left when last advanced, when
  // that was, its speed and generation. Per share entry (the graph's rows): its slot in its
  // link's running row. Per link: its running share entries (in rows sized by the shares on
  // it), since when it has been busy, and the marks of SetSpeeds.
  std::vector<Seconds> remaining_;
  std::vector<Seconds> advanced_at_;
  std::vector<double> speed_;
  std::vector<uint32_t> generation_;
  std::vector<uint32_t> share_slot_;
  std::vector<TaskId> share_task_;  // per share entry: its task
  std::vector<uint32_t> first_on_link_;
  std::vector<uint32_t> on_link_;  // share entry indices
  std::vector<uint32_t> link_count_;
  std::vector<Seconds> busy_since_;
  std::vector<ResourceId> changed_links_;
  std::vector<TaskId> joined_tasks_;  // started this instant
  std::vector<uint8_t> link_changed_;
  // SetSpeeds scratch: the component's tasks and links, visit stamps, per link the load of
  // frozen tasks and the shares of the others, per task whether its speed is fixed.
  std::vector<TaskId> component_tasks_;
  std::vector<ResourceId> component_links_;
  std::vector<uint32_t> task_stamp_, link_stamp_;
  uint32_t stamp_ = 0;
  std::vector<double> frozen_load_, open_share_;
  std::vector<uint32_t> open_count_;
  std::vector<uint8_t> frozen_;
  // The resources freed or fed at the current instant, each once.
  std::vector<ResourceId> touched_;
  std::vector<uint8_t> is_touched_;
};

}  // namespace projector::events

#endif  // PROJECTOR_EVENTS_EVENT_ENGINE_H_
