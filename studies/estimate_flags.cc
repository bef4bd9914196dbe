#include "studies/estimate_flags.h"

#include <algorithm>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "backends/backend_registry.h"
#include "core/status_macros.h"
#include "scenario/network_flags.h"

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

constexpr FlagSpec kGemmFlags[] = {
    {"dtype", "bf16, fp16, fp8, fp32, tf32, fp4", "DTYPE", FlagArity::kValue, "bf16"},
    {"gemm-m", "M (given as --m)", "N"},
    {"gemm-n", "N (given as --n)", "N"},
    {"gemm-k", "K (given as --k)", "N"},
    {"batch", "Batch count", "N"},
    {"kernels",
     "Launch the batch as N kernels, one per problem (Transformer Engine's GroupedLinear: a GEMM "
     "per expert; default 1, one batched kernel)",
     "N"},
    {"gemm-backend", "GEMM backend", "NAME", FlagArity::kValue, "tile"},
};
constexpr FlagSpec kAttentionFlags[] = {
    {"dtype", "bf16, fp16, fp8, fp32, tf32, fp4", "DTYPE", FlagArity::kValue, "bf16"},
    {"batch", "Sequences", "N"},
    {"heads", "Query heads", "N"},
    {"kv-heads", "Key/value heads (default: heads)", "N"},
    {"seq-q", "Query length", "N"},
    {"seq-kv", "Key/value length (default: seq-q)", "N"},
    {"head-dim", "QK and V head dim", "N"},
    {"qk-head-dim", "QK head dim (MLA: 192)", "N"},
    {"v-head-dim", "V head dim (MLA: 128)", "N"},
    {"causal", "Causal mask", "BOOL", FlagArity::kBool, "true"},
    {"pass", "fwd or bwd", "PASS", FlagArity::kValue, "fwd"},
    {"attention-backend", "Attention backend", "NAME", FlagArity::kValue, "tile"},
};
constexpr FlagSpec kCollectiveFlags[] = {
    {"op", kCollectives, "OP"},
    {"bytes", "Message size (nccl-tests convention), e.g. 1GiB", "SIZE"},
    {"ranks", "Group size", "N"},
    {"stride", "Distance between group ranks in the global rank order", "N"},
    {"algorithm", "auto, ring, tree, direct, halving-doubling, hierarchical, pxn, low-latency",
     "NAME",
     FlagArity::kValue, "auto"},
    {"collective-backend", "Collective backend", "NAME", FlagArity::kValue, "hierarchical"},
    kNetworkFlag,
    {"congestion",
     "With --network: aware (links shared max-min fairly) or unaware (every transfer has its "
     "links to itself, as ASTRA-sim's analytical default)",
     "MODE", FlagArity::kValue, "aware"},
    {"chunks", "With --network: pieces the hierarchical algorithm pipelines through dimensions",
     "N", FlagArity::kValue, "1"},
    {"concurrent",
     "With --network: another collective running at the same time, sharing the links: "
     "op=OP,bytes=SIZE,ranks=N[,stride=S][,first=NPU][,algorithm=A] (repeatable)",
     "SPEC", FlagArity::kRepeated},
    {"collective-library",
     "With --network: nccl (NCCL's launch, per-step and LL/LL128/Simple protocol costs on the "
     "transfers) or none (the network's transfers alone, as ASTRA-sim counts)",
     "NAME", FlagArity::kValue, "nccl"},
    {"semantics",
     "With --network: native (this tool's network model) or astra (ASTRA-sim's system layer "
     "and analytical backend replayed, to compare with its figures; docs/network.md)",
     "NAME", FlagArity::kValue, "native"},
    {"astra-system",
     "With --semantics astra: ASTRA-sim's system JSON (chunks, chunks in flight, endpoint delay, "
     "local-mem-bw); default its HGX-H100-validated.json",
     "FILE", FlagArity::kValue, ""},
    {"astra-gigabyte",
     "With --semantics astra: how ASTRA-sim reads a link's GB/s: binary (2^30 B/s, its "
     "analytical backend in the releases of the reference figures) or decimal (10^9 B/s)",
     "UNIT", FlagArity::kValue, "binary"},
};
// Flags that only mean something on a network file.
constexpr const char* kNetworkOnlyFlags[] = {"congestion",  "chunks",       "collective-library",
                                             "concurrent",  "semantics",    "astra-system",
                                             "astra-gigabyte"};
// Flags of the native network model that ASTRA-sim's semantics do not take.
constexpr const char* kNativeOnlyFlags[] = {"chunks", "collective-library", "concurrent",
                                            "stride"};

absl::StatusOr<DType> DTypeFlag(const FlagValues& flags) {
  absl::StatusOr<DType> d = ParseDType(StringFlag(flags, "dtype"));
  if (!d.ok()) return FlagError("dtype", d.status().message());
  return *d;
}

// A backend by the name its flag gives, from the registry's `make`.
template <typename Make>
auto BackendFlag(const FlagValues& flags, absl::string_view name, const HardwareProfile& hw,
                 Make make) -> decltype(make(std::string(), hw)) {
  auto backend = make(StringFlag(flags, name), hw);
  if (!backend.ok()) return FlagError(name, backend.status().message());
  return backend;
}

}  // namespace

absl::StatusOr<GemmOpEstimate> EstimateGemmFromFlags(const FlagValues& flags,
                                                     const HardwareProfile& hw) {
  GemmShape shape;
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.m, IntFlag(flags, "gemm-m", {.max = kDim.max, .beyond = kDim.beyond, .shown = "m"}));
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.n, IntFlag(flags, "gemm-n", {.max = kDim.max, .beyond = kDim.beyond, .shown = "n"}));
  PROJECTOR_ASSIGN_OR_RETURN(
      shape.k, IntFlag(flags, "gemm-k", {.max = kDim.max, .beyond = kDim.beyond, .shown = "k"}));
  PROJECTOR_ASSIGN_OR_RETURN(shape.batch, IntFlag(flags, "batch", kCount, shape.batch));
  PROJECTOR_ASSIGN_OR_RETURN(shape.kernels, IntFlag(flags, "kernels", kCount, shape.kernels));
  if (shape.kernels > shape.batch) {
    return FlagError("kernels", absl::StrFormat("%d kernels for a batch of %d; accepted: 1 to "
                                                "the batch count (--batch)",
                                                shape.kernels, shape.batch));
  }
  PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(auto backend, BackendFlag(flags, "gemm-backend", hw, MakeGemmBackend));
  return EstimateGemmOp(hw, *backend, shape);
}

namespace {

absl::StatusOr<AttentionShape> AttentionShapeFlags(const FlagValues& flags) {
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
  PROJECTOR_ASSIGN_OR_RETURN(shape.causal, BoolFlag(flags, "causal"));
  PROJECTOR_ASSIGN_OR_RETURN(shape.dtype, DTypeFlag(flags));
  return shape;
}

}  // namespace

absl::StatusOr<AttentionOpEstimate> EstimateAttentionFromFlags(const FlagValues& flags,
                                                               const HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(const AttentionShape shape, AttentionShapeFlags(flags));
  const std::string pass = StringFlag(flags, "pass");
  if (pass != "fwd" && pass != "bwd") {
    return FlagError("pass", absl::StrCat("unknown pass '", pass, "'; accepted: fwd, bwd"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(auto backend,
                             BackendFlag(flags, "attention-backend", hw, MakeAttentionBackend));
  return EstimateAttentionOp(hw, *backend, shape,
                             pass == "fwd" ? AttentionPass::kForward : AttentionPass::kBackward);
}

namespace {

absl::StatusOr<CollectiveKind> CollectiveKindFlag(const FlagValues& flags) {
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

// --op, --bytes, --ranks (defaulting to `default_ranks` when given) and --stride.
absl::StatusOr<CollectiveOp> CollectiveOpFlags(const FlagValues& flags,
                                               std::optional<int64_t> default_ranks) {
  CollectiveOp op;
  PROJECTOR_ASSIGN_OR_RETURN(op.kind, CollectiveKindFlag(flags));
  if (!Given(flags, "bytes")) return FlagError("bytes", "required (e.g. 1GiB)");
  PROJECTOR_ASSIGN_OR_RETURN(const double bytes,
                             ParseByteSize(StringFlag(flags, "bytes"), "bytes"));
  op.bytes = Bytes(bytes);
  PROJECTOR_ASSIGN_OR_RETURN(op.group.size, IntFlag(flags, "ranks", kDim, default_ranks));
  PROJECTOR_ASSIGN_OR_RETURN(op.group.stride, IntFlag(flags, "stride", kDim, 1));
  return op;
}

absl::StatusOr<CollectiveAlgorithm> AlgorithmFlag(const FlagValues& flags) {
  absl::StatusOr<CollectiveAlgorithm> algorithm =
      ParseCollectiveAlgorithm(StringFlag(flags, "algorithm"));
  if (!algorithm.ok()) return FlagError("algorithm", algorithm.status().message());
  return *algorithm;
}

}  // namespace

absl::StatusOr<CollectiveOpEstimate> EstimateCollectiveFromFlags(const FlagValues& flags,
                                                                 const HardwareProfile& hw) {
  for (const char* name : kNetworkOnlyFlags) {
    if (Given(flags, name)) return FlagError(name, "applies with --network FILE only");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveOp op, CollectiveOpFlags(flags, std::nullopt));
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveAlgorithm algorithm, AlgorithmFlag(flags));
  PROJECTOR_ASSIGN_OR_RETURN(auto backend,
                             BackendFlag(flags, "collective-backend", hw, MakeCollectiveBackend));
  return EstimateCollectiveOp(hw, *backend, op, algorithm);
}

namespace {

// "op=alltoall,bytes=1GiB,ranks=8,stride=1,first=0,algorithm=direct".
absl::StatusOr<ConcurrentCollective> ParseConcurrentSpec(absl::string_view spec) {
  FlagValues fields;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    const std::vector<std::string> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    static const std::vector<std::string> kKeys = {"op", "bytes", "ranks", "stride", "first",
                                                   "algorithm"};
    if (kv.size() != 2 || std::find(kKeys.begin(), kKeys.end(), kv[0]) == kKeys.end()) {
      return FlagError("concurrent",
                       absl::StrCat("'", std::string(part), "' in '", std::string(spec),
                                    "': give key=value with keys op, bytes, ranks, stride, "
                                    "first, algorithm"));
    }
    fields.Add(kv[0], kv[1]);
  }
  ConcurrentCollective c;
  absl::StatusOr<CollectiveOp> op = CollectiveOpFlags(fields, std::nullopt);
  if (!op.ok()) return FlagError("concurrent", absl::StrCat(std::string(spec), ": ",
                                                            std::string(op.status().message())));
  c.op = *op;
  PROJECTOR_ASSIGN_OR_RETURN(c.first, IntFlag(fields, "first", {.min = 0}, 0));
  if (fields.Given("algorithm")) {
    absl::StatusOr<CollectiveAlgorithm> a = ParseCollectiveAlgorithm(fields.Text("algorithm"));
    if (!a.ok()) return FlagError("concurrent", a.status().message());
    c.algorithm = *a;
  }
  return c;
}

}  // namespace

absl::StatusOr<ConcurrentCollectivesEstimate> EstimateConcurrentFromFlags(
    const FlagValues& flags, const NetworkSpec& network) {
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveOp op, CollectiveOpFlags(flags, network.NpuCount()));
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveAlgorithm algorithm, AlgorithmFlag(flags));
  std::vector<ConcurrentCollective> collectives = {{.op = op, .first = 0, .algorithm = algorithm}};
  for (const std::string& spec : flags.All("concurrent")) {
    PROJECTOR_ASSIGN_OR_RETURN(ConcurrentCollective c, ParseConcurrentSpec(spec));
    collectives.push_back(c);
  }
  absl::StatusOr<Congestion> congestion = ParseCongestion(StringFlag(flags, "congestion"));
  if (!congestion.ok()) return FlagError("congestion", congestion.status().message());
  absl::StatusOr<CollectiveLibrary> library =
      ParseCollectiveLibrary(StringFlag(flags, "collective-library"));
  if (!library.ok()) return FlagError("collective-library", library.status().message());
  absl::StatusOr<ConcurrentCollectivesEstimate> e =
      EstimateConcurrentCollectives(network, collectives, *congestion, *library);
  if (!e.ok()) return FlagError("concurrent", e.status().message());
  return e;
}

absl::StatusOr<NetworkCollectiveOpEstimate> EstimateNetworkCollectiveFromFlags(
    const FlagValues& flags, const NetworkSpec& network) {
  if (Given(flags, "collective-backend")) {
    return FlagError("collective-backend",
                     "a network file is priced by the network model; leave out one or the other");
  }
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveOp op, CollectiveOpFlags(flags, network.NpuCount()));
  PROJECTOR_ASSIGN_OR_RETURN(const CollectiveAlgorithm algorithm, AlgorithmFlag(flags));
  absl::StatusOr<Congestion> congestion = ParseCongestion(StringFlag(flags, "congestion"));
  if (!congestion.ok()) return FlagError("congestion", congestion.status().message());
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t chunks, IntFlag(flags, "chunks", {.max = 1024}));
  absl::StatusOr<CollectiveLibrary> library =
      ParseCollectiveLibrary(StringFlag(flags, "collective-library"));
  if (!library.ok()) return FlagError("collective-library", library.status().message());
  absl::StatusOr<NetworkCollectiveOpEstimate> e =
      EstimateNetworkCollectiveOp(network, op, algorithm, *congestion, chunks, *library);
  if (e.ok()) return e;
  if (e.status().code() == absl::StatusCode::kUnimplemented) {
    return FlagError("algorithm", e.status().message());
  }
  return FlagError("ranks", e.status().message());
}

absl::StatusOr<bool> AstraSemanticsFlag(const FlagValues& flags) {
  const std::string semantics = StringFlag(flags, "semantics");
  if (semantics != "native" && semantics != "astra") {
    return FlagError("semantics", absl::StrCat("unknown semantics '", semantics,
                                               "'; accepted: native, astra"));
  }
  const bool astra = semantics == "astra";
  if (!astra) {
    for (const char* name : {"astra-system", "astra-gigabyte"}) {
      if (Given(flags, name)) return FlagError(name, "applies with --semantics astra only");
    }
  }
  return astra;
}

absl::StatusOr<AstraCollectiveOpEstimate> EstimateAstraCollectiveFromFlags(
    const FlagValues& flags, const NetworkSpec& network) {
  for (const char* name : kNativeOnlyFlags) {
    if (Given(flags, name)) {
      return FlagError(name, "not with --semantics astra (ASTRA-sim's semantics take the whole "
                             "network as the group, its own chunks and no library costs)");
    }
  }
  AstraCollectiveOpEstimate e;
  e.network = network.name;
  e.network_npus = network.NpuCount();
  PROJECTOR_ASSIGN_OR_RETURN(e.op, CollectiveOpFlags(flags, e.network_npus));
  if (e.op.group.size != e.network_npus) {
    return FlagError("ranks", absl::StrCat("ASTRA-sim's semantics take every NPU of the network (",
                                           e.network_npus, "); got ", e.op.group.size));
  }
  PROJECTOR_ASSIGN_OR_RETURN(e.algorithm, AlgorithmFlag(flags));
  if (e.algorithm == CollectiveAlgorithm::kAuto) {
    return FlagError("algorithm",
                     "ASTRA-sim's semantics need the algorithm named: ring, direct or "
                     "halving-doubling (its system file's *-implementation)");
  }
  absl::StatusOr<Congestion> congestion = ParseCongestion(StringFlag(flags, "congestion"));
  if (!congestion.ok()) return FlagError("congestion", congestion.status().message());
  e.congestion = *congestion;
  if (Given(flags, "astra-system")) {
    absl::StatusOr<AstraSystem> system = LoadAstraSystem(StringFlag(flags, "astra-system"));
    if (!system.ok()) return FlagError("astra-system", system.status().message());
    e.system = *std::move(system);
  }
  const std::string gigabyte = StringFlag(flags, "astra-gigabyte");
  if (gigabyte != "binary" && gigabyte != "decimal") {
    return FlagError("astra-gigabyte",
                     absl::StrCat("unknown unit '", gigabyte, "'; accepted: binary, decimal"));
  }
  e.system.binary_gigabytes = gigabyte == "binary";
  absl::StatusOr<AstraCollectiveResult> r = SimulateAstraCollective(
      network, e.op.kind, e.algorithm, e.op.bytes, e.congestion, e.system);
  if (!r.ok()) return FlagError("semantics", r.status().message());
  e.result = *r;
  return e;
}

std::span<const FlagSpec> GemmEstimateFlags() { return kGemmFlags; }
std::span<const FlagSpec> AttentionEstimateFlags() { return kAttentionFlags; }
std::span<const FlagSpec> CollectiveEstimateFlags() { return kCollectiveFlags; }

}  // namespace projector
