#include "studies/search_flags.h"

#include <algorithm>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "core/status_macros.h"

namespace projector {
namespace {

constexpr FlagSpec kRunFlags[] = {
    {"objective", "Rank by tgs (highest first), step-time or memory (lowest first)", "NAME",
     FlagArity::kValue, "tgs"},
    {"memory-limit-gb",
     "Peak memory limit per GPU in GB (1e9 B), or none to keep and mark layouts above HBM less 5% "
     "(default: HBM less 5%)",
     "GB|none"},
    {"threads",
     "Worker threads (under MPI: on each rank; default: every core, shared by the ranks of a node)",
     "N"},
    {"explore-splits",
     "Also try every first/last pipeline stage split of each layout with PP > 1 (time objectives)",
     "BOOL", FlagArity::kBool, "true"},
    {"prune",
     "Skip layouts and splits whose step lower bound (busiest rank's passes, pipeline fill and "
     "drain) cannot reach the --top best; false projects every one",
     "BOOL", FlagArity::kBool, "true"},
};
constexpr FlagSpec kSpaceFlags[] = {
    {"tp-values", "TP sizes (default: divisors of num-gpus)", "LIST"},
    {"pp-values", "PP sizes (default: divisors of num-gpus)", "LIST"},
    {"vpp-values", "Virtual stages per PP rank (default: 1,2,4)", "LIST"},
    {"cp-values", "Context-parallel sizes (default: divisors of num-gpus)", "LIST"},
    {"ep-values", "Expert-parallel sizes, MoE (default: divisors of num-gpus)", "LIST"},
    {"etp-values", "Expert-TP sizes, MoE (default: 1,2,4,8)", "LIST"},
    {"micro-batch-values", "Micro-batch sizes (default: 1,2,4,8)", "LIST"},
    {"recompute-values", "none, selective, full (default: all three)", "LIST"},
    {"recompute-modules-values",
     "Megatron-Core module sets a selective candidate takes, comma-separated, the modules of a "
     "set joined by + (e.g. core_attn,mla_up_proj+layernorm+moe_act; default: "
     "--recompute-modules, else core_attn)",
     "LIST"},
    {"sp-values", "Megatron sequence parallelism: off, on (default: both)", "LIST"},
    {"sharding-values", "dp (replicated), distopt (ZeRO-1), fsdp (default: all three)", "LIST"},
    {"pipeline-schedule-values",
     "1f1b (interleaved with VPP > 1), zb-h1 (zero bubble, VPP 1) (default: 1f1b)", "LIST"},
    {"grouped-gemm-values", "MoE expert GEMMs: turbo, legacy (default: both)", "LIST"},
    {"deepep-values", "MoE DeepEP-style dispatch: off, on (default: both)", "LIST"},
    {"allow-cross-node-tp", "Allow TP groups that span nodes", "BOOL", FlagArity::kBool},
    // A fixed dimension narrows the search to it, as on the projection's command line.
    {"tp", "Fix TP (as --tp-values N)", "N"},
    {"pp", "Fix PP (as --pp-values N)", "N"},
    {"vpp", "Fix the virtual stages per PP rank (as --vpp-values N)", "N"},
    {"cp", "Fix CP (as --cp-values N)", "N"},
    {"ep", "Fix EP, MoE (as --ep-values N)", "N"},
    {"etp", "Fix expert-TP, MoE (as --etp-values N)", "N"},
    {"micro-batch", "Fix the micro-batch (as --micro-batch-values N)", "N"},
};

absl::StatusOr<bool> ParseOnOff(absl::string_view v) {
  if (v == "on" || v == "true") return true;
  if (v == "off" || v == "false") return false;
  return absl::InvalidArgumentError(absl::StrCat("unknown value '", v, "'; accepted: off, on"));
}

absl::StatusOr<bool> ParseGroupedGemm(absl::string_view v) {
  if (v == "turbo") return true;
  if (v == "legacy") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown grouped GEMM mode '", v, "'; accepted: turbo, legacy"));
}

// A switch list of a dense model may only hold the value that means "no experts".
template <typename T>
absl::Status DenseModelAccepts(const Scenario& base, absl::string_view flag,
                               const std::vector<T>& values, const std::vector<T>& dense_value,
                               absl::string_view accepted) {
  if (base.model.moe || values == dense_value) return absl::OkStatus();
  return FlagError(flag, absl::StrCat(base.model.name, accepted));
}

absl::Status ReadDegreeLists(const FlagValues& flags, const Scenario& base, SearchSpace& space) {
  const std::tuple<const char*, const char*, std::vector<int64_t>*, bool> lists[] = {
      {"tp-values", "tp", &space.tp, false},
      {"pp-values", "pp", &space.pp, false},
      {"vpp-values", "vpp", &space.vpp, false},
      {"cp-values", "cp", &space.cp, false},
      {"ep-values", "ep", &space.ep, true},
      {"etp-values", "etp", &space.etp, true},
      {"micro-batch-values", "micro-batch", &space.micro_batch, false}};
  for (const auto& [name, fixed, target, moe_only] : lists) {
    if (Given(flags, fixed)) {
      if (Given(flags, name)) {
        return FlagError(fixed, absl::StrCat("fixes what --", name, " lists; give one of them"));
      }
      PROJECTOR_ASSIGN_OR_RETURN(const int64_t v,
                                 IntFlag(flags, fixed, IntRange{.min = 1, .max = kMaxGpus}));
      *target = {v};
    } else if (Given(flags, name)) {
      PROJECTOR_ASSIGN_OR_RETURN(*target, IntListFlag(flags, name, kMaxGpus));
    } else {
      continue;
    }
    if (moe_only) {
      PROJECTOR_RETURN_IF_ERROR(
          DenseModelAccepts<int64_t>(base, Given(flags, fixed) ? fixed : name, *target, {1},
                                     " is a dense model (no experts); accepted: 1"));
    }
  }
  return absl::OkStatus();
}

// A module set of --recompute-modules-values: names joined by '+'.
absl::StatusOr<RecomputeModules> ParseRecomputeModuleSet(absl::string_view set) {
  return ParseRecomputeModules(absl::StrReplaceAll(set, {{"+", ","}}));
}

// --recompute-modules-values: each set valid for the base's model and stack under selective
// recompute (ValidateRecomputeModules), so that a set the model cannot take is refused here
// instead of emptying the selective candidates.
absl::Status ReadRecomputeModuleSets(const FlagValues& flags, const Scenario& base,
                                     SearchSpace& space) {
  constexpr absl::string_view kFlag = "recompute-modules-values";
  if (!Given(flags, kFlag)) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(space.selective_modules,
                             NameListFlag<RecomputeModules>(flags, kFlag, &ParseRecomputeModuleSet));
  for (RecomputeModules modules : space.selective_modules) {
    Scenario probe = base;
    probe.training.recompute = Recompute::kSelective;
    probe.training.recompute_modules = modules;
    if (absl::Status s = ValidateRecomputeModules(probe, "search"); !s.ok()) {
      return FlagError(kFlag, s.message());
    }
  }
  return absl::OkStatus();
}

// The --*-values flags over the default space of the base scenario.
absl::StatusOr<SearchSpace> SpaceFromFlags(const FlagValues& flags, const Scenario& base) {
  SearchSpace space = DefaultSearchSpace(base);
  PROJECTOR_RETURN_IF_ERROR(ReadDegreeLists(flags, base, space));
  auto list = [&flags]<typename T>(absl::string_view name, std::vector<T>& target,
                                   auto parse) -> absl::Status {
    if (!Given(flags, name)) return absl::OkStatus();
    PROJECTOR_ASSIGN_OR_RETURN(target, NameListFlag<T>(flags, name, parse));
    return absl::OkStatus();
  };
  PROJECTOR_RETURN_IF_ERROR(list("recompute-values", space.recompute, &ParseRecompute));
  PROJECTOR_RETURN_IF_ERROR(ReadRecomputeModuleSets(flags, base, space));
  PROJECTOR_RETURN_IF_ERROR(list("sp-values", space.sequence_parallel, &ParseOnOff));
  PROJECTOR_RETURN_IF_ERROR(list("sharding-values", space.sharding, &ParseDpSharding));
  PROJECTOR_RETURN_IF_ERROR(
      list("pipeline-schedule-values", space.pipeline_schedule, &ParsePipelineSchedule));
  PROJECTOR_RETURN_IF_ERROR(
      list("grouped-gemm-values", space.turbo_grouped_gemm, &ParseGroupedGemm));
  PROJECTOR_RETURN_IF_ERROR(DenseModelAccepts<bool>(base, "grouped-gemm-values",
                                                    space.turbo_grouped_gemm, {true},
                                                    " is a dense model; accepted: turbo"));
  PROJECTOR_RETURN_IF_ERROR(list("deepep-values", space.deepep, &ParseOnOff));
  PROJECTOR_RETURN_IF_ERROR(DenseModelAccepts<bool>(base, "deepep-values", space.deepep, {false},
                                                    " is a dense model; accepted: off"));
  PROJECTOR_ASSIGN_OR_RETURN(space.allow_cross_node_tp, BoolFlag(flags, "allow-cross-node-tp"));
  return space;
}

// --memory-limit-gb: a size in GB, or none; the default is HBM less the reserve.
absl::StatusOr<std::optional<Bytes>> MemoryLimitFlag(const FlagValues& flags,
                                                     const Scenario& base) {
  if (!Given(flags, "memory-limit-gb")) return DefaultMemoryLimit(base.hw);
  const std::string v = absl::AsciiStrToLower(StringFlag(flags, "memory-limit-gb"));
  if (v == "none") return std::nullopt;
  absl::StatusOr<std::vector<double>> gb = ParsePositiveList(v, "memory-limit-gb");
  if (!gb.ok() || gb->size() != 1) {
    return FlagError("memory-limit-gb",
                     absl::StrCat("'", v, "' is not a size in GB; accepted: a number > 0 or none"));
  }
  return Gigabytes(gb->front());
}

}  // namespace

std::span<const FlagSpec> SearchRunFlags() { return kRunFlags; }
std::span<const FlagSpec> SearchMemoryAndThreadFlags() {
  return std::span(kRunFlags).subspan(1, 2);
}
std::span<const FlagSpec> SearchSpaceFlags() { return kSpaceFlags; }

absl::StatusOr<SearchOptions> SearchOptionsFromFlags(const FlagValues& flags,
                                                     const Scenario& base) {
  SearchOptions opts;
  PROJECTOR_ASSIGN_OR_RETURN(
      std::optional<SearchObjective> objective,
      ParsedFlag<SearchObjective>(flags, "objective", &ParseSearchObjective));
  opts.objective = objective.value_or(SearchObjective::kTokensPerGpu);
  if (Given(flags, "threads")) {
    PROJECTOR_ASSIGN_OR_RETURN(const int64_t threads, IntFlag(flags, "threads"));
    opts.threads = static_cast<int>(std::min<int64_t>(threads, 1024));
  }
  PROJECTOR_ASSIGN_OR_RETURN(opts.memory_limit, MemoryLimitFlag(flags, base));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "explore-splits", opts.explore_splits));
  PROJECTOR_RETURN_IF_ERROR(ReadBoolFlag(flags, "prune", opts.prune));
  PROJECTOR_ASSIGN_OR_RETURN(opts.space, SpaceFromFlags(flags, base));
  return opts;
}

}  // namespace projector
