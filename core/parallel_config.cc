#include "core/parallel_config.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace projector {

std::string_view PipelineScheduleName(PipelineSchedule s) {
  return s == PipelineSchedule::kZeroBubbleH1 ? kPipelineScheduleNames[1]
                                              : kPipelineScheduleNames[0];
}

absl::StatusOr<PipelineSchedule> ParsePipelineSchedule(std::string_view name) {
  for (PipelineSchedule s : {PipelineSchedule::kOneFOneB, PipelineSchedule::kZeroBubbleH1}) {
    if (PipelineScheduleName(s) == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown pipeline schedule '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "'; accepted: 1f1b, zb-h1"));
}

}  // namespace projector
