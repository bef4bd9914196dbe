// The `project` executable: the command line (cli/dispatch.h) on stdout and stderr.
#include <iostream>

#include "cli/dispatch.h"

int main(int argc, char** argv) {
  const projector::Output io{std::cout, std::cerr};
  return projector::RunCommandLine(argc, argv, io);
}
