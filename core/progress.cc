#include "core/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "core/number_format.h"

namespace projector {
namespace {

constexpr double kShowAfterS = 1.0;
constexpr double kRedrawEveryS = 0.1;
constexpr int kBarWidth = 24;

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

bool ProgressWanted(bool quiet, bool forced) {
  if (quiet) return false;
  return forced || isatty(STDERR_FILENO) != 0;
}

std::string ProgressLine(const std::string& label, int64_t done, int64_t total, double elapsed_s) {
  const double fraction =
      total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0)
                : 0.0;
  const int filled = static_cast<int>(std::lround(fraction * kBarWidth));
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kBarWidth - filled), '.');
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  std::string left = "";
  if (rate > 0 && done < total) {
    left = absl::StrFormat(", %.0f s left", static_cast<double>(total - done) / rate);
  }
  return absl::StrFormat("%s [%s] %s/%s (%.0f%%) %.1f/s%s", label, bar, FormatCount(done),
                         FormatCount(total), 100 * fraction, rate, left);
}

ProgressBar::ProgressBar(std::ostream& out, std::string label, bool enabled)
    : out_(out),
      label_(std::move(label)),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void ProgressBar::Update(int64_t done, int64_t total) {
  if (!enabled_) return;
  const double elapsed = Since(start_);
  if (elapsed < kShowAfterS || (drawn_ && Since(last_) < kRedrawEveryS && done < total)) return;
  last_ = std::chrono::steady_clock::now();
  out_ << "\r" << ProgressLine(label_, done, total, elapsed) << "\033[K" << std::flush;
  drawn_ = true;
}

void ProgressBar::Finish() {
  if (drawn_) out_ << "\n" << std::flush;
  drawn_ = false;
}

}  // namespace projector
