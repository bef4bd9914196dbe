// The command line as a function (cli/dispatch.h): the C++ side of the Python module's cost
// (issue 28 point 4; docs/python.md compares projector.project() with it).
#include <sstream>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "cli/dispatch.h"

namespace projector {
namespace {

// One projection of Llama-3.1-70B, TP8 PP2 on 64 H100, as `project ... --format json`, output
// captured: flag parsing, the projection, its bottlenecks (each recommendation re-projected) and
// the JSON document.
void BM_CommandLine_ProjectJson(benchmark::State& state) {
  std::vector<std::string> args = {"project",
                                   "--model",
                                   "llama3.1-70b",
                                   "--gpu-arch",
                                   "h100-sxm",
                                   "--num-gpus",
                                   "64",
                                   "--tp",
                                   "8",
                                   "--pp",
                                   "2",
                                   "--seq-len",
                                   "8192",
                                   "--global-batch",
                                   "128",
                                   "--sequence-parallel",
                                   "--format",
                                   "json"};
  for (auto _ : state) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    std::ostringstream out, err;
    const int code = RunCommandLine(static_cast<int>(argv.size()), argv.data(), Output{out, err});
    if (code != 0) {
      state.SkipWithError("the command failed");
      return;
    }
    benchmark::DoNotOptimize(out.str().size());
  }
}
BENCHMARK(BM_CommandLine_ProjectJson)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace projector
