// `project estimate gemm|attention|collective`: one op's time on one GPU profile.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/backend_registry.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/scenario_flags.h"
#include "core/status_macros.h"
#include "report/estimate_report.h"
#include "studies/estimate.h"

namespace projector {
namespace {

// Upper bounds of the estimate shapes, far beyond any layer: they keep tile and wave counts (a
// product of up to three of them over the tile sizes) inside int64.
constexpr int64_t kMaxEstimateDim = int64_t{1} << 24;    // m, n, k, sequence lengths, ranks
constexpr int64_t kMaxEstimateCount = int64_t{1} << 16;  // batch, heads, head dims
constexpr IntRange kDim{.max = kMaxEstimateDim, .beyond = " (beyond any layer)"};
constexpr IntRange kCount{.max = kMaxEstimateCount, .beyond = " (beyond any layer)"};
constexpr char kCollectives[] =
    "allreduce, allgather, reducescatter, alltoall, sendrecv, broadcast";

void AddOpFlags(cxxopts::Options& options, const std::string& kind) {
  // clang-format off
  options.add_options()
    ("h,help", "Show this help")
    ("format", "Output format: text or json", cxxopts::value<std::string>(), "FORMAT")
    ("gpu-arch", "GPU profile name or file", cxxopts::value<std::string>(), "NAME|FILE")
    ("gpus-per-node", "GPUs per node", cxxopts::value<int64_t>(), "N")
    ("gpu-clock-mhz", "Sustained clock override", cxxopts::value<std::string>(), "MHZ")
    ("dtype", "bf16, fp16, fp8, fp32, tf32, fp4", cxxopts::value<std::string>(), "DTYPE");
  if (kind == "gemm") {
    options.add_options()
      ("gemm-m", "M (given as --m)", cxxopts::value<int64_t>(), "N")
      ("gemm-n", "N (given as --n)", cxxopts::value<int64_t>(), "N")
      ("gemm-k", "K (given as --k)", cxxopts::value<int64_t>(), "N")
      ("batch", "Batch count", cxxopts::value<int64_t>(), "N")
      ("gemm-backend", "GEMM backend", cxxopts::value<std::string>()->default_value("tile"), "NAME");
  } else if (kind == "attention") {
    options.add_options()
      ("batch", "Sequences", cxxopts::value<int64_t>(), "N")
      ("heads", "Query heads", cxxopts::value<int64_t>(), "N")
      ("kv-heads", "Key/value heads (default: heads)", cxxopts::value<int64_t>(), "N")
      ("seq-q", "Query length", cxxopts::value<int64_t>(), "N")
      ("seq-kv", "Key/value length (default: seq-q)", cxxopts::value<int64_t>(), "N")
      ("head-dim", "QK and V head dim", cxxopts::value<int64_t>(), "N")
      ("qk-head-dim", "QK head dim (MLA: 192)", cxxopts::value<int64_t>(), "N")
      ("v-head-dim", "V head dim (MLA: 128)", cxxopts::value<int64_t>(), "N")
      ("causal", "Causal mask", cxxopts::value<bool>()->default_value("true")->implicit_value("true"), "BOOL")
      ("pass", "fwd or bwd", cxxopts::value<std::string>()->default_value("fwd"), "PASS")
      ("attention-backend", "Attention backend", cxxopts::value<std::string>()->default_value("tile"), "NAME");
  } else {
    options.add_options()
      ("op", kCollectives, cxxopts::value<std::string>(), "OP")
      ("bytes", "Message size (nccl-tests convention), e.g. 1GiB", cxxopts::value<std::string>(), "SIZE")
      ("ranks", "Group size", cxxopts::value<int64_t>(), "N")
      ("stride", "Distance between group ranks in the global rank order", cxxopts::value<int64_t>(), "N")
      ("algorithm", "auto, ring, tree, direct, halving-doubling, hierarchical, pxn",
       cxxopts::value<std::string>()->default_value("auto"), "NAME")
      ("collective-backend", "Collective backend", cxxopts::value<std::string>()->default_value("hierarchical"), "NAME");
  }
  // clang-format on
}

// cxxopts needs long flags of two or more letters: --m/--n/--k are read as --gemm-m/n/k.
std::vector<std::string> WithGemmDimsRenamed(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 3; i < argc; ++i) {
    std::string arg = argv[i];
    for (const char* dim : {"m", "n", "k"}) {
      const std::string flag = absl::StrCat("--", dim);
      if (arg == flag || arg.rfind(flag + "=", 0) == 0) {
        arg = absl::StrCat("--gemm-", dim, arg.substr(flag.size()));
      }
    }
    args.push_back(std::move(arg));
  }
  return args;
}

absl::StatusOr<DType> DTypeFlag(const Flags& flags) {
  absl::StatusOr<DType> d = ParseDType(Given(flags, "dtype") ? StringFlag(flags, "dtype") : "bf16");
  if (!d.ok()) return FlagError("dtype", d.status().message());
  return *d;
}

// A backend by the name its flag gives, from the registry's `make`.
template <typename Make>
auto BackendFlag(const Flags& flags, absl::string_view name, const HardwareProfile& hw, Make make)
    -> decltype(make(std::string(), hw)) {
  auto backend = make(StringFlag(flags, name), hw);
  if (!backend.ok()) return FlagError(name, backend.status().message());
  return backend;
}

absl::Status EstimateGemm(const Flags& flags, const HardwareProfile& hw, bool as_json,
                          const Output& io) {
  GemmShape shape;
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.m, IntFlag(flags, "gemm-m", {.max = kDim.max, .beyond = kDim.beyond, .shown = "m"}));
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.n, IntFlag(flags, "gemm-n", {.max = kDim.max, .beyond = kDim.beyond, .shown = "n"}));
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.k, IntFlag(flags, "gemm-k", {.max = kDim.max, .beyond = kDim.beyond, .shown = "k"}));
  PROJECTOR_ASSIGN_OR_RETURN(shape.batch, IntFlag(flags, "batch", kCount, shape.batch));
  PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(auto backend, BackendFlag(flags, "gemm-backend", hw, MakeGemmBackend));
  PROJECTOR_ASSIGN_OR_RETURN(GemmOpEstimate e, EstimateGemmOp(hw, *backend, shape));
  io.out << (as_json ? GemmEstimateJson(e).dump(2) + "\n" : GemmEstimateText(e));
  return absl::OkStatus();
}

absl::StatusOr<AttentionShape> AttentionShapeFlags(const Flags& flags) {
  AttentionShape shape;
  PROJECTOR_ASSIGN_OR_RETURN(shape.batch, IntFlag(flags, "batch", kCount));
  PROJECTOR_ASSIGN_OR_RETURN(shape.num_q_heads, IntFlag(flags, "heads", kCount));
  PROJECTOR_ASSIGN_OR_RETURN(shape.num_kv_heads,
                             IntFlag(flags, "kv-heads", kDim, shape.num_q_heads));
  PROJECTOR_ASSIGN_OR_RETURN(shape.seq_q, IntFlag(flags, "seq-q", kDim));
  PROJECTOR_ASSIGN_OR_RETURN(shape.seq_kv, IntFlag(flags, "seq-kv", kDim, shape.seq_q));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t head_dim, IntFlag(flags, "head-dim", kCount, 0));
  PROJECTOR_ASSIGN_OR_RETURN(shape.qk_head_dim, IntFlag(flags, "qk-head-dim", kCount, head_dim));
  PROJECTOR_ASSIGN_OR_RETURN(shape.v_head_dim, IntFlag(flags, "v-head-dim", kCount, head_dim));
  if (shape.qk_head_dim <= 0 || shape.v_head_dim <= 0) {
    return FlagError("head-dim", "required (or --qk-head-dim and --v-head-dim)");
  }
  shape.causal = flags["causal"].as<bool>();
  PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
  return shape;
}

absl::Status EstimateAttention(const Flags& flags, const HardwareProfile& hw, bool as_json,
                               const Output& io) {
  PROJECTOR_ASSIGN_OR_RETURN(const AttentionShape shape, AttentionShapeFlags(flags));
  const std::string pass = StringFlag(flags, "pass");
  if (pass != "fwd" && pass != "bwd") {
    return FlagError("pass", absl::StrCat("unknown pass '", pass, "'; accepted: fwd, bwd"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(auto backend,
                             BackendFlag(flags, "attention-backend", hw, MakeAttentionBackend));
  PROJECTOR_ASSIGN_OR_RETURN(
      AttentionOpEstimate e,
      EstimateAttentionOp(hw, *backend, shape,
                          pass == "fwd" ? AttentionPass::kForward : AttentionPass::kBackward));
  io.out << (as_json ? AttentionEstimateJson(e).dump(2) + "\n" : AttentionEstimateText(e));
  return absl::OkStatus();
}

absl::StatusOr<CollectiveKind> CollectiveKindFlag(const Flags& flags) {
  if (!Given(flags, "op"))
    return FlagError("op", absl::StrCat("required; accepted: ", kCollectives));
  const std::string name = StringFlag(flags, "op");
  for (CollectiveKind k :
       {CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kSendRecv, CollectiveKind::kBroadcast}) {
    if (CollectiveKindName(k) == name) return k;
  }
  return FlagError("op", absl::StrCat("unknown collective '", name, "'; accepted: ", kCollectives));
}

absl::Status EstimateCollective(const Flags& flags, const HardwareProfile& hw, bool as_json,
                                const Output& io) {
  CollectiveOp op;
  PROJECTOR_ASSIGN_OR_RETURN(op.kind, CollectiveKindFlag(flags));
  if (!Given(flags, "bytes")) return FlagError("bytes", "required (e.g. 1GiB)");
  PROJECTOR_ASSIGN_OR_RETURN(const double bytes,
                             ParseByteSize(StringFlag(flags, "bytes"), "bytes"));
  op.bytes = Bytes(bytes);
  PROJECTOR_ASSIGN_OR_RETURN(op.group.size, IntFlag(flags, "ranks", kDim));
  PROJECTOR_ASSIGN_OR_RETURN(op.group.stride, IntFlag(flags, "stride", kDim, 1));
  absl::StatusOr<CollectiveAlgorithm> algorithm =
      ParseCollectiveAlgorithm(StringFlag(flags, "algorithm"));
  if (!algorithm.ok()) return FlagError("algorithm", algorithm.status().message());
  PROJECTOR_ASSIGN_OR_RETURN(auto backend,
                             BackendFlag(flags, "collective-backend", hw, MakeCollectiveBackend));
  PROJECTOR_ASSIGN_OR_RETURN(CollectiveOpEstimate e,
                             EstimateCollectiveOp(hw, *backend, op, *algorithm));
  io.out << (as_json ? CollectiveEstimateJson(e).dump(2) + "\n" : CollectiveEstimateText(e));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunEstimateCommand(int argc, char** argv, const Output& io) {
  if (argc < 3) {
    return absl::InvalidArgumentError(
        "estimate: which op? accepted: gemm, attention, collective (e.g. project estimate gemm "
        "--gpu-arch h100-sxm --m 8192 --n 8192 --k 8192)");
  }
  const std::string kind = argv[2];
  if (kind != "gemm" && kind != "attention" && kind != "collective") {
    return absl::InvalidArgumentError(
        absl::StrCat("estimate: unknown op '", kind, "'; accepted: gemm, attention, collective"));
  }
  cxxopts::Options options(absl::StrCat("project estimate ", kind), "Estimate one op.");
  AddOpFlags(options, kind);
  std::vector<std::string> storage = WithGemmDimsRenamed(argc, argv);
  std::vector<char*> args = {argv[2]};
  for (std::string& a : storage) args.push_back(a.data());
  PROJECTOR_ASSIGN_OR_RETURN(
      const std::optional<Flags> flags,
      ParseFlags(options, {args.data(), args.size()}, {argv, static_cast<size_t>(argc)},
                 absl::StrCat("estimate ", kind, ": "), "", io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  PROJECTOR_ASSIGN_OR_RETURN(const HardwareProfile hw, HardwareFromFlags(*flags));
  if (kind == "gemm") return EstimateGemm(*flags, hw, as_json, io);
  if (kind == "attention") return EstimateAttention(*flags, hw, as_json, io);
  return EstimateCollective(*flags, hw, as_json, io);
}

}  // namespace projector
