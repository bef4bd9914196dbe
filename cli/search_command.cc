#include "cli/search_command.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/cli_options.h"
#include "core/status_macros.h"
#include "cxxopts.hpp"
#include "report/html_report.h"
#include "report/search_report.h"
#include "studies/calibrate.h"
#include "studies/search.h"

namespace projector {
namespace {

constexpr char kDescription[] =
    "Searches every valid parallel layout (TP, PP, VPP, CP, EP, expert TP, DP, micro-batch,\n"
    "recompute, sequence parallelism, DP sharding, MoE switches) of a training job, projects\n"
    "each one and ranks them under a memory limit.\n"
    "\n"
    "Example:\n"
    "  project search --model llama3.1-70b --gpu-arch mi300x --num-gpus 64 --seq-len 8192 \\\n"
    "                 --global-batch 128 --top 10\n";

absl::Status FlagError(absl::string_view flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// A required integer flag in 1..max (the scenario's limits, projection/scenario.h).
absl::StatusOr<int64_t> PositiveInt(const cxxopts::ParseResult& flags, const std::string& name,
                                    int64_t max = std::numeric_limits<int64_t>::max()) {
  if (!flags.count(name)) return FlagError(name, "required");
  int64_t v = 0;
  try {
    v = flags[name].as<int64_t>();
  } catch (const std::exception& e) {
    return FlagError(name, absl::StrCat("expected an integer (", e.what(), ")"));
  }
  if (v <= 0) return FlagError(name, absl::StrCat("must be > 0, got ", v));
  if (v > max) {
    return FlagError(name, absl::StrCat("must be <= ", max, " (beyond any training run), got ", v));
  }
  return v;
}

std::string StringFlag(const cxxopts::ParseResult& flags, const std::string& name) {
  return flags[name].as<std::string>();
}

// "1,2,4,8" -> {1, 2, 4, 8}; each value a positive integer of at most kMaxGpus (every degree
// and micro-batch size the space holds is bounded like this, so their products stay in int64).
absl::StatusOr<std::vector<int64_t>> IntList(const cxxopts::ParseResult& flags,
                                             const std::string& name) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(StringFlag(flags, name), ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v) || v <= 0) {
      return FlagError(name, absl::StrCat("'", std::string(part),
                                          "' is not a positive integer; expected e.g. 1,2,4,8"));
    }
    if (v > kMaxGpus) {
      return FlagError(name,
                       absl::StrCat(v, " is beyond any training run (at most ", kMaxGpus, ")"));
    }
    out.push_back(v);
  }
  return out;
}

// A comma-separated list of names, each parsed by `parse`.
template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> NameList(const cxxopts::ParseResult& flags, const std::string& name,
                                        Parse parse) {
  std::vector<T> out;
  for (absl::string_view part : absl::StrSplit(StringFlag(flags, name), ',')) {
    absl::StatusOr<T> v = parse(std::string(absl::StripAsciiWhitespace(part)));
    if (!v.ok()) return FlagError(name, v.status().message());
    out.push_back(*v);
  }
  return out;
}

absl::StatusOr<bool> ParseOnOff(const std::string& v) {
  if (v == "on" || v == "true") return true;
  if (v == "off" || v == "false") return false;
  return absl::InvalidArgumentError(absl::StrCat("unknown value '", v, "'; accepted: off, on"));
}

absl::StatusOr<bool> ParseGroupedGemm(const std::string& v) {
  if (v == "turbo") return true;
  if (v == "legacy") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown grouped GEMM mode '", v, "'; accepted: turbo, legacy"));
}

absl::StatusOr<Recompute> ParseRecomputeValue(const std::string& v) { return ParseRecompute(v); }

// Applies the --*-values flags to the default space.
absl::Status SpaceFromFlags(const cxxopts::ParseResult& flags, const Scenario& base,
                            SearchSpace& space) {
  struct IntListFlag {
    const char* name;
    std::vector<int64_t>* target;
    bool moe_only;
  };
  const IntListFlag int_lists[] = {
      {"tp-values", &space.tp, false},      {"pp-values", &space.pp, false},
      {"vpp-values", &space.vpp, false},    {"cp-values", &space.cp, false},
      {"ep-values", &space.ep, true},       {"etp-values", &space.etp, true},
      {"micro-batch-values", &space.micro_batch, false}};
  for (const IntListFlag& f : int_lists) {
    if (!flags.count(f.name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*f.target, IntList(flags, f.name));
    if (f.moe_only && !base.model.moe && *f.target != std::vector<int64_t>{1}) {
      return FlagError(f.name, absl::StrCat(base.model.name,
                                            " is a dense model (no experts); accepted: 1"));
    }
  }
  if (flags.count("recompute-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(space.recompute,
                               NameList<Recompute>(flags, "recompute-values", ParseRecomputeValue));
  }
  if (flags.count("sp-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(space.sequence_parallel,
                               NameList<bool>(flags, "sp-values", ParseOnOff));
  }
  if (flags.count("sharding-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(
        space.sharding, NameList<DpSharding>(flags, "sharding-values", [](const std::string& v) {
          return ParseDpSharding(v);
        }));
  }
  if (flags.count("pipeline-schedule-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(
        space.pipeline_schedule,
        NameList<PipelineSchedule>(flags, "pipeline-schedule-values",
                                   [](const std::string& v) { return ParsePipelineSchedule(v); }));
  }
  if (flags.count("grouped-gemm-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(space.turbo_grouped_gemm,
                               NameList<bool>(flags, "grouped-gemm-values", ParseGroupedGemm));
    if (!base.model.moe && space.turbo_grouped_gemm != std::vector<bool>{true}) {
      return FlagError("grouped-gemm-values",
                       absl::StrCat(base.model.name, " is a dense model; accepted: turbo"));
    }
  }
  if (flags.count("deepep-values")) {
    PROJECTOR_ASSIGN_OR_RETURN(space.deepep, NameList<bool>(flags, "deepep-values", ParseOnOff));
    if (!base.model.moe && space.deepep != std::vector<bool>{false}) {
      return FlagError("deepep-values",
                       absl::StrCat(base.model.name, " is a dense model; accepted: off"));
    }
  }
  space.allow_cross_node_tp = flags.count("allow-cross-node-tp") > 0 &&
                              flags["allow-cross-node-tp"].as<bool>();
  return absl::OkStatus();
}

absl::StatusOr<Scenario> BaseScenarioFromFlags(const cxxopts::ParseResult& flags) {
  Scenario s;
  s.name = "search";
  if (!flags.count("model")) {
    return FlagError("model", "required; a library name (see project --list-models) or a file");
  }
  auto model = ResolveModel(StringFlag(flags, "model"));
  if (!model.ok()) return FlagError("model", model.status().message());
  s.model = *std::move(model);
  if (!flags.count("gpu-arch")) {
    return FlagError("gpu-arch", "required; a library name (see project --list-gpus) or a file");
  }
  auto hw = ResolveHardwareProfile(StringFlag(flags, "gpu-arch"));
  if (!hw.ok()) return FlagError("gpu-arch", hw.status().message());
  s.hw = *std::move(hw);
  if (flags.count("hw-overlay")) {
    s.hw_overlay_file = StringFlag(flags, "hw-overlay");
    PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlayFile(s.hw_overlay_file, s.hw));
  }
  if (flags.count("gpus-per-node")) {
    PROJECTOR_ASSIGN_OR_RETURN(s.hw.gpus_per_node, PositiveInt(flags, "gpus-per-node"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(s.num_gpus, PositiveInt(flags, "num-gpus", kMaxGpus));
  if (s.num_gpus > s.hw.gpus_per_node && s.num_gpus % s.hw.gpus_per_node != 0) {
    return FlagError("num-gpus", absl::StrFormat("%d GPUs do not fill whole nodes of %d GPUs; "
                                                 "use a multiple of --gpus-per-node",
                                                 s.num_gpus, s.hw.gpus_per_node));
  }
  PROJECTOR_ASSIGN_OR_RETURN(s.training.seq_len, PositiveInt(flags, "seq-len", kMaxSeqLen));
  PROJECTOR_ASSIGN_OR_RETURN(s.training.global_batch,
                             PositiveInt(flags, "global-batch", kMaxGlobalBatch));
  if (flags.count("precision")) {
    std::string v = StringFlag(flags, "precision");
    if (v != "bf16" && v != "fp16" && v != "fp8") {
      return FlagError("precision",
                       absl::StrCat("unknown precision '", v, "'; accepted: bf16, fp16, fp8"));
    }
    s.training.precision = *ParseDType(v);
  }
  if (flags.count("tp-comm-overlap")) {
    try {
      s.training.tp_comm_overlap = flags["tp-comm-overlap"].as<bool>();
    } catch (const std::exception&) {
      return FlagError("tp-comm-overlap", "expected true or false");
    }
  }
  if (flags.count("grad-reduce-dtype")) {
    auto d = ParseGradReduceDtype(StringFlag(flags, "grad-reduce-dtype"));
    if (!d.ok()) return FlagError("grad-reduce-dtype", d.status().message());
    s.training.grad_reduce_dtype = *d;
  }
  if (flags.count("attention-kernel")) {
    absl::Status k = SetAttentionKernel(StringFlag(flags, "attention-kernel"), s.training);
    if (!k.ok()) return FlagError("attention-kernel", k.message());
  }
  PROJECTOR_ASSIGN_OR_RETURN(const TrainingOverrides stack, ReadStackFlags(flags));
  stack.ApplyTo(s.training);
  PROJECTOR_RETURN_IF_ERROR(ReadMoeRoutingFlags(flags, s.training));
  // The layout-independent checks of training.moe_* (the imbalance is capped per layout).
  {
    Scenario probe = s;
    probe.parallel.ep = 1;
    probe.training.moe_imbalance = 1.0;
    if (absl::Status v = ValidateMoeRouting(probe, "command line"); !v.ok()) return v;
    if (!(s.training.moe_imbalance >= 1.0) || !std::isfinite(s.training.moe_imbalance)) {
      return FlagError("moe-imbalance",
                       absl::StrCat("must be a number >= 1 (1 = balanced), got ",
                                    s.training.moe_imbalance));
    }
    if (s.training.moe_imbalance != 1.0 && !s.model.moe) {
      return FlagError("moe-imbalance",
                       absl::StrCat(s.model.name, " has no experts; leave it out"));
    }
  }
  s.parallel.dp = s.num_gpus;
  return s;
}

}  // namespace

absl::Status RunSearchCommand(int argc, char** argv, std::ostream& out, std::ostream& err) {
  cxxopts::Options options("project search", kDescription);
  // clang-format off
  options.add_options()
    ("h,help", "Show this help")
    ("format", "Output format: text or json (json lists every ranked layout)",
     cxxopts::value<std::string>()->default_value("text"), "FORMAT")
    ("top", "Layouts shown in the text output", cxxopts::value<int64_t>()->default_value("10"),
     "K")
    ("html", "Also write the search as a self-contained HTML page: TGS against peak memory of "
     "every layout with the Pareto front, and the best --top layouts with their commands",
     cxxopts::value<std::string>(), "FILE")
    ("objective", "Rank by tgs (highest first), step-time or memory (lowest first)",
     cxxopts::value<std::string>()->default_value("tgs"), "NAME")
    ("memory-limit-gb", "Peak memory limit per GPU in GB (1e9 B), or none to keep and mark "
     "layouts above HBM less 5% (default: HBM less 5%)", cxxopts::value<std::string>(), "GB|none")
    ("threads", "Worker threads (default: all cores)", cxxopts::value<int64_t>(), "N");
  options.add_options("Job")
    ("model", "Model library name or JSON file", cxxopts::value<std::string>(), "NAME|FILE")
    ("gpu-arch", "GPU hardware profile name or JSON file", cxxopts::value<std::string>(),
     "NAME|FILE")
    ("num-gpus", "GPUs in the job", cxxopts::value<int64_t>(), "N")
    ("gpus-per-node", "GPUs per node (default: the profile's)", cxxopts::value<int64_t>(), "N")
    ("seq-len", "Sequence length in tokens", cxxopts::value<int64_t>(), "N")
    ("global-batch", "Sequences per optimizer step", cxxopts::value<int64_t>(), "N")
    ("precision", "GEMM precision: bf16, fp16 or fp8", cxxopts::value<std::string>(), "DTYPE")
    ("tp-comm-overlap", "TP collectives overlapped with their GEMMs (TE userbuffers)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("grad-reduce-dtype", "Gradient reduction and main-grad buffer dtype: fp32 (default) or bf16",
     cxxopts::value<std::string>(), "fp32|bf16")
    ("attention-kernel", "Attention core: auto (default: PyTorch SDPA's kernel for FSDP-only "
     "layouts, else the profile's default), flash, unfused or a kernel the GPU profile names",
     cxxopts::value<std::string>(), "NAME")
    ("loss-kernel", "Cross-entropy kernel: auto (default: fused for FSDP-only layouts, else "
     "megatron), megatron, pytorch or fused", cxxopts::value<std::string>(),
     "auto|megatron|pytorch|fused")
    ("stack", "Training stack every candidate runs: auto (default: llm-foundry for FSDP-only "
     "layouts, else megatron), megatron, llm-foundry or torchtitan",
     cxxopts::value<std::string>(), "auto|megatron|llm-foundry|torchtitan")
    ("train-metric-passes", "Training metrics on the logits after each micro-batch's backward: "
     "auto (default: 2 for FSDP-only layouts, as Composer/llm-foundry; else 0) or a count",
     cxxopts::value<std::string>(), "auto|N")
    ("torch-compile", "PyTorch-native stacks: torch.compile's fused elementwise kernels "
     "(default false: eager PyTorch)", cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fsdp-impl", "How FSDP candidates shard: auto (default: the stack's), megatron-fsdp, fsdp1 "
     "or fsdp2", cxxopts::value<std::string>(), "auto|megatron-fsdp|fsdp1|fsdp2")
    ("hidden-dropout", "Dropout after the embedding and on each residual branch: auto (default: "
     "0.1 for GELU/LayerNorm GPT models on the megatron stack, Megatron-LM's default; else 0) or "
     "a probability in [0, 1)", cxxopts::value<std::string>(), "auto|P")
    ("attention-dropout", "Dropout on the attention probabilities: auto (default: as "
     "--hidden-dropout) or a probability in [0, 1)", cxxopts::value<std::string>(), "auto|P")
    ("moe-capacity-factor", "MoE: expert capacity as a multiple of the balanced share (default "
     "0 = dropless)", cxxopts::value<std::string>(), "X")
    ("moe-pad-to-capacity", "MoE: pad every expert's input to the capacity",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("moe-imbalance", "MoE what-if: tokens routed to the busiest EP rank over the mean; each "
     "layout takes at most what its EP allows (1 with EP 1)", cxxopts::value<std::string>(), "X")
    ("hw-overlay", "Hardware overlay from `project calibrate` applied to the GPU profile",
     cxxopts::value<std::string>(), "FILE");
  options.add_options("Search space (comma-separated lists; DP is derived)")
    ("tp-values", "TP sizes (default: divisors of num-gpus)", cxxopts::value<std::string>(),
     "LIST")
    ("pp-values", "PP sizes (default: divisors of num-gpus)", cxxopts::value<std::string>(),
     "LIST")
    ("vpp-values", "Virtual stages per PP rank (default: 1,2,4)", cxxopts::value<std::string>(),
     "LIST")
    ("cp-values", "Context-parallel sizes (default: divisors of num-gpus)",
     cxxopts::value<std::string>(), "LIST")
    ("ep-values", "Expert-parallel sizes, MoE (default: divisors of num-gpus)",
     cxxopts::value<std::string>(), "LIST")
    ("etp-values", "Expert-TP sizes, MoE (default: 1,2,4,8)", cxxopts::value<std::string>(),
     "LIST")
    ("micro-batch-values", "Micro-batch sizes (default: 1,2,4,8)", cxxopts::value<std::string>(),
     "LIST")
    ("recompute-values", "none, selective, full (default: all three)",
     cxxopts::value<std::string>(), "LIST")
    ("sp-values", "Megatron sequence parallelism: off, on (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("sharding-values", "dp (replicated), distopt (ZeRO-1), fsdp (default: all three)",
     cxxopts::value<std::string>(), "LIST")
    ("pipeline-schedule-values",
     "1f1b (interleaved with VPP > 1), zb-h1 (zero bubble, VPP 1) (default: 1f1b)",
     cxxopts::value<std::string>(), "LIST")
    ("grouped-gemm-values", "MoE expert GEMMs: turbo, legacy (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("deepep-values", "MoE DeepEP-style dispatch: off, on (default: both)",
     cxxopts::value<std::string>(), "LIST")
    ("allow-cross-node-tp", "Allow TP groups that span nodes",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL");
  // clang-format on
  cxxopts::ParseResult flags;
  try {
    flags = options.parse(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("search: ", ExplainParseError(e, argc, argv),
                                                   " (see project search --help)"));
  }
  if (flags.count("help")) {
    out << options.help({"", "Job", "Search space (comma-separated lists; DP is derived)"});
    return absl::OkStatus();
  }
  if (!flags.unmatched().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("search: unexpected argument '",
                                                   flags.unmatched().front(),
                                                   "' (see project search --help)"));
  }
  const std::string format = StringFlag(flags, "format");
  if (format != "text" && format != "json") {
    return FlagError("format", absl::StrCat("unknown format '", format, "'; accepted: text, json"));
  }
  int64_t top_k = 0;
  try {
    top_k = flags["top"].as<int64_t>();
  } catch (const std::exception& e) {
    return FlagError("top", absl::StrCat("expected an integer (", e.what(), ")"));
  }
  if (top_k <= 0) return FlagError("top", absl::StrCat("must be > 0, got ", top_k));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html"));
  SearchOptions opts;
  {
    auto objective = ParseSearchObjective(StringFlag(flags, "objective"));
    if (!objective.ok()) return FlagError("objective", objective.status().message());
    opts.objective = *objective;
  }
  if (flags.count("threads")) {
    PROJECTOR_ASSIGN_OR_RETURN(int64_t threads, PositiveInt(flags, "threads"));
    opts.threads = static_cast<int>(std::min<int64_t>(threads, 1024));
  }
  PROJECTOR_ASSIGN_OR_RETURN(Scenario base, BaseScenarioFromFlags(flags));
  opts.memory_limit = DefaultMemoryLimit(base.hw);
  if (flags.count("memory-limit-gb")) {
    std::string v = absl::AsciiStrToLower(StringFlag(flags, "memory-limit-gb"));
    if (v == "none") {
      opts.memory_limit = std::nullopt;
    } else {
      auto gb = ParsePositiveList(v, "memory-limit-gb");
      if (!gb.ok() || gb->size() != 1) {
        return FlagError("memory-limit-gb",
                         absl::StrCat("'", v, "' is not a size in GB; accepted: a number > 0 "
                                              "or none"));
      }
      opts.memory_limit = Gigabytes(gb->front());
    }
  }
  opts.space = DefaultSearchSpace(base);
  PROJECTOR_RETURN_IF_ERROR(SpaceFromFlags(flags, base, opts.space));

  bool progress_shown = false;
  opts.progress = [&err, &progress_shown](int64_t done, int64_t total, double elapsed_s) {
    if (elapsed_s < 1.0) return;
    err << absl::StrFormat("\rsearch: %d / %d layouts evaluated (%.0f%%), %.1f s", done, total,
                           total > 0 ? 100.0 * static_cast<double>(done) /
                                           static_cast<double>(total)
                                     : 100.0,
                           elapsed_s)
        << std::flush;
    progress_shown = true;
  };
  absl::StatusOr<SearchResult> result = SearchLayouts(base, opts);
  if (progress_shown) err << "\n";
  if (!result.ok()) return result.status();
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, SearchHtml(base, *result, top_k)));
  }
  if (format == "json") {
    out << SearchResultToJson(base, *result).dump(2) << "\n";
  } else {
    out << FormatSearchText(base, *result, top_k);
  }
  if (!html_path.empty()) {
    (format == "json" ? err : out)
        << "html: report written to " << html_path << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

}  // namespace projector
