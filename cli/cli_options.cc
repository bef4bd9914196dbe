#include "cli/cli_options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/status_macros.h"

namespace projector {
namespace {

absl::Status FlagError(const std::string& flag, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

// Reads an integer flag that must be > 0 (or >= 0 when allow_zero).
absl::StatusOr<int64_t> PositiveFlag(const cxxopts::ParseResult& flags, const std::string& name,
                                     bool allow_zero = false) {
  int64_t v = 0;
  try {
    v = flags[name].as<int64_t>();
  } catch (const std::exception& e) {
    return FlagError(name, absl::StrCat("expected an integer (", e.what(), ")"));
  }
  if (allow_zero ? v < 0 : v <= 0) {
    return FlagError(name, absl::StrCat("must be ", allow_zero ? ">= 0" : "> 0", ", got ", v));
  }
  return v;
}

bool Given(const cxxopts::ParseResult& flags, const std::string& name) {
  return flags.count(name) > 0;
}

}  // namespace

void AddScenarioFlags(cxxopts::Options& options) {
  // clang-format off
  options.add_options("Scenario")
    ("scenario", "Scenario JSON file (flags override it)", cxxopts::value<std::string>(), "FILE")
    ("case", "One case of a calibration JSONL file", cxxopts::value<std::string>(), "FILE:ID")
    ("model", "Model library name or JSON file (see --list-models)",
     cxxopts::value<std::string>(), "NAME|FILE")
    ("gpu-arch", "GPU hardware profile name or JSON file (see --list-gpus)",
     cxxopts::value<std::string>(), "NAME|FILE")
    ("num-gpus", "Number of GPUs in the job", cxxopts::value<int64_t>(), "N")
    ("gpus-per-node", "GPUs per node (default: the hardware profile's)",
     cxxopts::value<int64_t>(), "N")
    ("gpu-clock-mhz", "Sustained GPU clock in MHz; a list (1300,1700,2100) runs a what-if sweep",
     cxxopts::value<std::string>(), "MHZ[,MHZ...]")
    ("measured-tgs", "Measured tokens/s/GPU to compare the projection with",
     cxxopts::value<std::string>(), "TGS");
  options.add_options("Parallel layout")
    ("tp", "Tensor parallel size", cxxopts::value<int64_t>(), "N")
    ("pp", "Pipeline parallel size", cxxopts::value<int64_t>(), "N")
    ("vpp", "Virtual pipeline stages per PP rank (interleaved 1F1B)", cxxopts::value<int64_t>(), "N")
    ("cp", "Context parallel size", cxxopts::value<int64_t>(), "N")
    ("ep", "Expert parallel size (borrowed from DP)", cxxopts::value<int64_t>(), "N")
    ("etp", "Tensor parallel size inside an expert", cxxopts::value<int64_t>(), "N")
    ("dp", "Data parallel size (default: num-gpus / (tp·pp·cp))", cxxopts::value<int64_t>(), "N")
    ("sequence-parallel", "Sequence parallelism with TP",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fsdp", "Shard weights, grads and optimizer state over DP",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("distributed-optimizer", "Shard optimizer state over DP (ZeRO-1)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("first-stage-layers", "Layers on the first pipeline stage (uneven split)",
     cxxopts::value<int64_t>(), "N")
    ("last-stage-layers", "Layers on the last pipeline stage (uneven split)",
     cxxopts::value<int64_t>(), "N")
    ("pipeline-schedule",
     "Pipeline schedule: 1f1b (default; interleaved with --vpp > 1) or zb-h1 (zero bubble: "
     "weight gradients deferred into the bubble, vpp 1)",
     cxxopts::value<std::string>(), "1f1b|zb-h1")
    ("moe-grouped-gemm", "MoE expert GEMMs: turbo (one batched GEMM) or legacy (one per expert)",
     cxxopts::value<std::string>(), "turbo|legacy")
    ("deepep", "DeepEP-style dispatch: PXN All-to-All overlapped with compute",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL");
  options.add_options("Training run")
    ("seq-len", "Sequence length in tokens", cxxopts::value<int64_t>(), "N")
    ("micro-batch", "Sequences per micro-batch", cxxopts::value<int64_t>(), "N")
    ("global-batch", "Sequences per optimizer step", cxxopts::value<int64_t>(), "N")
    ("recompute", "Activation recomputation: none, selective or full",
     cxxopts::value<std::string>(), "MODE")
    ("recompute-layers", "Layers per stage recomputed under full recompute (default: all)",
     cxxopts::value<int64_t>(), "N")
    ("precision", "GEMM precision: bf16, fp16 or fp8", cxxopts::value<std::string>(), "DTYPE")
    ("attention-kernel",
     "Attention core: auto (default: PyTorch SDPA's kernel for FSDP layouts, else the GPU "
     "profile's default), flash (the profile's default fused kernel), a kernel the profile names "
     "(fa2, fa3, ...), or unfused (QKᵀ and P·V GEMMs with the softmax over scores in HBM, as "
     "Megatron-LM before FlashAttention)",
     cxxopts::value<std::string>(), "NAME")
    ("loss-kernel",
     "Cross-entropy loss: auto (default: fused for FSDP-only layouts, else megatron), megatron "
     "(vocab-parallel, fp32 softmax kept), pytorch (eager F.cross_entropy under autocast: fp32 "
     "logits copy, log-softmax, NLL) or fused (one online-softmax kernel: flash-attn, Liger)",
     cxxopts::value<std::string>(), "auto|megatron|pytorch|fused")
    ("stack",
     "Training stack whose choices the auto kernels take: auto (default: llm-foundry for "
     "FSDP-only layouts, else megatron), megatron (TE attention, Megatron's loss, Megatron-FSDP), "
     "llm-foundry (PyTorch SDPA, fused loss, Composer's 2 metric passes, FSDP1, eager "
     "elementwise unless --torch-compile) or torchtitan (PyTorch SDPA, eager fp32 loss, FSDP2, "
     "eager elementwise unless --torch-compile)",
     cxxopts::value<std::string>(), "auto|megatron|llm-foundry|torchtitan")
    ("train-metric-passes",
     "Training metrics evaluated on the logits after every micro-batch's backward, one eager "
     "cross-entropy each: auto (default: 2 for FSDP-only layouts, Composer/llm-foundry's "
     "LanguageCrossEntropy and LanguagePerplexity; else 0) or a count",
     cxxopts::value<std::string>(), "auto|N")
    ("torch-compile", "PyTorch-native stacks (llm-foundry, torchtitan): torch.compile fuses "
     "the elementwise chains (RMSNorm, RoPE, SwiGLU) into single kernels, as Megatron's fused "
     "kernels; default false: eager PyTorch, one kernel per op",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fsdp-impl", "How --fsdp shards: auto (default: the stack's: fsdp1 for llm-foundry, fsdp2 "
     "for torchtitan, megatron-fsdp for megatron), megatron-fsdp (persistent buffers, no "
     "copies), fsdp1 (PyTorch FlatParameter FSDP) or fsdp2 (PyTorch per-parameter FSDP, also "
     "Megatron-LM --use-torch-fsdp2)",
     cxxopts::value<std::string>(), "auto|megatron-fsdp|fsdp1|fsdp2")
    ("hidden-dropout", "Dropout probability after the embedding and on each residual branch: "
     "auto (default: 0.1, Megatron-LM's default, for a GELU/LayerNorm GPT model on the megatron "
     "stack; else 0) or a number in [0, 1); > 0 adds the mask kernels and their 1-byte masks",
     cxxopts::value<std::string>(), "auto|P")
    ("attention-dropout", "Dropout probability on the attention probabilities: auto (default: "
     "as --hidden-dropout) or a number in [0, 1); > 0 adds the dropout kernel and its masks to "
     "the unfused attention (flash kernels draw it inside, not timed)",
     cxxopts::value<std::string>(), "auto|P")
    ("tp-comm-overlap", "Overlap TP collectives with their GEMMs (Megatron --tp-comm-overlap, "
     "TE userbuffers; default false)", cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("grad-reduce-dtype", "Gradient reduction and main-grad buffer dtype: fp32 (default, "
     "Megatron under bf16) or bf16 (Megatron --grad-reduce-in-bf16, FSDP reduce_dtype bf16)",
     cxxopts::value<std::string>(), "fp32|bf16")
    ("overlap-grad-reduce", "Overlap the DP gradient reduction with backward (default true)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("overlap-param-gather", "Overlap the distributed optimizer's parameter AllGather with "
     "forward (default true)", cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("moe-capacity-factor", "MoE: each expert takes at most X times its balanced share of "
     "tokens and drops the rest (Megatron --moe-expert-capacity-factor; default 0 = dropless)",
     cxxopts::value<std::string>(), "X")
    ("moe-pad-to-capacity", "MoE: pad every expert's input to the capacity (Megatron "
     "--moe-pad-expert-input-to-capacity)", cxxopts::value<bool>()->implicit_value("true"),
     "BOOL")
    ("moe-imbalance", "MoE what-if: tokens routed to the busiest EP rank over the balanced mean "
     "(default 1 = balanced)", cxxopts::value<std::string>(), "X");
  options.add_options("Backends")
    ("profiling-mode", "simulate, profile, both or measure", cxxopts::value<std::string>(), "MODE")
    ("gemm-backend", "GEMM backend (see --list-backends)", cxxopts::value<std::string>(), "NAME")
    ("attention-backend", "Attention backend", cxxopts::value<std::string>(), "NAME")
    ("memory-backend", "Memory-bound kernel backend", cxxopts::value<std::string>(), "NAME")
    ("collective-backend", "Collective backend", cxxopts::value<std::string>(), "NAME");
  // clang-format on
}

namespace {
// A decimal number and nothing else (absl::SimpleAtod alone also takes hex and "inf").
bool StrictAtod(absl::string_view text, double* v) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty() || text.find_first_not_of("0123456789+-.eE") != absl::string_view::npos) {
    return false;
  }
  return absl::SimpleAtod(text, v) && std::isfinite(*v);
}
}  // namespace

absl::StatusOr<double> ParseNumber(const std::string& text, const std::string& flag) {
  double v = 0;
  if (!StrictAtod(text, &v)) {
    return FlagError(flag, absl::StrCat("'", text, "' is not a number; expected e.g. 1.5"));
  }
  return v;
}

absl::StatusOr<double> NumberFlag(const cxxopts::ParseResult& flags, const std::string& flag) {
  return ParseNumber(flags[flag].as<std::string>(), flag);
}

absl::StatusOr<std::vector<double>> ParsePositiveList(const std::string& text,
                                                      const std::string& flag) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!StrictAtod(part, &v) || v <= 0) {
      return FlagError(flag, absl::StrCat("'", std::string(part),
                                          "' is not a positive number; expected e.g. 1300,1700"));
    }
    out.push_back(v);
  }
  return out;
}

// The path of an output-file flag (--trace, --html): empty when absent; exit 2 for an empty
// name or a mode that does not replay the step.
absl::StatusOr<std::string> OutputFileFlag(const cxxopts::ParseResult& flags,
                                           const std::string& flag, const std::string& mode) {
  if (!flags.count(flag)) return std::string();
  std::string path = flags[flag].as<std::string>();
  if (path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": empty file name; give the path to write"));
  }
  if (mode != "simulate") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, ": written by --profiling-mode simulate only; drop --", flag, " or the mode"));
  }
  return path;
}

absl::Status WriteOutputFile(const std::string& flag, const std::string& path,
                             const std::string& content) {
  std::ofstream file(path);
  if (file) file << content;
  if (!file) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": cannot write '", path, "': ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<double>> ClockListFlag(const cxxopts::ParseResult& flags) {
  PROJECTOR_ASSIGN_OR_RETURN(
      std::vector<double> clocks,
      ParsePositiveList(flags["gpu-clock-mhz"].as<std::string>(), "gpu-clock-mhz"));
  for (double mhz : clocks) {
    if (!(mhz >= kMinClockMhz && mhz <= kMaxClockMhz)) {
      return FlagError("gpu-clock-mhz", absl::StrCat("each clock must be in [", kMinClockMhz, ", ",
                                                     kMaxClockMhz, "] MHz, got ", mhz));
    }
  }
  return clocks;
}

absl::StatusOr<double> ParseByteSize(const std::string& text, const std::string& flag) {
  struct Suffix {
    const char* name;
    double factor;
  };
  static constexpr Suffix kSuffixes[] = {{"GiB", 1073741824.0}, {"MiB", 1048576.0},
                                         {"KiB", 1024.0},       {"TB", 1e12},
                                         {"GB", 1e9},           {"MB", 1e6},
                                         {"KB", 1e3},           {"B", 1.0}};
  absl::string_view body = absl::StripAsciiWhitespace(text);
  double factor = 1.0;
  for (const Suffix& s : kSuffixes) {
    if (absl::ConsumeSuffix(&body, s.name)) {
      factor = s.factor;
      break;
    }
  }
  double v = 0;
  if (!absl::SimpleAtod(body, &v) || !std::isfinite(v) || v < 0) {
    return FlagError(flag, absl::StrCat("'", text,
                                        "' is not a size; expected a number with an optional "
                                        "suffix B, KB, MB, GB, TB, KiB, MiB, GiB"));
  }
  return v * factor;
}

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kUnimplemented:
      return 2;
    case absl::StatusCode::kOutOfRange:  // a check the user asked for failed (accuracy floor)
      return 3;
    default:
      return 1;
  }
}

absl::StatusOr<Scenario> ScenarioFromFlags(const cxxopts::ParseResult& flags) {
  if (Given(flags, "scenario") && Given(flags, "case")) {
    return absl::InvalidArgumentError("--scenario and --case are exclusive; give one of them");
  }
  Scenario s;
  bool from_file = false;
  if (Given(flags, "scenario")) {
    PROJECTOR_ASSIGN_OR_RETURN(s, LoadScenarioFile(flags["scenario"].as<std::string>()));
    from_file = true;
  } else if (Given(flags, "case")) {
    PROJECTOR_ASSIGN_OR_RETURN(s, LoadCalibrationCase(flags["case"].as<std::string>()));
    from_file = true;
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(s, DefaultScenario());
    // What the command line left to the built-in scenario, said in the report.
    const bool layout_given =
        Given(flags, "dp") || Given(flags, "tp") || Given(flags, "pp") || Given(flags, "cp");
    for (auto [flag, value] : {std::pair<const char*, std::string>{"model", s.model.name},
                               {"gpu-arch", s.hw.name},
                               {"num-gpus", absl::StrCat(s.num_gpus)},
                               {"seq-len", absl::StrCat(s.training.seq_len)},
                               {"micro-batch", absl::StrCat(s.training.micro_batch)},
                               {"global-batch", absl::StrCat(s.training.global_batch)}}) {
      if (Given(flags, flag) || (std::string_view(flag) == "num-gpus" && layout_given)) continue;
      s.defaults_used.push_back(
          absl::StrCat(flag, "=", value, " (not given: the built-in default)"));
    }
  }
  if (Given(flags, "model")) {
    auto model = ResolveModel(flags["model"].as<std::string>());
    if (!model.ok()) return FlagError("model", model.status().message());
    s.model = *std::move(model);
  }
  if (Given(flags, "gpu-arch")) {
    auto hw = ResolveHardwareProfile(flags["gpu-arch"].as<std::string>());
    if (!hw.ok()) return FlagError("gpu-arch", hw.status().message());
    s.hw = *std::move(hw);
  }
  if (Given(flags, "gpus-per-node")) {
    PROJECTOR_ASSIGN_OR_RETURN(s.hw.gpus_per_node, PositiveFlag(flags, "gpus-per-node"));
  }
  if (Given(flags, "gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(auto clocks, ClockListFlag(flags));
    // A single clock sets the scenario's clock; a list is a sweep handled by the caller.
    if (clocks.size() == 1) s.hw.gpu.sustained_clock = Megahertz(clocks[0]);
  }
  if (Given(flags, "measured-tgs")) {
    PROJECTOR_ASSIGN_OR_RETURN(double v, NumberFlag(flags, "measured-tgs"));
    if (!(v > 0)) return FlagError("measured-tgs", absl::StrCat("must be > 0, got ", v));
    s.measured_tokens_per_s_per_gpu = v;
  }
  ParallelConfig& p = s.parallel;
  struct IntFlag {
    const char* name;
    int64_t* target;
    bool allow_zero;
  };
  const IntFlag int_flags[] = {
      {"tp", &p.tp, false},
      {"pp", &p.pp, false},
      {"vpp", &p.vpp, false},
      {"cp", &p.cp, false},
      {"ep", &p.ep, false},
      {"etp", &p.etp, false},
      {"first-stage-layers", &p.first_stage_layers, true},
      {"last-stage-layers", &p.last_stage_layers, true},
      {"seq-len", &s.training.seq_len, false},
      {"micro-batch", &s.training.micro_batch, false},
      {"global-batch", &s.training.global_batch, false},
      {"recompute-layers", &s.training.recompute_layers, true},
  };
  bool layout_changed = false;
  for (const IntFlag& f : int_flags) {
    if (!Given(flags, f.name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*f.target, PositiveFlag(flags, f.name, f.allow_zero));
    layout_changed = true;
  }
  struct BoolFlag {
    const char* name;
    bool* target;
  };
  const BoolFlag bool_flags[] = {{"sequence-parallel", &p.sequence_parallel},
                                 {"fsdp", &p.fsdp},
                                 {"distributed-optimizer", &p.distributed_optimizer},
                                 {"deepep", &p.deepep},
                                 {"tp-comm-overlap", &s.training.tp_comm_overlap},
                                 {"overlap-grad-reduce", &s.training.overlap_grad_reduce},
                                 {"overlap-param-gather", &s.training.overlap_param_gather}};
  for (const BoolFlag& f : bool_flags) {
    if (!Given(flags, f.name)) continue;
    try {
      *f.target = flags[f.name].as<bool>();
    } catch (const std::exception& e) {
      return FlagError(f.name, "expected true or false");
    }
  }
  if (Given(flags, "pipeline-schedule")) {
    auto sched = ParsePipelineSchedule(flags["pipeline-schedule"].as<std::string>());
    if (!sched.ok()) return FlagError("pipeline-schedule", sched.status().message());
    p.pipeline_schedule = *sched;
  }
  if (Given(flags, "moe-grouped-gemm")) {
    std::string v = flags["moe-grouped-gemm"].as<std::string>();
    if (v != "turbo" && v != "legacy") {
      return FlagError("moe-grouped-gemm", absl::StrCat("unknown mode '", v,
                                                        "'; accepted: turbo, legacy"));
    }
    p.turbo_grouped_gemm = v == "turbo";
  }
  PROJECTOR_RETURN_IF_ERROR(ReadMoeRoutingFlags(flags, s.training));
  if (Given(flags, "recompute")) {
    auto r = ParseRecompute(flags["recompute"].as<std::string>());
    if (!r.ok()) return FlagError("recompute", r.status().message());
    s.training.recompute = *r;
  }
  if (Given(flags, "grad-reduce-dtype")) {
    auto d = ParseGradReduceDtype(flags["grad-reduce-dtype"].as<std::string>());
    if (!d.ok()) return FlagError("grad-reduce-dtype", d.status().message());
    s.training.grad_reduce_dtype = *d;
  }
  PROJECTOR_ASSIGN_OR_RETURN(const TrainingOverrides stack, ReadStackFlags(flags));
  stack.ApplyTo(s.training);
  if (Given(flags, "attention-kernel")) {
    absl::Status k = SetAttentionKernel(flags["attention-kernel"].as<std::string>(), s.training);
    if (!k.ok()) return FlagError("attention-kernel", k.message());
  }
  if (Given(flags, "precision")) {
    std::string v = flags["precision"].as<std::string>();
    if (v != "bf16" && v != "fp16" && v != "fp8") {
      return FlagError("precision", absl::StrCat("unknown precision '", v,
                                                 "'; accepted: bf16, fp16, fp8"));
    }
    s.training.precision = *ParseDType(v);
  }
  const std::pair<const char*, std::string*> backend_flags[] = {
      {"gemm-backend", &s.backends.gemm},
      {"attention-backend", &s.backends.attention},
      {"memory-backend", &s.backends.memory},
      {"collective-backend", &s.backends.collective}};
  for (const auto& [name, target] : backend_flags) {
    if (Given(flags, name)) *target = flags[name].as<std::string>();
  }
  // DP: explicit, else derived from the GPU count and the other dimensions.
  bool num_gpus_given = Given(flags, "num-gpus");
  if (num_gpus_given) {
    PROJECTOR_ASSIGN_OR_RETURN(s.num_gpus, PositiveFlag(flags, "num-gpus"));
  }
  if (Given(flags, "dp")) {
    PROJECTOR_ASSIGN_OR_RETURN(p.dp, PositiveFlag(flags, "dp"));
  }
  for (bool with_dp : {false, true}) {
    if (with_dp && !Given(flags, "dp")) continue;
    if (const double product = LayoutProduct(p, with_dp); product > kMaxGpus) {
      return FlagError(with_dp ? "dp" : "tp",
                       absl::StrFormat("%s = %.0f GPUs is beyond any training run (at most %d)",
                                       with_dp ? "tp·pp·cp·dp" : "tp·pp·cp", product, kMaxGpus));
    }
  }
  const int64_t model_parallel = p.tp * p.pp * p.cp;
  if (Given(flags, "dp")) {
    if (!num_gpus_given) s.num_gpus = model_parallel * p.dp;
  } else if (num_gpus_given || layout_changed) {
    if (s.num_gpus % model_parallel != 0) {
      return FlagError(num_gpus_given ? "num-gpus" : "tp",
                       absl::StrCat(s.num_gpus, " GPUs are not divisible by tp·pp·cp = ",
                                    model_parallel,
                                    "; choose dimensions whose product divides the GPU count"));
    }
    p.dp = s.num_gpus / model_parallel;
  }
  if (!from_file) DefaultDistributedOptimizer(Given(flags, "distributed-optimizer"), s);
  // Flags may have changed the GPU, the layout or the kernel the file or case resolved.
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(s, "command line"));
  PROJECTOR_RETURN_IF_ERROR(ValidateScenario(s, "command line"));
  return s;
}

absl::StatusOr<std::optional<LossKernel>> LossKernelFlag(const cxxopts::ParseResult& flags) {
  if (!Given(flags, "loss-kernel")) return std::nullopt;
  absl::StatusOr<LossKernel> k = ParseLossKernel(flags["loss-kernel"].as<std::string>());
  if (!k.ok()) return FlagError("loss-kernel", k.status().message());
  return *k;
}

absl::StatusOr<std::optional<TrainingStack>> StackFlag(const cxxopts::ParseResult& flags) {
  if (!Given(flags, "stack")) return std::nullopt;
  absl::StatusOr<TrainingStack> s = ParseTrainingStack(flags["stack"].as<std::string>());
  if (!s.ok()) return FlagError("stack", s.status().message());
  return *s;
}

absl::StatusOr<std::optional<int64_t>> TrainMetricPassesFlag(const cxxopts::ParseResult& flags) {
  if (!Given(flags, "train-metric-passes")) return std::nullopt;
  const std::string v = flags["train-metric-passes"].as<std::string>();
  if (v == "auto") return kAutoTrainMetricPasses;
  int64_t n = 0;
  if (absl::SimpleAtoi(v, &n) && n >= 0 && n <= kMaxTrainMetricPasses) return n;
  return FlagError("train-metric-passes",
                   absl::StrFormat("'%s' is not a pass count; accepted: auto or an integer from 0 "
                                   "to %d",
                                   v, kMaxTrainMetricPasses));
}

// --hidden-dropout / --attention-dropout when given: kAutoDropout for "auto" or the
// probability, nullopt when absent.
absl::StatusOr<std::optional<double>> DropoutFlag(const cxxopts::ParseResult& flags,
                                                  const char* name) {
  if (!Given(flags, name)) return std::nullopt;
  const std::string v = flags[name].as<std::string>();
  if (v == "auto") return kAutoDropout;
  double p = 0;
  if (StrictAtod(v, &p) && p >= 0 && p < 1) return p;
  return FlagError(name, absl::StrFormat("'%s' is not a dropout probability; accepted: auto or "
                                         "a number in [0, 1)",
                                         v));
}

absl::StatusOr<TrainingOverrides> ReadStackFlags(const cxxopts::ParseResult& flags) {
  TrainingOverrides out;
  PROJECTOR_ASSIGN_OR_RETURN(out.stack, StackFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(out.loss_kernel, LossKernelFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(out.train_metric_passes, TrainMetricPassesFlag(flags));
  if (Given(flags, "torch-compile")) {
    try {
      out.torch_compile = flags["torch-compile"].as<bool>();
    } catch (const std::exception&) {
      return FlagError("torch-compile", "expected true or false");
    }
  }
  if (Given(flags, "fsdp-impl")) {
    absl::StatusOr<FsdpImpl> f = ParseFsdpImpl(flags["fsdp-impl"].as<std::string>());
    if (!f.ok()) return FlagError("fsdp-impl", f.status().message());
    out.fsdp_impl = *f;
  }
  PROJECTOR_ASSIGN_OR_RETURN(out.hidden_dropout, DropoutFlag(flags, "hidden-dropout"));
  PROJECTOR_ASSIGN_OR_RETURN(out.attention_dropout, DropoutFlag(flags, "attention-dropout"));
  return out;
}

absl::Status ReadMoeRoutingFlags(const cxxopts::ParseResult& flags, TrainingConfig& training) {
  for (auto [name, target] : {std::pair<const char*, double*>{"moe-capacity-factor",
                                                               &training.moe_capacity_factor},
                              {"moe-imbalance", &training.moe_imbalance}}) {
    if (!Given(flags, name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, NumberFlag(flags, name));
  }
  if (Given(flags, "moe-pad-to-capacity")) {
    try {
      training.moe_pad_to_capacity = flags["moe-pad-to-capacity"].as<bool>();
    } catch (const std::exception&) {
      return FlagError("moe-pad-to-capacity", "expected true or false");
    }
  }
  return absl::OkStatus();
}

std::string ExplainParseError(const std::exception& e, int argc, char** argv) {
  std::string what = e.what();
  const std::string open = "\xe2\x80\x98", close = "\xe2\x80\x99";  // ‘ ’
  size_t a = what.find(open);
  size_t b = a == std::string::npos ? a : what.find(close, a + open.size());
  if (what.find("failed to parse") == std::string::npos || b == std::string::npos) return what;
  std::string value = what.substr(a + open.size(), b - a - open.size());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == value && i > 1 && argv[i - 1][0] == '-') {
      return absl::StrCat(argv[i - 1], ": '", value, "' is not a valid value for this flag");
    }
    size_t eq = arg.find('=');
    if (eq != std::string::npos && arg.substr(eq + 1) == value) {
      return absl::StrCat(arg.substr(0, eq), ": '", value, "' is not a valid value for this flag");
    }
  }
  return what;
}

}  // namespace projector
