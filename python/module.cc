// The native half of the Python module `projector` (python/projector/__init__.py is the other):
// one function that runs the command line (cli/dispatch.h) on captured streams with the GIL
// released, so Python gets exactly what `project` prints, its exit code and its messages.
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/dispatch.h"
#include "pybind11/pybind11.h"
#include "pybind11/stl.h"

namespace {

// run(["serve", "--model", ...]) -> (exit code, stdout, stderr).
std::tuple<int, std::string, std::string> Run(const std::vector<std::string>& args) {
  std::vector<std::string> owned;
  owned.reserve(args.size() + 1);
  owned.emplace_back("project");
  owned.insert(owned.end(), args.begin(), args.end());
  std::vector<char*> argv;
  argv.reserve(owned.size() + 1);
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  int code = 0;
  {
    pybind11::gil_scoped_release release;
    const projector::Output io{out, err};
    code = projector::RunCommandLine(static_cast<int>(owned.size()), argv.data(), io);
  }
  return {code, out.str(), err.str()};
}

}  // namespace

PYBIND11_MODULE(_projector, m) {
  m.doc() = "The projector command line as a function (see projector.run).";
  m.def("run", &Run, pybind11::arg("args"),
        "Runs `project ARGS...` and returns (exit code, stdout, stderr). The GIL is released "
        "while it runs.");
}
