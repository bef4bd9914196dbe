// The `project` executable: parses flags, dispatches to the main projection or a subcommand
// (estimate, validate, search), prints, and maps errors to exit codes (2 = bad input,
// 1 = internal error). No modelling happens here.
#include <algorithm>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/backend_registry.h"
#include "cli/cli_options.h"
#include "cli/profile_commands.h"
#include "cli/search_command.h"
#include "core/status_macros.h"
#include "cxxopts.hpp"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "nlohmann/json.hpp"
#include "projection/projection.h"
#include "report/calibrate_report.h"
#include "report/html_report.h"
#include "report/report.h"
#include "report/validate_report.h"
#include "report/what_if_report.h"
#include "scenario/scenario.h"
#include "studies/calibrate.h"
#include "studies/validate.h"
#include "studies/what_if.h"

namespace projector {
namespace {

using nlohmann::json;

constexpr char kUsage[] =
    "Projects LLM training throughput (tokens/GPU/s) for a model, GPU, cluster and layout.\n"
    "\n"
    "  project [flags]                          project one training step\n"
    "  project estimate gemm|attention|collective [flags]   time one op\n"
    "  project validate --cases FILE.jsonl      projected vs measured over benchmark cases\n"
    "  project search --model M --gpu-arch G --num-gpus N --seq-len S --global-batch B\n"
    "                                           rank every valid layout under a memory limit\n"
    "  project calibrate --profile FILE         fit efficiency constants to a measured profile\n"
    "\n"
    "Example:\n"
    "  project --profiling-mode simulate --gpu-arch mi300x --model llama3.1-70b --num-gpus 64 \\\n"
    "          --fsdp --recompute full --seq-len 8192 --micro-batch 1 --global-batch 64\n";

struct Output {
  std::ostream& out;
  std::ostream& err;
};

// Checks --format and returns true for json.
absl::StatusOr<bool> WantsJson(const cxxopts::ParseResult& flags) {
  if (!flags.count("format")) return false;
  std::string f = flags["format"].as<std::string>();
  if (f == "json") return true;
  if (f == "text") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("--format: unknown format '", f, "'; accepted: text, json"));
}

void AddCommonFlags(cxxopts::Options& options) {
  options.add_options()("h,help", "Show this help")(
      "format", "Output format: text or json", cxxopts::value<std::string>(), "FORMAT");
}

std::string ListModels() {
  std::string out;
  for (const std::string& name : ListLibraryModels()) {
    auto m = ResolveModel(name);
    if (!m.ok()) {
      absl::StrAppend(&out, name, "  (", m.status().message(), ")\n");
      continue;
    }
    absl::StrAppendFormat(&out, "%-22s %-26s %4d layers  hidden %6d  %s%.1fB params\n", name,
                          m->name, m->num_layers, m->hidden_size,
                          m->moe ? absl::StrFormat("MoE %dx top-%d  ", m->moe->num_experts,
                                                   m->moe->top_k)
                                 : std::string(),
                          m->TotalParameters() / 1e9);
  }
  return out;
}

std::string ListGpus() {
  std::string out;
  for (const std::string& name : ListLibraryGpus()) {
    auto hw = ResolveHardwareProfile(name);
    if (!hw.ok()) {
      absl::StrAppend(&out, name, "  (", hw.status().message(), ")\n");
      continue;
    }
    const GpuSpec& g = hw->gpu;
    absl::StrAppendFormat(
        &out, "%-15s %4d CUs/SMs  bf16 %7.1f TFLOP/s @ %4.0f MHz  HBM %6.1f GiB %4.2f TB/s  %d/node\n",
        name, g.compute_units, ToTeraFlopsPerSecond(g.MatrixPeak(DType::kBf16, g.peak_clock)),
        ToMegahertz(g.peak_clock), g.hbm_capacity / Gibibytes(1), g.hbm_bandwidth.value() / 1e12,
        hw->gpus_per_node);
  }
  return out;
}

absl::StatusOr<HardwareProfile> HardwareFromFlags(const cxxopts::ParseResult& flags) {
  if (!flags.count("gpu-arch")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-arch: required; valid: ", absl::StrJoin(ListLibraryGpus(), ", ")));
  }
  auto hw = ResolveHardwareProfile(flags["gpu-arch"].as<std::string>());
  if (!hw.ok()) return absl::InvalidArgumentError(absl::StrCat("--gpu-arch: ", hw.status().message()));
  if (flags.count("gpus-per-node")) {
    int64_t g = flags["gpus-per-node"].as<int64_t>();
    if (g <= 0) return absl::InvalidArgumentError(absl::StrCat("--gpus-per-node: must be > 0, got ", g));
    hw->gpus_per_node = g;
  }
  if (flags.count("gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(double mhz, NumberFlag(flags, "gpu-clock-mhz"));
    if (!(mhz >= kMinClockMhz && mhz <= kMaxClockMhz)) {
      return absl::InvalidArgumentError(absl::StrCat("--gpu-clock-mhz: must be in [", kMinClockMhz,
                                                     ", ", kMaxClockMhz, "] MHz, got ", mhz));
    }
    hw->gpu.sustained_clock = Megahertz(mhz);
  }
  return hw;
}

// `shown` is the flag name in messages when it differs from the option name.
// Upper bounds of the estimate shapes, far beyond any layer: they keep tile and wave counts (a
// product of up to three of them over the tile sizes) inside int64.
constexpr int64_t kMaxEstimateDim = int64_t{1} << 24;    // m, n, k, sequence lengths, ranks
constexpr int64_t kMaxEstimateCount = int64_t{1} << 16;  // batch, heads, head dims

absl::StatusOr<int64_t> RequiredPositive(const cxxopts::ParseResult& flags, const char* name,
                                         const char* shown = nullptr,
                                         int64_t max = kMaxEstimateDim) {
  const char* label = shown ? shown : name;
  if (!flags.count(name) && !flags[name].has_default()) {
    return absl::InvalidArgumentError(absl::StrCat("--", label, ": required"));
  }
  int64_t v = flags[name].as<int64_t>();
  if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("--", label, ": must be > 0, got ", v));
  if (v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", label, ": must be <= ", max, " (beyond any layer), got ", v));
  }
  return v;
}

absl::StatusOr<DType> DTypeFlag(const cxxopts::ParseResult& flags) {
  std::string name = flags.count("dtype") ? flags["dtype"].as<std::string>() : "bf16";
  auto d = ParseDType(name);
  if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat("--dtype: ", d.status().message()));
  return *d;
}

absl::Status RunEstimate(int argc, char** argv, Output& io) {
  if (argc < 3) {
    return absl::InvalidArgumentError(
        "estimate: which op? accepted: gemm, attention, collective (e.g. project estimate gemm "
        "--gpu-arch h100-sxm --m 8192 --n 8192 --k 8192)");
  }
  std::string kind = argv[2];
  cxxopts::Options options(absl::StrCat("project estimate ", kind), "Estimate one op.");
  AddCommonFlags(options);
  // clang-format off
  options.add_options()
    ("gpu-arch", "GPU profile name or file", cxxopts::value<std::string>(), "NAME|FILE")
    ("gpus-per-node", "GPUs per node", cxxopts::value<int64_t>(), "N")
    ("gpu-clock-mhz", "Sustained clock override", cxxopts::value<std::string>(), "MHZ")
    ("dtype", "bf16, fp16, fp8, fp32, tf32, fp4", cxxopts::value<std::string>(), "DTYPE");
  // clang-format on
  if (kind == "gemm") {
    options.add_options()("gemm-m", "M (given as --m)", cxxopts::value<int64_t>(), "N")(
        "gemm-n", "N (given as --n)", cxxopts::value<int64_t>(), "N")(
        "gemm-k", "K (given as --k)", cxxopts::value<int64_t>(), "N")("batch", "Batch count", cxxopts::value<int64_t>(), "N")(
        "gemm-backend", "GEMM backend", cxxopts::value<std::string>()->default_value("tile"), "NAME");
  } else if (kind == "attention") {
    options.add_options()("batch", "Sequences", cxxopts::value<int64_t>(), "N")(
        "heads", "Query heads", cxxopts::value<int64_t>(), "N")(
        "kv-heads", "Key/value heads (default: heads)", cxxopts::value<int64_t>(), "N")(
        "seq-q", "Query length", cxxopts::value<int64_t>(), "N")(
        "seq-kv", "Key/value length (default: seq-q)", cxxopts::value<int64_t>(), "N")(
        "head-dim", "QK and V head dim", cxxopts::value<int64_t>(), "N")(
        "qk-head-dim", "QK head dim (MLA: 192)", cxxopts::value<int64_t>(), "N")(
        "v-head-dim", "V head dim (MLA: 128)", cxxopts::value<int64_t>(), "N")(
        "causal", "Causal mask", cxxopts::value<bool>()->default_value("true")->implicit_value("true"), "BOOL")(
        "pass", "fwd or bwd", cxxopts::value<std::string>()->default_value("fwd"), "PASS")(
        "attention-backend", "Attention backend", cxxopts::value<std::string>()->default_value("tile"), "NAME");
  } else if (kind == "collective") {
    options.add_options()("op", "allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast",
                          cxxopts::value<std::string>(), "OP")(
        "bytes", "Message size (nccl-tests convention), e.g. 1GiB", cxxopts::value<std::string>(), "SIZE")(
        "ranks", "Group size", cxxopts::value<int64_t>(), "N")(
        "stride", "Distance between group ranks in the global rank order", cxxopts::value<int64_t>()->default_value("1"), "N")(
        "algorithm", "auto, ring, tree, direct, halving-doubling, hierarchical, pxn",
        cxxopts::value<std::string>()->default_value("auto"), "NAME")(
        "collective-backend", "Collective backend", cxxopts::value<std::string>()->default_value("hierarchical"), "NAME");
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("estimate: unknown op '", kind, "'; accepted: gemm, attention, collective"));
  }
  // cxxopts needs long flags of two or more letters: --m/--n/--k are read as --gemm-m/n/k.
  std::vector<std::string> storage;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    for (const char* dim : {"m", "n", "k"}) {
      std::string flag = absl::StrCat("--", dim);
      if (arg == flag || arg.rfind(flag + "=", 0) == 0) {
        arg = absl::StrCat("--gemm-", dim, arg.substr(flag.size()));
      }
    }
    storage.push_back(std::move(arg));
  }
  std::vector<char*> args;
  for (std::string& a : storage) args.push_back(a.data());
  cxxopts::ParseResult flags;
  try {
    flags = options.parse(static_cast<int>(args.size()), args.data());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        "estimate ", kind, ": ", ExplainParseError(e, argc, argv)));
  }
  if (flags.count("help")) {
    io.out << options.help();
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(bool as_json, WantsJson(flags));
  PROJECTOR_ASSIGN_OR_RETURN(HardwareProfile hw, HardwareFromFlags(flags));
  json j;
  j["gpu"] = hw.name;
  j["clock_mhz"] = ToMegahertz(hw.gpu.sustained_clock);
  std::string text;
  if (kind == "gemm") {
    GemmShape shape;
    PROJECTOR_ASSIGN_OR_RETURN(shape.m, RequiredPositive(flags, "gemm-m", "m"));
    PROJECTOR_ASSIGN_OR_RETURN(shape.n, RequiredPositive(flags, "gemm-n", "n"));
    PROJECTOR_ASSIGN_OR_RETURN(shape.k, RequiredPositive(flags, "gemm-k", "k"));
    if (flags.count("batch")) {
      PROJECTOR_ASSIGN_OR_RETURN(shape.batch,
                                 RequiredPositive(flags, "batch", nullptr, kMaxEstimateCount));
    }
    PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
    auto backend = MakeGemmBackend(flags["gemm-backend"].as<std::string>(), hw);
    if (!backend.ok()) return absl::InvalidArgumentError(absl::StrCat("--gemm-backend: ", backend.status().message()));
    PROJECTOR_ASSIGN_OR_RETURN(GemmEstimate e, (*backend)->Estimate(shape));
    double tflops = ToTeraFlopsPerSecond(GemmFlops(shape) / e.time);
    j.update({{"op", "gemm"}, {"backend", std::string((*backend)->name())}, {"m", shape.m}, {"n", shape.n},
              {"k", shape.k}, {"batch", shape.batch}, {"dtype", std::string(DTypeName(shape.dtype))},
              {"time_s", e.time.value()}, {"tflops", tflops}, {"bound", std::string(BoundName(e.bound))},
              {"tile", {e.tile_m, e.tile_n, e.tile_k}}, {"waves", e.waves},
              {"clock_scaled_time_s", e.clock_scaled_time.value()}});
    text = absl::StrFormat(
        "GEMM %dx%dx%d batch %d %s on %s @ %.0f MHz (%s backend)\n  time      %.3f us\n  "
        "achieved  %.1f TFLOP/s\n  tile      %dx%dx%d, %d waves\n  bound     %s\n",
        shape.m, shape.n, shape.k, shape.batch, DTypeName(shape.dtype), hw.name,
        ToMegahertz(hw.gpu.sustained_clock), (*backend)->name(), ToMicroseconds(e.time), tflops,
        e.tile_m, e.tile_n, e.tile_k, e.waves, BoundName(e.bound));
  } else if (kind == "attention") {
    AttentionShape shape;
    PROJECTOR_ASSIGN_OR_RETURN(shape.batch,
                               RequiredPositive(flags, "batch", nullptr, kMaxEstimateCount));
    PROJECTOR_ASSIGN_OR_RETURN(shape.num_q_heads,
                               RequiredPositive(flags, "heads", nullptr, kMaxEstimateCount));
    shape.num_kv_heads = shape.num_q_heads;
    if (flags.count("kv-heads")) {
      PROJECTOR_ASSIGN_OR_RETURN(shape.num_kv_heads, RequiredPositive(flags, "kv-heads"));
    }
    PROJECTOR_ASSIGN_OR_RETURN(shape.seq_q, RequiredPositive(flags, "seq-q"));
    shape.seq_kv = shape.seq_q;
    if (flags.count("seq-kv")) {
      PROJECTOR_ASSIGN_OR_RETURN(shape.seq_kv, RequiredPositive(flags, "seq-kv"));
    }
    if (flags.count("head-dim")) {
      PROJECTOR_ASSIGN_OR_RETURN(shape.qk_head_dim,
                                 RequiredPositive(flags, "head-dim", nullptr, kMaxEstimateCount));
      shape.v_head_dim = shape.qk_head_dim;
    }
    if (flags.count("qk-head-dim")) {
      PROJECTOR_ASSIGN_OR_RETURN(
          shape.qk_head_dim, RequiredPositive(flags, "qk-head-dim", nullptr, kMaxEstimateCount));
    }
    if (flags.count("v-head-dim")) {
      PROJECTOR_ASSIGN_OR_RETURN(shape.v_head_dim,
                                 RequiredPositive(flags, "v-head-dim", nullptr, kMaxEstimateCount));
    }
    if (shape.qk_head_dim <= 0 || shape.v_head_dim <= 0) {
      return absl::InvalidArgumentError("--head-dim: required (or --qk-head-dim and --v-head-dim)");
    }
    shape.causal = flags["causal"].as<bool>();
    PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
    std::string pass_name = flags["pass"].as<std::string>();
    if (pass_name != "fwd" && pass_name != "bwd") {
      return absl::InvalidArgumentError(absl::StrCat("--pass: unknown pass '", pass_name, "'; accepted: fwd, bwd"));
    }
    AttentionPass pass = pass_name == "fwd" ? AttentionPass::kForward : AttentionPass::kBackward;
    auto backend = MakeAttentionBackend(flags["attention-backend"].as<std::string>(), hw);
    if (!backend.ok()) return absl::InvalidArgumentError(absl::StrCat("--attention-backend: ", backend.status().message()));
    PROJECTOR_ASSIGN_OR_RETURN(AttentionEstimate e, (*backend)->Estimate(shape, pass));
    double tflops = ToTeraFlopsPerSecond(AttentionFlops(shape, pass) / e.time);
    j.update({{"op", "attention"}, {"backend", std::string((*backend)->name())}, {"pass", pass_name},
              {"batch", shape.batch}, {"heads", shape.num_q_heads}, {"kv_heads", shape.num_kv_heads},
              {"seq_q", shape.seq_q}, {"seq_kv", shape.seq_kv}, {"qk_head_dim", shape.qk_head_dim},
              {"v_head_dim", shape.v_head_dim}, {"causal", shape.causal},
              {"dtype", std::string(DTypeName(shape.dtype))}, {"time_s", e.time.value()},
              {"tflops", tflops}, {"bound", std::string(BoundName(e.bound))},
              {"tile", {e.tile_q, e.tile_kv}}, {"waves", e.waves},
              {"clock_scaled_time_s", e.clock_scaled_time.value()}});
    text = absl::StrFormat(
        "Attention %s B%d H%d/%d Sq%d Skv%d D%d/%d %s %s on %s @ %.0f MHz (%s backend)\n  time      "
        "%.3f us\n  achieved  %.1f TFLOP/s\n  tile      %dx%d, %d waves\n  bound     %s\n",
        pass_name, shape.batch, shape.num_q_heads, shape.num_kv_heads, shape.seq_q, shape.seq_kv,
        shape.qk_head_dim, shape.v_head_dim, shape.causal ? "causal" : "non-causal",
        DTypeName(shape.dtype), hw.name, ToMegahertz(hw.gpu.sustained_clock), (*backend)->name(),
        ToMicroseconds(e.time), tflops, e.tile_q, e.tile_kv, e.waves, BoundName(e.bound));
  } else {
    CollectiveOp op;
    if (!flags.count("op")) {
      return absl::InvalidArgumentError(
          "--op: required; accepted: allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast");
    }
    std::string op_name = flags["op"].as<std::string>();
    bool found = false;
    for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kAllGather,
                             CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll,
                             CollectiveKind::kSendRecv, CollectiveKind::kBroadcast}) {
      if (CollectiveKindName(k) == op_name) {
        op.kind = k;
        found = true;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--op: unknown collective '", op_name,
          "'; accepted: allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast"));
    }
    if (!flags.count("bytes")) return absl::InvalidArgumentError("--bytes: required (e.g. 1GiB)");
    PROJECTOR_ASSIGN_OR_RETURN(double bytes, ParseByteSize(flags["bytes"].as<std::string>(), "bytes"));
    op.bytes = Bytes(bytes);
    PROJECTOR_ASSIGN_OR_RETURN(op.group.size, RequiredPositive(flags, "ranks"));
    PROJECTOR_ASSIGN_OR_RETURN(op.group.stride, RequiredPositive(flags, "stride"));
    auto algorithm = ParseCollectiveAlgorithm(flags["algorithm"].as<std::string>());
    if (!algorithm.ok()) return absl::InvalidArgumentError(absl::StrCat("--algorithm: ", algorithm.status().message()));
    auto backend = MakeCollectiveBackend(flags["collective-backend"].as<std::string>(), hw);
    if (!backend.ok()) return absl::InvalidArgumentError(absl::StrCat("--collective-backend: ", backend.status().message()));
    PROJECTOR_ASSIGN_OR_RETURN(CollectiveEstimate e, (*backend)->Estimate(op, *algorithm));
    double busbw = ToGigabytesPerSecond(e.bus_bandwidth);
    j.update({{"op", op_name}, {"backend", std::string((*backend)->name())}, {"bytes", bytes},
              {"ranks", op.group.size}, {"stride", op.group.stride}, {"time_s", e.time.value()},
              {"bus_bandwidth_gbps", busbw}, {"algorithm", std::string(CollectiveAlgorithmName(e.algorithm))},
              {"nodes_spanned", e.nodes_spanned}, {"ranks_per_node", e.ranks_per_node},
              {"bound", std::string(BoundName(e.bound))}});
    text = absl::StrFormat(
        "%s of %.4g bytes over %d ranks (stride %d) on %s, %d per node (%s backend)\n  time      "
        "%.3f us\n  bus bw    %.1f GB/s\n  algorithm %s\n  placement %d nodes x %d ranks\n  bound     %s\n",
        op_name, bytes, op.group.size, op.group.stride, hw.name, hw.gpus_per_node,
        (*backend)->name(), ToMicroseconds(e.time), busbw, CollectiveAlgorithmName(e.algorithm),
        e.nodes_spanned, e.ranks_per_node, BoundName(e.bound));
  }
  io.out << (as_json ? j.dump(2) + "\n" : text);
  return absl::OkStatus();
}

// A --attention-kernel value for validate: auto, flash, unfused or a kernel some library
// profile names; any other name is a typo (no case's GPU could run it).
absl::StatusOr<std::string> ValidationKernel(const std::string& value) {
  std::vector<std::string> valid(std::begin(kAttentionKernelRequests),
                                   std::end(kAttentionKernelRequests));
  for (std::string& name : ListLibraryAttentionKernels()) valid.push_back(std::move(name));
  if (std::find(valid.begin(), valid.end(), value) != valid.end()) return value;
  return absl::InvalidArgumentError(absl::StrCat("--attention-kernel: unknown kernel '", value,
                                                 "'; valid: ", absl::StrJoin(valid, ", ")));
}

// The most passes --trace or --html keeps (TimelineEvent each).
constexpr int64_t kMaxTimelinePasses = 1000000;

absl::Status RunValidate(int argc, char** argv, Output& io) {
  cxxopts::Options options("project validate",
                           "Projects every case of a calibration JSONL file in simulate mode and "
                           "compares with the measured throughput.");
  AddCommonFlags(options);
  // clang-format off
  options.add_options()
    ("cases", "Calibration JSONL file (the ../shared/calibration schema)",
     cxxopts::value<std::string>(), "FILE")
    ("threads", "Worker threads (default: all cores)", cxxopts::value<int>(), "N")
    ("only", "Only the cases whose id or source contains TEXT", cxxopts::value<std::string>(),
     "TEXT")
    ("attention-kernel",
     "What-if for every case: auto (default), flash, unfused or a kernel of the GPU profiles "
     "(fa2, fa3, ...; a case whose GPU lacks it is unsupported)",
     cxxopts::value<std::string>(), "NAME")
    ("loss-kernel", "What-if for every case: auto (default: fused for FSDP-only layouts, else "
     "megatron), megatron, pytorch or fused", cxxopts::value<std::string>(),
     "auto|megatron|pytorch|fused")
    ("stack", "What-if for every case: auto (default: llm-foundry for FSDP-only layouts, else "
     "megatron), megatron, llm-foundry or torchtitan (the kernels left auto follow it)",
     cxxopts::value<std::string>(), "auto|megatron|llm-foundry|torchtitan")
    ("train-metric-passes", "What-if for every case: auto (default: 2 for FSDP-only layouts, "
     "Composer/llm-foundry's training metrics on the logits; else 0) or a count",
     cxxopts::value<std::string>(), "auto|N")
    ("torch-compile", "What-if for every case on a PyTorch-native stack: torch.compile's fused "
     "elementwise kernels (default false: eager)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fsdp-impl", "What-if for every FSDP case: auto (default: the stack's), megatron-fsdp, "
     "fsdp1 or fsdp2", cxxopts::value<std::string>(), "auto|megatron-fsdp|fsdp1|fsdp2")
    ("hidden-dropout", "What-if for every case: auto (default: 0.1 for GELU/LayerNorm GPT "
     "models on the megatron stack, Megatron-LM's default; else 0) or a probability",
     cxxopts::value<std::string>(), "auto|P")
    ("attention-dropout", "What-if for every case: auto (default: as --hidden-dropout) or a "
     "probability", cxxopts::value<std::string>(), "auto|P")
    ("gpu", "Only the cases on this GPU", cxxopts::value<std::string>(), "NAME")
    ("hw-overlay", "Hardware overlays from `project calibrate` (comma-separated), each applied to "
     "the cases on the GPU it was fitted for", cxxopts::value<std::vector<std::string>>(),
     "FILE[,FILE]")
    ("tp-comm-overlap", "What-if for every case: TP collectives overlapped with their GEMMs",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("grad-reduce-dtype", "What-if for every case: gradient reduction in fp32 (default) or bf16",
     cxxopts::value<std::string>(), "fp32|bf16")
    ("overlap-grad-reduce", "What-if for every case: DP gradient reduction overlapped with "
     "backward (default true; false = after the backward, as Megatron-LM before 2023)",
     cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("distributed-optimizer", "What-if for every non-FSDP case with DP > 1: optimizer state "
     "sharded over DP (default true, the case format does not say; false = replicated, as "
     "Megatron-LM before 2022)", cxxopts::value<bool>()->implicit_value("true"), "BOOL")
    ("fit-scales", "Also fit, per source and GPU with 3 or more cases, the compute scale that "
     "best matches them (project calibrate --cases), to show which stack is off by how much")
    ("min-within-20-pct", "Fail (exit 3) when fewer cases are within 20%",
     cxxopts::value<std::string>(), "PCT")
    ("max-median-error-pct", "Fail (exit 3) when the median |error| is larger",
     cxxopts::value<std::string>(), "PCT")
    ("html", "Also write the comparison as a self-contained HTML page: projected-vs-measured "
     "scatter, errors by source, summary tables, every case", cxxopts::value<std::string>(),
     "FILE");
  // clang-format on
  cxxopts::ParseResult flags;
  try {
    flags = options.parse(argc - 1, argv + 1);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("validate: ", ExplainParseError(e, argc, argv)));
  }
  if (flags.count("help")) {
    io.out << options.help();
    return absl::OkStatus();
  }
  if (!flags.unmatched().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("validate: unexpected argument '", flags.unmatched().front(), "'"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(bool as_json, WantsJson(flags));
  if (!flags.count("cases")) {
    return absl::InvalidArgumentError("--cases: required (a calibration JSONL file)");
  }
  ValidationOptions validation;
  validation.threads = flags.count("threads") ? flags["threads"].as<int>() : 0;
  if (validation.threads < 0) return absl::InvalidArgumentError("--threads: must be >= 0");
  if (flags.count("only")) validation.only = flags["only"].as<std::string>();
  if (flags.count("attention-kernel")) {
    PROJECTOR_ASSIGN_OR_RETURN(validation.attention_kernel,
                               ValidationKernel(flags["attention-kernel"].as<std::string>()));
  }
  PROJECTOR_ASSIGN_OR_RETURN(validation.training, ReadStackFlags(flags));
  if (flags.count("gpu")) {
    validation.gpu = flags["gpu"].as<std::string>();
    if (absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(validation.gpu); !hw.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--gpu: ", hw.status().message()));
    }
  }
  if (flags.count("hw-overlay")) {
    for (const std::string& path : flags["hw-overlay"].as<std::vector<std::string>>()) {
      PROJECTOR_ASSIGN_OR_RETURN(ValidationOptions::Overlay o, LoadValidationOverlay(path));
      validation.hw_overlays.push_back(std::move(o));
    }
  }
  for (auto [name, target] :
       {std::pair<const char*, std::optional<bool>*>{"tp-comm-overlap",
                                                     &validation.tp_comm_overlap},
        {"overlap-grad-reduce", &validation.overlap_grad_reduce},
        {"distributed-optimizer", &validation.distributed_optimizer}}) {
    if (!flags.count(name)) continue;
    try {
      *target = flags[name].as<bool>();
    } catch (const std::exception&) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, ": expected true or false"));
    }
  }
  if (flags.count("grad-reduce-dtype")) {
    auto d = ParseGradReduceDtype(flags["grad-reduce-dtype"].as<std::string>());
    if (!d.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grad-reduce-dtype: ", d.status().message()));
    }
    validation.grad_reduce_dtype = *d;
  }
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path,
                             OutputFileFlag(flags, "html", "simulate"));
  // The accuracy gates, read before the run so that a bad value fails fast.
  std::optional<double> max_median, min_within_20;
  for (auto [name, target] :
       {std::pair{"max-median-error-pct", &max_median}, {"min-within-20-pct", &min_within_20}}) {
    if (!flags.count(name)) continue;
    PROJECTOR_ASSIGN_OR_RETURN(*target, NumberFlag(flags, name));
  }
  PROJECTOR_ASSIGN_OR_RETURN(ValidationReport report,
                             ValidateCasesFile(flags["cases"].as<std::string>(), validation));
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile("html", html_path, ValidationHtml(report)));
  }
  std::vector<GroupScale> scales;
  if (flags.count("fit-scales")) {
    PROJECTOR_ASSIGN_OR_RETURN(
        scales, FitScalesBySourceAndGpu(flags["cases"].as<std::string>(), report, validation));
  }
  if (as_json) {
    nlohmann::json j = ValidationToJson(report);
    if (flags.count("fit-scales")) j["fitted_scales"] = GroupScalesJson(scales);
    io.out << j.dump(2) << "\n";
  } else {
    io.out << FormatValidationText(report);
    if (flags.count("fit-scales")) io.out << GroupScalesText(scales);
  }
  if (!html_path.empty()) {
    (as_json ? io.err : io.out) << "html: report written to " << html_path
                                << " (open in a browser)\n";
  }
  if ((flags.count("max-median-error-pct") || flags.count("min-within-20-pct")) &&
      report.summary.projected == 0) {
    return absl::OutOfRangeError(
        "accuracy floor not met: no case was projected (none matched the filters, or see 'Cases "
        "not projected')");
  }
  if (max_median && report.summary.median_abs_error_pct > *max_median) {
    return absl::OutOfRangeError(
        absl::StrFormat("accuracy floor not met: median |error| %.1f%% > %.1f%%",
                        report.summary.median_abs_error_pct, *max_median));
  }
  if (min_within_20 && report.summary.within_20_pct < *min_within_20) {
    return absl::OutOfRangeError(
        absl::StrFormat("accuracy floor not met: %.1f%% of cases within 20%% < %.1f%%",
                        report.summary.within_20_pct, *min_within_20));
  }
  return absl::OkStatus();
}

absl::Status RunProject(int argc, char** argv, Output& io) {
  cxxopts::Options options("project", kUsage);
  AddCommonFlags(options);
  options.add_options()("list-models", "List the model library")(
      "list-gpus", "List the hardware profile library")("list-backends", "List the backends")(
      "show-ops", "Also list every timed op of each layer kind: shape, time, TFLOP/s, GB/s")(
      "trace",
      "Also write the replayed step (every forward/backward/weight-gradient pass per pipeline "
      "rank, then the gradient sync and optimizer) as a Chrome trace for ui.perfetto.dev",
      cxxopts::value<std::string>(), "FILE")(
      "html",
      "Also write the projection as a self-contained HTML page with charts: step breakdown, "
      "per-module times, memory per stage, pipeline timeline, slowest ops",
      cxxopts::value<std::string>(), "FILE");
  AddScenarioFlags(options);
  AddProfileFlags(options);
  cxxopts::ParseResult flags;
  try {
    flags = options.parse(argc, argv);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(ExplainParseError(e, argc, argv), " (see project --help)"));
  }
  if (!flags.unmatched().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unexpected argument '", flags.unmatched().front(),
        "'; subcommands: estimate, validate, search, calibrate (see project --help)"));
  }
  if (flags.count("help")) {
    io.out << options.help(
        {"", "Scenario", "Parallel layout", "Training run", "Backends", "Profiles"});
    return absl::OkStatus();
  }
  if (flags.count("list-models")) {
    io.out << ListModels();
    return absl::OkStatus();
  }
  if (flags.count("list-gpus")) {
    io.out << ListGpus();
    return absl::OkStatus();
  }
  if (flags.count("list-backends")) {
    io.out << DescribeBackends();
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(bool as_json, WantsJson(flags));
  std::string mode = flags.count("profiling-mode") ? flags["profiling-mode"].as<std::string>()
                                                   : "simulate";
  if (mode != "simulate" && mode != "profile" && mode != "both" && mode != "measure") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--profiling-mode: unknown mode '", mode, "'; accepted: simulate, profile, both, measure"));
  }
  if (mode == "measure") {
    // Checks the GPU runtime first, so a GPU-free build exits 2 before any scenario work.
    Scenario target;
    if (!flags.count("profile") || flags.count("model") || flags.count("scenario") ||
        flags.count("case")) {
      PROJECTOR_ASSIGN_OR_RETURN(target, ScenarioFromFlags(flags));
    }
    return RunProfilingMode(mode, flags, target, as_json, io.out, io.err);
  }
  if (mode != "simulate" && flags.count("profile") && !flags.count("model") &&
      !flags.count("scenario") && !flags.count("case")) {
    // Profile/both with only --profile: project the profile's own scenario.
    return RunProfilingMode(mode, flags, Scenario{}, as_json, io.out, io.err);
  }
  PROJECTOR_ASSIGN_OR_RETURN(Scenario scenario, ScenarioFromFlags(flags));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlayFlag(flags, scenario));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string trace_path, OutputFileFlag(flags, "trace", mode));
  PROJECTOR_ASSIGN_OR_RETURN(const std::string html_path, OutputFileFlag(flags, "html", mode));
  if (mode != "simulate") {
    return RunProfilingMode(mode, flags, scenario, as_json, io.out, io.err);
  }
  std::vector<double> clocks;
  if (flags.count("gpu-clock-mhz")) {
    PROJECTOR_ASSIGN_OR_RETURN(clocks, ClockListFlag(flags));
  }
  if (clocks.size() > 1 && !trace_path.empty()) {
    return absl::InvalidArgumentError(
        "--trace: one projection per trace; give a single --gpu-clock-mhz");
  }
  if (clocks.size() > 1) {
    PROJECTOR_ASSIGN_OR_RETURN(std::vector<ClockRow> rows, ClockWhatIf(scenario, clocks));
    if (!html_path.empty()) {
      PROJECTOR_RETURN_IF_ERROR(
          WriteOutputFile("html", html_path, ClockWhatIfHtml(scenario, rows)));
    }
    if (as_json) {
      json j = ClockWhatIfJson(rows);
      j["scenario"] = ScenarioToJson(scenario);
      io.out << j.dump(2) << "\n";
    } else {
      io.out << DescribeScenario(scenario) << "\n" << ClockWhatIfText(rows);
    }
    if (!html_path.empty()) {
      (as_json ? io.err : io.out) << "html: report written to " << html_path
                                  << " (open in a browser)\n";
    }
    return absl::OkStatus();
  }
  auto backends = MakeBackendSet(scenario.backends, scenario.hw);
  if (!backends.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("backends: ", backends.status().message()));
  }
  BackendRefs refs{*backends->gemm, *backends->attention, *backends->memory,
                   *backends->collective};
  ProjectionOptions projection_options;
  if (!trace_path.empty() || !html_path.empty()) {
    // Every pass of every rank is kept (F, B and, under zero bubble, W); a million of them is a
    // ~100 MB trace already.
    const ParallelConfig& p = scenario.parallel;
    const double micro_batches = static_cast<double>(scenario.training.global_batch) /
                                 static_cast<double>(scenario.training.micro_batch * p.dp);
    const double passes = static_cast<double>(p.pp * p.vpp) * micro_batches *
                          (p.pipeline_schedule == PipelineSchedule::kZeroBubbleH1 ? 3.0 : 2.0);
    if (passes > kMaxTimelinePasses) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--%s: the step replays %.0f passes (pp·vpp·micro-batches·passes per micro-batch), more "
          "than the %d a trace or page keeps; project fewer micro-batches (a smaller global batch) "
          "to see the schedule",
          trace_path.empty() ? "html" : "trace", passes, kMaxTimelinePasses));
    }
  }
  projection_options.keep_ops = flags.count("show-ops") > 0 || !html_path.empty();
  projection_options.keep_timeline = !trace_path.empty() || !html_path.empty();
  PROJECTOR_ASSIGN_OR_RETURN(Projection projection, Project(scenario, refs, projection_options));
  if (!trace_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(WriteOutputFile(
        "trace", trace_path, TimelineTraceJson(scenario, projection).dump() + "\n"));
  }
  if (!html_path.empty()) {
    PROJECTOR_RETURN_IF_ERROR(
        WriteOutputFile("html", html_path, ProjectionHtml(scenario, projection)));
  }
  if (as_json) {
    io.out << ProjectionJson(scenario, projection).dump(2) << "\n";
  } else {
    // --html keeps the ops for the page; the text lists them only when asked.
    if (!flags.count("show-ops")) projection.op_tables.clear();
    io.out << ProjectionText(scenario, projection) << OpsText(projection);
  }
  if (!trace_path.empty()) {
    (as_json ? io.err : io.out) << "trace: " << projection.timeline.size() << " events written to "
                                << trace_path << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
  if (!html_path.empty()) {
    (as_json ? io.err : io.out) << "html: report written to " << html_path
                                << " (open in a browser)\n";
  }
  return absl::OkStatus();
}

int Run(int argc, char** argv, Output& io) {
  absl::Status status;
  std::string sub = argc > 1 ? argv[1] : "";
  if (sub == "estimate") {
    status = RunEstimate(argc, argv, io);
  } else if (sub == "validate") {
    status = RunValidate(argc, argv, io);
  } else if (sub == "search") {
    status = RunSearchCommand(argc, argv, io.out, io.err);
  } else if (sub == "calibrate") {
    status = RunCalibrateCommand(argc, argv, io.out, io.err);
  } else {
    status = RunProject(argc, argv, io);
  }
  if (!status.ok()) {
    io.err << "project: error: " << status.message() << "\n";
    return ExitCodeFor(status);
  }
  return 0;
}

}  // namespace
}  // namespace projector

int main(int argc, char** argv) {
  projector::Output io{std::cout, std::cerr};
  try {
    return projector::Run(argc, argv, io);
  } catch (const std::exception& e) {
    std::cerr << "project: internal error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "project: internal error: unknown exception\n";
    return 1;
  }
}
