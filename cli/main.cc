// The `project` executable: the command line (cli/dispatch.h) on stdout and stderr; under an MPI
// launcher, rank 0 prints and every other rank serves its study (cli/mpi_team.h).
#include <iostream>
#include <ostream>

#include "cli/dispatch.h"
#ifdef PROJECTOR_MPI
#include "cli/mpi_team.h"
#endif

int main(int argc, char** argv) {
#ifdef PROJECTOR_MPI
  if (projector::LaunchedByMpi()) {
    projector::MpiTeam team(argc, argv, std::cerr);
    std::ostream silent(nullptr);
    const bool prints = team.coordinator();
    const projector::Output io{prints ? std::cout : silent, prints ? std::cerr : silent, &team};
    const int code = projector::RunCommandLine(argc, argv, io);
    std::cout.flush();
    return code;
  }
#endif
  const projector::Output io{std::cout, std::cerr};
  return projector::RunCommandLine(argc, argv, io);
}
