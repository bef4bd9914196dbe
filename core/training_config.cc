#include "core/training_config.h"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/name_table.h"

namespace projector {

std::string_view RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

absl::StatusOr<Recompute> ParseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    if (RecomputeName(r) == name) return r;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown recompute '", absl::string_view(name.data(), name.size()), "'; valid: none, selective, full"));
}

namespace {
constexpr std::string_view kRecomputeModuleNames[kRecomputeModuleCount] = {
    "core_attn", "mla_up_proj", "layernorm", "moe_act", "mlp", "shared_experts", "moe"};
}  // namespace

std::string_view RecomputeModuleName(RecomputeModule m) {
  return kRecomputeModuleNames[static_cast<size_t>(m)];
}

std::vector<std::string> RecomputeModuleNames(RecomputeModules modules) {
  std::vector<std::string> names;
  for (size_t i = 0; i < kRecomputeModuleCount; ++i) {
    if ((modules & RecomputeBit(static_cast<RecomputeModule>(i))) != 0) {
      names.emplace_back(kRecomputeModuleNames[i]);
    }
  }
  return names;
}

std::string RecomputeModulesName(RecomputeModules modules) {
  std::string out;
  for (const std::string& name : RecomputeModuleNames(modules)) {
    out += (out.empty() ? "" : ",") + name;
  }
  return out;
}

std::string RecomputePhrase(Recompute mode, RecomputeModules modules) {
  std::string out(RecomputeName(mode));
  if (mode == Recompute::kSelective && modules != kDefaultRecomputeModules) {
    out += " (" + (modules == 0 ? std::string("no module") : RecomputeModulesName(modules)) + ")";
  }
  return out;
}

absl::StatusOr<RecomputeModules> ParseRecomputeModules(std::string_view list) {
  RecomputeModules modules = 0;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    absl::StatusOr<RecomputeModule> m =
        ParseByName<RecomputeModule>(name, kRecomputeModuleNames, "recompute module");
    if (!m.ok()) return m.status();
    modules |= RecomputeBit(*m);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
    if (list.empty()) return absl::InvalidArgumentError("empty recompute module after ','");
  }
  return modules;
}

std::string_view LossKernelName(LossKernel k) { return kLossKernelNames[static_cast<size_t>(k)]; }

absl::StatusOr<LossKernel> ParseLossKernel(std::string_view name) {
  return ParseByName<LossKernel>(name, kLossKernelNames, "loss kernel");
}

std::string_view TrainingStackName(TrainingStack s) {
  return kTrainingStackNames[static_cast<size_t>(s)];
}

absl::StatusOr<TrainingStack> ParseTrainingStack(std::string_view name) {
  return ParseByName<TrainingStack>(name, kTrainingStackNames, "training stack");
}

std::string_view FsdpImplName(FsdpImpl f) { return kFsdpImplNames[static_cast<size_t>(f)]; }

std::string_view Fp8RecipeName(Fp8Recipe r) { return kFp8RecipeNames[static_cast<size_t>(r)]; }

absl::StatusOr<Fp8Recipe> ParseFp8Recipe(std::string_view name) {
  return ParseByName<Fp8Recipe>(name, kFp8RecipeNames, "FP8 recipe");
}

absl::StatusOr<FsdpImpl> ParseFsdpImpl(std::string_view name) {
  return ParseByName<FsdpImpl>(name, kFsdpImplNames, "FSDP implementation");
}

absl::StatusOr<DType> ParseGradReduceDtype(std::string_view name) {
  if (name == "fp32") return DType::kFp32;
  if (name == "bf16") return DType::kBf16;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", absl::string_view(name.data(), name.size()), "'; accepted: fp32, bf16"));
}

absl::Status SetAttentionKernel(std::string_view value, TrainingConfig& training) {
  if (value.empty()) {
    return absl::InvalidArgumentError(
        "empty attention kernel; valid: auto, flash, unfused or a kernel of the GPU profile");
  }
  if (value == "unfused") {
    training.attention_kernel = AttentionKernel::kUnfused;
    return absl::OkStatus();
  }
  training.attention_kernel = AttentionKernel::kFlash;
  training.flash_kernel = std::string(value);
  return absl::OkStatus();
}

std::string_view AttentionKernelValue(const TrainingConfig& training) {
  if (training.attention_kernel == AttentionKernel::kUnfused) return "unfused";
  return training.flash_kernel;
}

}  // namespace projector
