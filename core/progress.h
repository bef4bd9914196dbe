// A progress bar for long runs on stderr: "search ████████░░░░ 1,204/4,000 (30%) 812/s, 3 s left",
// redrawn in place. It appears only once a run has taken longer than a second, and only where
// the caller enables it (a terminal, or --progress; never with --quiet), so logs and pipes stay
// clean.
#ifndef PROJECTOR_CORE_PROGRESS_H_
#define PROJECTOR_CORE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace projector {

// Whether to draw: --quiet never, --progress always, otherwise when stderr is a terminal.
bool ProgressWanted(bool quiet, bool forced);

// The line drawn for `done` of `total` after `elapsed_s` seconds (no carriage return).
std::string ProgressLine(const std::string& label, int64_t done, int64_t total, double elapsed_s);

class ProgressBar {
 public:
  ProgressBar(std::ostream& out, std::string label, bool enabled);
  // Redraws with `done` of `total` (at most ten times a second, from a second on).
  void Update(int64_t done, int64_t total);
  // Ends the line when one was drawn.
  void Finish();

 private:
  std::ostream& out_;
  std::string label_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace projector

#endif  // PROJECTOR_CORE_PROGRESS_H_
