// The ranks of an MPI job as a WorkTeam (core/work_team.h): `mpirun -np N project search ...`
// (or `srun`) starts N copies of the command; rank 0 runs the study and prints, every other rank
// serves it. Built when CMake finds MPI (Open MPI from Debian's packages); the executable uses it
// only when an MPI launcher started it.
//
// Protocol (MPI_COMM_WORLD, rank 0 the coordinator): a serving rank sends kReady with its lanes
// when its study starts; the coordinator keeps each rank's lanes busy with kTask messages (a
// chunk id and its request) and receives kReply (the id and the reply), all with non-blocking
// sends, so neither side waits on the other's receive; kEnd ends the study. Only the main thread
// of a rank calls MPI (MPI_THREAD_FUNNELED); the lanes are threads that exchange work with it.
//
// A rank that dies (a node failure, a kill) makes the launcher stop the job with SIGTERM; rank 0
// then prints which tasks each rank held and how many were never handed out, and exits 1 before
// the launcher's SIGKILL: never a silent partial answer. When a study ends rank 0 prints on stderr
// how many tasks each rank evaluated ("mpi: 2 ranks, tasks evaluated: rank 0 1190, rank 1 1195").
#ifndef PROJECTOR_CLI_MPI_TEAM_H_
#define PROJECTOR_CLI_MPI_TEAM_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "core/work_team.h"

namespace projector {

// Whether an MPI launcher (mpirun, mpiexec, srun with PMI/PMIx) started this process.
bool LaunchedByMpi();

class MpiTeam final : public WorkTeam {
 public:
  // MPI_Init_thread; `err` receives rank 0's report of a stopped job.
  MpiTeam(int& argc, char**& argv, std::ostream& err);
  ~MpiTeam() override;  // MPI_Finalize
  MpiTeam(const MpiTeam&) = delete;
  MpiTeam& operator=(const MpiTeam&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int Lanes(int requested) const override;
  absl::Status Distribute(const TaskHooks& hooks, int lanes) override;
  absl::Status Serve(const PerformFn& perform, int lanes) override;
  void EndStudy() override;
  // Coordinator, over every study so far: the chunks handed out to other ranks and gathered
  // back, and the wall time its main thread spent on them (MPI calls, collect): what a chunk
  // costs the coordinator, whose main thread all ranks share.
  int64_t GatheredChunks() const { return all_remote_chunks_ + remote_chunks_; }
  double GatherSeconds() const { return all_gather_s_ + gather_s_; }

 private:
  int rank_ = 0;
  int size_ = 1;
  int ranks_on_node_ = 1;
  std::ostream& err_;
  // Coordinator: the lanes each serving rank announced in this study (0: not yet), and the tasks
  // each rank evaluated in it (printed on stderr when the study ends: how the work was split).
  std::vector<int> lanes_of_;
  std::vector<int64_t> tasks_of_;
  int coordinator_lanes_ = 0;
  int64_t remote_chunks_ = 0;  // this study
  double gather_s_ = 0;
  int64_t all_remote_chunks_ = 0;  // every study
  double all_gather_s_ = 0;
};

}  // namespace projector

#endif  // PROJECTOR_CLI_MPI_TEAM_H_
