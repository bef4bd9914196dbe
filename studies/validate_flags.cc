#include "studies/validate_flags.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "scenario/scenario_flags.h"

namespace projector {
namespace {

constexpr FlagSpec kRunFlags[] = {
    {"cases", "Calibration JSONL file (the ../shared/calibration schema)", "FILE"},
    {"threads", "Worker threads (default: all cores)", "N"},
    {"only", "Only the cases whose id or source contains TEXT", "TEXT"},
    {"gpu", "Only the cases on this GPU", "NAME"},
    {"model-family", "Only the cases of dense models or of MoE models", "dense|moe"},
    {"hw-overlay",
     "Hardware overlays from `project calibrate` (comma-separated), each applied to the cases on "
     "the GPU it was fitted for",
     "FILE[,FILE]", FlagArity::kRepeated},
    {"fit-scales",
     "Also fit, per source and GPU with 3 or more cases, the compute scale that best matches them "
     "(project calibrate --cases), to show which stack is off by how much",
     "", FlagArity::kSwitch},
    {"sensitivity",
     "Also re-project every case with each run setting switched alone (as project --sensitivity) "
     "and count the cases measured within the range they span",
     "", FlagArity::kSwitch},
    {"min-within-20-pct", "Fail (exit 3) when fewer cases are within 20%", "PCT"},
    {"max-median-error-pct", "Fail (exit 3) when the median |error| is larger", "PCT"},
    {"max-not-fitting",
     "Fail (exit 3) when more measured cases are projected not to fit in HBM (they ran, so the "
     "memory model overestimates them)",
     "N"},
};
constexpr FlagSpec kOverlapWhatIfs[] = {
    {"overlap-grad-reduce",
     "DP gradient reduction overlapped with backward (default true; false = after the backward, as "
     "Megatron-LM before 2023)",
     "BOOL", FlagArity::kBool},
    {"distributed-optimizer",
     "Every non-FSDP case with DP > 1: optimizer state sharded over DP (default true, the case "
     "format does not say; false = replicated, as Megatron-LM before 2022)",
     "BOOL", FlagArity::kBool},
};

// A --attention-kernel value for validate: auto, flash, unfused or a kernel some library
// profile names; any other name is a typo (no case's GPU could run it).
absl::StatusOr<std::string> ValidationKernel(const std::string& value) {
  std::vector<std::string> valid(std::begin(kAttentionKernelRequests),
                                 std::end(kAttentionKernelRequests));
  for (std::string& name : ListLibraryAttentionKernels()) valid.push_back(std::move(name));
  if (std::find(valid.begin(), valid.end(), value) != valid.end()) return value;
  return FlagError("attention-kernel", absl::StrCat("unknown kernel '", value,
                                                    "'; valid: ", absl::StrJoin(valid, ", ")));
}

}  // namespace

absl::StatusOr<ValidationOptions> ValidationOptionsFromFlags(const FlagValues& flags) {
  ValidationOptions v;
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t threads,
                             IntFlag(flags, "threads", {.min = 0, .max = 1024}, 0));
  v.threads = static_cast<int>(threads);
  if (Given(flags, "only")) v.only = StringFlag(flags, "only");
  if (Given(flags, "attention-kernel")) {
    PROJECTOR_ASSIGN_OR_RETURN(v.attention_kernel,
                               ValidationKernel(StringFlag(flags, "attention-kernel")));
  }
  PROJECTOR_ASSIGN_OR_RETURN(v.training, ReadStackFlags(flags));
  v.sensitivity = Given(flags, "sensitivity");
  if (Given(flags, "model-family")) {
    v.model_family = StringFlag(flags, "model-family");
    if (v.model_family != "dense" && v.model_family != "moe") {
      return FlagError("model-family", absl::StrCat("unknown family '", v.model_family,
                                                    "'; accepted: dense, moe"));
    }
  }
  if (Given(flags, "gpu")) {
    v.gpu = StringFlag(flags, "gpu");
    if (absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(v.gpu); !hw.ok()) {
      return FlagError("gpu", hw.status().message());
    }
  }
  for (const std::string& paths : flags.All("hw-overlay")) {
    for (absl::string_view path : absl::StrSplit(paths, ',')) {
      PROJECTOR_ASSIGN_OR_RETURN(ValidationOptions::Overlay o,
                                 LoadValidationOverlay(std::string(path)));
      v.hw_overlays.push_back(std::move(o));
    }
  }
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "tp-comm-overlap", v.tp_comm_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "moe-a2a-overlap", v.moe_a2a_overlap));
  PROJECTOR_RETURN_IF_ERROR(
      ReadBoolFlag(flags, "moe-shared-expert-overlap", v.moe_shared_expert_overlap));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "overlap-grad-reduce", v.overlap_grad_reduce));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "distributed-optimizer", v.distributed_optimizer));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<DType> grad_dtype,
                             ParsedFlag<DType>(flags, "grad-reduce-dtype", &ParseGradReduceDtype));
  if (grad_dtype) v.grad_reduce_dtype = *grad_dtype;
  return v;
}

absl::StatusOr<AccuracyFloor> AccuracyFloorFromFlags(const FlagValues& flags) {
  AccuracyFloor floor;
  for (auto [name, target] : {std::pair{"max-median-error-pct", &floor.max_median_abs_error_pct},
                              {"min-within-20-pct", &floor.min_within_20_pct},
                              {"max-not-fitting", &floor.max_not_fitting}}) {
    if (!Given(flags, name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, NumberFlag(flags, name));
  }
  return floor;
}

std::span<const FlagSpec> ValidationRunFlags() { return kRunFlags; }

std::vector<FlagSpec> ValidationWhatIfFlags() {
  std::vector<FlagSpec> flags;
  for (std::span<const FlagSpec> group :
       {KernelAndCommFlags(), StackFlags(), std::span<const FlagSpec>(kOverlapWhatIfs)}) {
    flags.insert(flags.end(), group.begin(), group.end());
  }
  return flags;
}

}  // namespace projector
