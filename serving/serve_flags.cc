#include "serving/serve_flags.h"

#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/dtype.h"
#include "core/number_format.h"
#include "core/status_macros.h"
#include "models/model_spec.h"
#include "scenario/scenario_flags.h"
#include "serving/dp_attention.h"

namespace projector {
namespace {

constexpr FlagSpec kDeploymentFlags[] = {
    {"model", "Model: a library name or a model JSON file", "NAME|FILE"},
    {"gpu-arch", "GPU profile: a library name or a hardware JSON file", "NAME|FILE"},
    {"gpus-per-node", "GPUs per node (default: the profile's)", "N"},
    {"gpu-clock-mhz", "Sustained GPU clock what-if", "MHZ"},
    {"tp", "Tensor-parallel GPUs per replica", "N", FlagArity::kValue, "1"},
    {"pp", "Pipeline stages per replica", "N", FlagArity::kValue, "1"},
    {"replicas", "Independent replicas behind a round-robin load balancer", "N", FlagArity::kValue,
     "1"},
    {"precision", "Weights and GEMMs: bf16, fp16 or fp8 (activations quantised per tensor)",
     "DTYPE", FlagArity::kValue, "bf16"},
    {"kv-precision", "KV cache: auto (the activation dtype), bf16, fp16 or fp8", "DTYPE",
     FlagArity::kValue, "auto"},
    {"expert-parallel",
     "MoE: whole experts spread over the TP ranks (vLLM --enable-expert-parallel) instead of "
     "every expert split over them",
     "", FlagArity::kSwitch},
    {"dp-attention",
     "MoE: attention data-parallel over N ranks of the TP group (SGLang --enable-dp-attention "
     "--dp N): each rank runs attention at TP tp/N for its own requests (dealt round robin) "
     "from its own KV cache, every MoE layer runs the experts over all tp GPUs on the tokens "
     "of all ranks, and the ranks run each pass in lock-step",
     "N", FlagArity::kValue, "1"},
    {"deepep",
     "With --dp-attention and --expert-parallel: the MoE layers dispatch and combine the routed "
     "tokens by DeepEP's all-to-all (SGLang --moe-a2a-backend deepep; fp8 dispatch under fp8) "
     "instead of gathering every rank's tokens on every GPU",
     "", FlagArity::kSwitch},
    {"deepep-mode",
     "With --deepep, DeepEP's kernels (SGLang --deepep-mode): auto (the normal kernels for a "
     "pass in which some rank prefills, the low-latency ones, every routed copy straight to its "
     "expert's GPU and their buffers held for max-num-seqs tokens a rank, for decode-only "
     "passes), normal or low-latency",
     "MODE", FlagArity::kValue, "auto"},
    {"two-batch-overlap",
     "With --deepep: every attention rank splits its batch into two micro-batches whose MoE "
     "dispatch and combine run while the other computes (SGLang --enable-two-batch-overlap)",
     "", FlagArity::kSwitch},
};

constexpr FlagSpec kEngineFlags[] = {
    {"batching", "continuous (vLLM-style, per pass) or static (fixed batches to the end)", "MODE",
     FlagArity::kValue, "continuous"},
    {"max-num-seqs", "Requests per pass (static batching: the batch size)", "N", FlagArity::kValue,
     "256"},
    {"max-batched-tokens", "New tokens per pass (the chunked-prefill budget)", "N",
     FlagArity::kValue, "8192"},
    {"chunked-prefill", "Split long prompts over passes: true or false", "BOOL", FlagArity::kValue,
     "true"},
    {"gpu-memory-utilization", "Fraction of HBM the engine may use", "F", FlagArity::kValue, "0.9"},
    {"block-size", "Tokens per KV-cache block", "N", FlagArity::kValue, "16"},
    {"pass-overhead-us",
     "Host time per pass not hidden behind the GPU (0: an engine that overlaps its scheduling "
     "with the GPU, as SGLang >= 0.4 and TensorRT-LLM do; vLLM V0 measured ~4000)",
     "US", FlagArity::kValue, "0"},
    {"lod",
     "Level of detail: medium (one analytical cost per pass) or high (each pass replayed as "
     "events per layer and per collective step)",
     "LEVEL", FlagArity::kValue, "medium"},
    {"slow-gpu",
     "With --lod high: GPU R of every replica (stage R/tp, TP rank R%tp) computes FACTOR times "
     "as long",
     "R:FACTOR"},
    {"request-overhead-us", "Host time per request in a pass not hidden behind the GPU", "US",
     FlagArity::kValue, "0"},
    {"prefix-caching",
     "Keep the KV blocks of shared prompt prefixes cached for later requests of their group "
     "(vLLM --enable-prefix-caching, SGLang's radix cache); continuous batching",
     "", FlagArity::kSwitch},
};

constexpr FlagSpec kWorkloadFlags[] = {
    {"qps", "Arrival rate, requests per second", "R"},
    {"arrival", "Arrivals at --qps: poisson or fixed (evenly spaced)", "KIND", FlagArity::kValue,
     "poisson"},
    {"concurrency", "Requests in flight at most (a closed-loop client)", "N"},
    {"num-requests", "Requests to simulate", "N", FlagArity::kValue, "1000"},
    {"input-len", "Prompt tokens (mean)", "N", FlagArity::kValue, "1024"},
    {"input-dist", "Prompt lengths: fixed, uniform or lognormal", "DIST", FlagArity::kValue,
     "fixed"},
    {"input-spread", "Uniform: ± fraction of the mean; lognormal: coefficient of variation", "F",
     FlagArity::kValue, "0"},
    {"output-len", "Output tokens (mean)", "N", FlagArity::kValue, "256"},
    {"output-dist", "Output lengths: fixed, uniform or lognormal", "DIST", FlagArity::kValue,
     "fixed"},
    {"output-spread", "Uniform: ± fraction of the mean; lognormal: coefficient of variation", "F",
     FlagArity::kValue, "0"},
    {"seed", "Random seed of the synthetic workload", "N", FlagArity::kValue, "0"},
    {"shared-prefix-len",
     "Tokens every prompt starts with, shared by its prefix group (a system prompt), before its "
     "--input-len tokens",
     "N", FlagArity::kValue, "0"},
    {"prefix-groups", "Distinct shared prefixes; each request's drawn uniformly", "N",
     FlagArity::kValue, "1"},
    {"trace",
     "Replay a CSV trace (arrival_s, prompt_tokens, output_tokens; optionally prefix_group, "
     "prefix_tokens) instead",
     "FILE"},
};

constexpr FlagSpec kSloFlags[] = {
    {"slo-ttft", "Latency target: time to first token, ms (with --max-qps or --search-layouts)",
     "MS"},
    {"slo-tpot", "Latency target: time per output token, ms", "MS"},
    {"slo-percentile", "Percentile both targets apply to: 50, 90 or 99", "P", FlagArity::kValue,
     "90"},
    {"max-qps", "Find the highest Poisson arrival rate meeting both targets", "",
     FlagArity::kSwitch},
    {"search-layouts",
     "Find, for every TP x PP x replicas of --num-gpus GPUs, the highest rate meeting both "
     "targets, ranked by output tokens/s per GPU",
     "", FlagArity::kSwitch},
    {"num-gpus", "GPUs the layout search divides (with --search-layouts)", "N"},
    {"threads",
     "Simulations at once in an SLO search (under MPI: on each rank; default: every core, "
     "shared by the ranks of a node)",
     "N"},
};

constexpr FlagSpec kDisaggregationFlags[] = {
    {"disaggregate",
     "Also run separate prefill and decode pools (KV cache sent between them) and compare with "
     "the aggregated deployment",
     "", FlagArity::kSwitch},
    {"prefill-tp", "Prefill pool: tensor-parallel GPUs per replica (default: --tp)", "N"},
    {"prefill-replicas", "Prefill pool: replicas", "N", FlagArity::kValue, "1"},
    {"prefill-gpu-arch", "Prefill pool: GPU profile (default: --gpu-arch)", "NAME|FILE"},
    {"decode-tp", "Decode pool: tensor-parallel GPUs per replica (default: --tp)", "N"},
    {"decode-replicas", "Decode pool: replicas", "N", FlagArity::kValue, "1"},
    {"decode-gpu-arch", "Decode pool: GPU profile (default: --gpu-arch)", "NAME|FILE"},
    {"prefill-dp-attention",
     "Prefill pool: attention data-parallel ranks per replica (default: --dp-attention)", "N"},
    {"decode-dp-attention",
     "Decode pool: attention data-parallel ranks per replica (default: --dp-attention)", "N"},
};

absl::StatusOr<DType> ServingDType(const FlagValues& flags, absl::string_view name) {
  const std::string text = StringFlag(flags, name);
  absl::StatusOr<DType> d = ParseDType(text);
  if (!d.ok() || (*d != DType::kBf16 && *d != DType::kFp16 && *d != DType::kFp8)) {
    return FlagError(name, absl::StrCat("'", text,
                                        "' is not a serving precision; accepted: bf16, "
                                        "fp16, fp8"));
  }
  return *d;
}

// --deepep-mode, which only --deepep takes.
absl::StatusOr<DeepEpMode> DeepEpModeFlag(const FlagValues& flags, bool deepep) {
  if (!Given(flags, "deepep-mode")) return DeepEpMode::kAuto;
  if (!deepep) return FlagError("deepep-mode", "only with --deepep");
  const std::string value = StringFlag(flags, "deepep-mode");
  for (const DeepEpMode mode : {DeepEpMode::kAuto, DeepEpMode::kNormal, DeepEpMode::kLowLatency}) {
    if (value == DeepEpModeName(mode)) return mode;
  }
  if (value == "low_latency") return DeepEpMode::kLowLatency;  // SGLang's spelling
  return FlagError("deepep-mode",
                   absl::StrCat("unknown mode '", value, "'; accepted: auto, normal, low-latency"));
}

// --two-batch-overlap, which only --deepep takes.
absl::StatusOr<bool> TwoBatchOverlapFlag(const FlagValues& flags, bool deepep) {
  PROJECTOR_ASSIGN_OR_RETURN(const bool on, BoolFlag(flags, "two-batch-overlap"));
  if (!on) return false;
  if (!deepep) {
    return FlagError("two-batch-overlap",
                     "overlaps DeepEP's dispatch and combine with computation: add --deepep");
  }
  return true;
}

// d.dp_attention as flag `flag` gave it, for the TP flag `tp` (1: off).
absl::Status CheckDpAttention(const Deployment& d, absl::string_view flag, absl::string_view tp) {
  if (d.dp_attention <= 1) return absl::OkStatus();
  Deployment layout = d;
  layout.deepep = false;  // checked with its own flag
  if (absl::Status s = CheckDpAttentionLayout(layout, tp); !s.ok()) {
    return FlagError(flag, s.message());
  }
  return absl::OkStatus();
}

// The model, GPU (with the flash kernel the GPU's profile runs) and layout.
absl::StatusOr<Deployment> DeploymentFromFlags(const FlagValues& flags) {
  if (!Given(flags, "model")) {
    return FlagError("model", "required: a library model (project --list-models) or a JSON file");
  }
  absl::StatusOr<ModelSpec> model = ResolveModel(StringFlag(flags, "model"));
  if (!model.ok()) return FlagError("model", model.status().message());
  PROJECTOR_ASSIGN_OR_RETURN(const HardwareProfile hw, HardwareFromFlags(flags));
  Deployment d;
  d.model = *std::move(model);
  PROJECTOR_ASSIGN_OR_RETURN(d.tp, IntFlag(flags, "tp", {.min = 1, .max = 1024}));
  PROJECTOR_ASSIGN_OR_RETURN(d.pp, IntFlag(flags, "pp", {.min = 1, .max = 1024}));
  if (d.model.num_attention_heads % d.tp != 0) {
    return FlagError("tp", absl::StrCat(d.model.name, " has ", d.model.num_attention_heads,
                                        " attention heads; tp must divide them"));
  }
  if (d.pp > d.model.num_layers) {
    return FlagError("pp", absl::StrCat(d.model.name, " has ", d.model.num_layers,
                                        " layers, fewer than ", d.pp, " stages"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(d.expert_parallel, BoolFlag(flags, "expert-parallel"));
  if (d.expert_parallel) {
    if (!d.model.moe.has_value()) {
      return FlagError("expert-parallel", absl::StrCat(d.model.name, " has no experts"));
    }
    if (d.model.moe->num_experts % d.tp != 0) {
      return FlagError("expert-parallel",
                       absl::StrCat(d.model.name, "'s ", d.model.moe->num_experts,
                                    " experts do not split over tp=", d.tp));
    }
  }
  PROJECTOR_ASSIGN_OR_RETURN(d.dp_attention, IntFlag(flags, "dp-attention", {.min = 1, .max = 1024}));
  PROJECTOR_RETURN_IF_ERROR(CheckDpAttention(d, "dp-attention", "tp"));
  PROJECTOR_ASSIGN_OR_RETURN(d.deepep, BoolFlag(flags, "deepep"));
  // With --disaggregate it applies to the pools with data-parallel attention
  // (--prefill-dp-attention, --decode-dp-attention).
  PROJECTOR_ASSIGN_OR_RETURN(const bool pools, BoolFlag(flags, "disaggregate"));
  if (d.deepep && ((d.dp_attention < 2 && !pools) || !d.expert_parallel)) {
    return FlagError("deepep",
                     "dispatches between data-parallel attention ranks and whole experts: add "
                     "--dp-attention N (or a pool's) and --expert-parallel");
  }
  PROJECTOR_ASSIGN_OR_RETURN(d.deepep_mode, DeepEpModeFlag(flags, d.deepep));
  PROJECTOR_ASSIGN_OR_RETURN(d.two_batch_overlap, TwoBatchOverlapFlag(flags, d.deepep));
  if (d.dp_attention < 2) {  // only the pools' (PoolFromFlags)
    d.deepep = false;
    d.two_batch_overlap = false;
  }
  PROJECTOR_ASSIGN_OR_RETURN(d.weight_dtype, ServingDType(flags, "precision"));
  if (StringFlag(flags, "kv-precision") == "auto") {
    d.kv_dtype = InferenceActivationDType(d.Context());
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(d.kv_dtype, ServingDType(flags, "kv-precision"));
  }
  if (hw.gpu.MatrixPeak(d.weight_dtype, hw.gpu.sustained_clock).value() <= 0) {
    return FlagError("precision",
                     absl::StrCat(hw.gpu.name, " has no ", std::string(DTypeName(d.weight_dtype)),
                                  " matrix rate; use bf16 or fp16"));
  }
  d.hw = hw;
  PROJECTOR_RETURN_IF_ERROR(ResolveServingKernels(d));
  return d;
}

absl::StatusOr<EngineConfig> EngineFromFlags(const FlagValues& flags) {
  EngineConfig e;
  absl::StatusOr<BatchingMode> mode = ParseBatchingMode(StringFlag(flags, "batching"));
  if (!mode.ok()) return FlagError("batching", mode.status().message());
  e.batching = *mode;
  absl::StatusOr<LevelOfDetail> lod = ParseLevelOfDetail(StringFlag(flags, "lod"));
  if (!lod.ok()) return FlagError("lod", lod.status().message());
  e.lod = *lod;
  if (Given(flags, "slow-gpu")) {
    const std::string text = StringFlag(flags, "slow-gpu");
    const size_t colon = text.find(':');
    double gpu = -1;
    double factor = 0;
    if (colon == std::string::npos ||
        !absl::SimpleAtod(absl::string_view(text).substr(0, colon), &gpu) ||
        !absl::SimpleAtod(absl::string_view(text).substr(colon + 1), &factor) || gpu < 0 ||
        gpu != std::floor(gpu) || !(factor >= 1.0) || !std::isfinite(factor)) {
      return FlagError("slow-gpu", absl::StrCat("'", text,
                                                "' is not R:FACTOR with a GPU index "
                                                "R >= 0 and a FACTOR >= 1 (e.g. 3:1.5)"));
    }
    if (e.lod != LevelOfDetail::kHigh) {
      return FlagError("slow-gpu", "a straggler is an event-level effect: add --lod high");
    }
    e.slow_gpu = SlowGpu{.gpu = static_cast<int64_t>(gpu), .factor = factor};
  }
  PROJECTOR_ASSIGN_OR_RETURN(e.max_num_seqs,
                             IntFlag(flags, "max-num-seqs", {.min = 1, .max = 1 << 20}));
  PROJECTOR_ASSIGN_OR_RETURN(e.max_batched_tokens,
                             IntFlag(flags, "max-batched-tokens", {.min = 1, .max = 1 << 24}));
  PROJECTOR_ASSIGN_OR_RETURN(e.chunked_prefill, BoolFlag(flags, "chunked-prefill", true));
  PROJECTOR_ASSIGN_OR_RETURN(e.kv.memory_utilization, NumberFlag(flags, "gpu-memory-utilization"));
  if (!(e.kv.memory_utilization > 0 && e.kv.memory_utilization <= 1)) {
    return FlagError("gpu-memory-utilization",
                     absl::StrCat("a fraction of HBM in (0, 1], got ", e.kv.memory_utilization));
  }
  PROJECTOR_ASSIGN_OR_RETURN(e.kv.block_size,
                             IntFlag(flags, "block-size", {.min = 1, .max = 1 << 16}));
  for (const char* name : {"pass-overhead-us", "request-overhead-us"}) {
    PROJECTOR_ASSIGN_OR_RETURN(const double us, NumberFlag(flags, name));
    if (!(us >= 0 && us <= 1e7)) {
      return FlagError(name, absl::StrCat("microseconds in [0, 1e7], got ", us));
    }
    (absl::string_view(name) == "pass-overhead-us" ? e.pass_overhead : e.request_overhead) =
        Microseconds(us);
  }
  if (Given(flags, "concurrency")) {
    PROJECTOR_ASSIGN_OR_RETURN(e.concurrency,
                               IntFlag(flags, "concurrency", {.min = 1, .max = 1 << 24}));
  }
  PROJECTOR_ASSIGN_OR_RETURN(e.prefix_caching, BoolFlag(flags, "prefix-caching"));
  if (e.prefix_caching && e.batching == BatchingMode::kStatic) {
    return FlagError("prefix-caching",
                     "needs continuous batching (a static batch preallocates every request's "
                     "cache and prefills its prompts together); drop --batching static");
  }
  return e;
}

absl::StatusOr<LengthSpec> LengthFromFlags(const FlagValues& flags, absl::string_view prefix) {
  LengthSpec spec;
  const std::string len = absl::StrCat(prefix, "-len");
  const std::string dist = absl::StrCat(prefix, "-dist");
  const std::string spread = absl::StrCat(prefix, "-spread");
  PROJECTOR_ASSIGN_OR_RETURN(spec.mean, NumberFlag(flags, len));
  if (!(spec.mean >= 1 && spec.mean <= 1e7)) {
    return FlagError(len, absl::StrCat("a token count in [1, 1e7], got ", spec.mean));
  }
  absl::StatusOr<LengthDistribution> d = ParseLengthDistribution(StringFlag(flags, dist));
  if (!d.ok()) return FlagError(dist, d.status().message());
  spec.distribution = *d;
  PROJECTOR_ASSIGN_OR_RETURN(spec.spread, NumberFlag(flags, spread));
  WorkloadSpec probe;
  probe.input = spec;
  probe.output = spec;
  probe.arrival = ArrivalKind::kAllAtOnce;
  if (absl::Status s = ValidateWorkload(probe); !s.ok()) return FlagError(spread, s.message());
  spec.max = int64_t{1} << 24;
  return spec;
}

std::string LengthPhrase(const LengthSpec& s) {
  if (s.distribution == LengthDistribution::kFixed) return absl::StrFormat("fixed %g", s.mean);
  return absl::StrFormat("%s mean %g spread %g", LengthDistributionName(s.distribution), s.mean,
                         s.spread);
}

}  // namespace

std::span<const FlagSpec> ServeDeploymentFlags() { return kDeploymentFlags; }
std::span<const FlagSpec> ServeEngineFlags() { return kEngineFlags; }
std::span<const FlagSpec> ServeWorkloadFlags() { return kWorkloadFlags; }
std::span<const FlagSpec> ServeSloFlags() { return kSloFlags; }
std::span<const FlagSpec> ServeDisaggregationFlags() { return kDisaggregationFlags; }

namespace {

// One pool: the job's deployment with the pool's TP, replicas and GPU, PP 1.
absl::StatusOr<PoolConfig> PoolFromFlags(const FlagValues& flags, const ServeJob& job,
                                         absl::string_view pool) {
  PoolConfig out;
  out.deployment = job.options.deployment;
  out.deployment.pp = 1;
  const std::string tp = absl::StrCat(pool, "-tp");
  const std::string replicas = absl::StrCat(pool, "-replicas");
  const std::string gpu = absl::StrCat(pool, "-gpu-arch");
  PROJECTOR_ASSIGN_OR_RETURN(
      out.deployment.tp, IntFlag(flags, tp, {.min = 1, .max = 1024}, job.options.deployment.tp));
  if (out.deployment.model.num_attention_heads % out.deployment.tp != 0) {
    return FlagError(tp, absl::StrCat(out.deployment.model.name, " has ",
                                      out.deployment.model.num_attention_heads,
                                      " attention heads; tp must divide them"));
  }
  PROJECTOR_ASSIGN_OR_RETURN(out.replicas, IntFlag(flags, replicas, {.min = 1, .max = 1 << 16}));
  const std::string dp_attention = absl::StrCat(pool, "-dp-attention");
  PROJECTOR_ASSIGN_OR_RETURN(out.deployment.dp_attention,
                             IntFlag(flags, dp_attention, {.min = 1, .max = 1024},
                                     job.options.deployment.dp_attention));
  // A pool without its own count takes --dp-attention's: a bad value is that flag's.
  PROJECTOR_RETURN_IF_ERROR(CheckDpAttention(
      out.deployment, Given(flags, dp_attention) ? dp_attention : std::string("dp-attention"),
      tp));
  PROJECTOR_ASSIGN_OR_RETURN(const bool deepep, BoolFlag(flags, "deepep"));
  out.deployment.deepep = deepep && out.deployment.dp_attention > 1;
  PROJECTOR_ASSIGN_OR_RETURN(const bool two_batch, BoolFlag(flags, "two-batch-overlap"));
  out.deployment.two_batch_overlap = two_batch && out.deployment.deepep;
  if (Given(flags, gpu)) {
    absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(StringFlag(flags, gpu));
    if (!hw.ok()) return FlagError(gpu, hw.status().message());
    if (hw->gpu.MatrixPeak(out.deployment.weight_dtype, hw->gpu.sustained_clock).value() <= 0) {
      return FlagError(
          gpu, absl::StrCat(hw->gpu.name, " has no ",
                            std::string(DTypeName(out.deployment.weight_dtype)), " matrix rate"));
    }
    out.deployment.hw = *std::move(hw);
    PROJECTOR_RETURN_IF_ERROR(ResolveServingKernels(out.deployment));
  }
  return out;
}

}  // namespace

absl::StatusOr<std::optional<DisaggregatedOptions>> DisaggregationFromFlags(const FlagValues& flags,
                                                                            const ServeJob& job) {
  PROJECTOR_ASSIGN_OR_RETURN(const bool on, BoolFlag(flags, "disaggregate"));
  if (!on) {
    for (const FlagSpec& f : kDisaggregationFlags) {
      if (Given(flags, f.name)) return FlagError(f.name, "only with --disaggregate");
    }
    return std::nullopt;
  }
  if (job.options.engine.batching != BatchingMode::kContinuous) {
    return FlagError("disaggregate", "the pools run continuous batching; drop --batching static");
  }
  DisaggregatedOptions o;
  o.engine = job.options.engine;
  PROJECTOR_ASSIGN_OR_RETURN(o.prefill, PoolFromFlags(flags, job, "prefill"));
  PROJECTOR_ASSIGN_OR_RETURN(o.decode, PoolFromFlags(flags, job, "decode"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool deepep, BoolFlag(flags, "deepep"));
  if (deepep && !o.prefill.deployment.deepep && !o.decode.deployment.deepep) {
    return FlagError("deepep",
                     "no pool has data-parallel attention ranks: add --decode-dp-attention N "
                     "(or --prefill-dp-attention N)");
  }
  return o;
}

absl::StatusOr<SloRequest> SloFromFlags(const FlagValues& flags) {
  SloRequest slo;
  PROJECTOR_ASSIGN_OR_RETURN(const bool max_qps, BoolFlag(flags, "max-qps"));
  PROJECTOR_ASSIGN_OR_RETURN(const bool layouts, BoolFlag(flags, "search-layouts"));
  if (max_qps && layouts) {
    return FlagError("search-layouts", "give --max-qps or --search-layouts, not both");
  }
  if (!max_qps && !layouts) {
    for (const char* name : {"slo-ttft", "slo-tpot", "slo-percentile", "num-gpus", "threads"}) {
      if (Given(flags, name)) {
        return FlagError(name, "a latency target needs --max-qps or --search-layouts");
      }
    }
    return slo;
  }
  slo.mode = max_qps ? SloMode::kMaxQps : SloMode::kSearchLayouts;
  if (Given(flags, "threads")) {
    PROJECTOR_ASSIGN_OR_RETURN(const int64_t threads,
                               IntFlag(flags, "threads", {.min = 1, .max = 1024}));
    slo.threads = static_cast<int>(threads);
  }
  for (const char* name : {"slo-ttft", "slo-tpot"}) {
    if (!Given(flags, name)) return FlagError(name, "required with --max-qps and --search-layouts");
  }
  PROJECTOR_ASSIGN_OR_RETURN(slo.target.ttft_ms, NumberFlag(flags, "slo-ttft"));
  PROJECTOR_ASSIGN_OR_RETURN(slo.target.tpot_ms, NumberFlag(flags, "slo-tpot"));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t percentile,
                             IntFlag(flags, "slo-percentile", {.min = 1, .max = 100}));
  slo.target.percentile = static_cast<int>(percentile);
  if (absl::Status s = ValidateSloTarget(slo.target); !s.ok()) {
    const std::string message(s.message());
    const size_t colon = message.find(':');
    return FlagError(message.substr(0, colon), message.substr(colon + 2));
  }
  if (layouts) {
    if (!Given(flags, "num-gpus")) {
      return FlagError("num-gpus", "required with --search-layouts: the GPUs to divide");
    }
    PROJECTOR_ASSIGN_OR_RETURN(slo.num_gpus, IntFlag(flags, "num-gpus", {.min = 1, .max = 4096}));
    for (const char* name : {"tp", "pp", "replicas"}) {
      if (Given(flags, name)) return FlagError(name, "--search-layouts chooses it; drop it");
    }
  } else if (Given(flags, "num-gpus")) {
    return FlagError("num-gpus",
                     "only with --search-layouts (--tp, --pp, --replicas set the GPUs)");
  }
  return slo;
}

void SetServeFlagDefaults(FlagValues& flags) {
  for (std::span<const FlagSpec> group :
       {ServeDeploymentFlags(), ServeEngineFlags(), ServeWorkloadFlags()}) {
    for (const FlagSpec& f : group) {
      if (!f.default_value.empty()) flags.SetDefault(f.name, f.default_value);
    }
  }
}

absl::StatusOr<ServeJob> ServeJobFromFlags(const FlagValues& flags, bool rate_searched) {
  ServeJob job;
  PROJECTOR_ASSIGN_OR_RETURN(job.options.deployment, DeploymentFromFlags(flags));
  PROJECTOR_ASSIGN_OR_RETURN(job.options.engine, EngineFromFlags(flags));
  if (job.options.deployment.dp_attention > 1) {
    const EngineConfig& e = job.options.engine;
    if (e.batching != BatchingMode::kContinuous) {
      return FlagError("dp-attention", "runs continuous batching; drop --batching static");
    }
  }
  PROJECTOR_ASSIGN_OR_RETURN(job.options.replicas,
                             IntFlag(flags, "replicas", {.min = 1, .max = 1 << 16}));
  if (Given(flags, "trace")) {
    if (rate_searched) {
      return FlagError("trace",
                       "the latency-target search draws Poisson arrivals at each rate; "
                       "give lengths (--input-len, --output-len) instead of a trace");
    }
    for (const char* name : {"qps", "num-requests", "input-len", "output-len", "seed",
                             "shared-prefix-len", "prefix-groups"}) {
      if (Given(flags, name)) {
        return FlagError(name, "a trace gives the requests; drop it or --trace");
      }
    }
    const std::string path = StringFlag(flags, "trace");
    absl::StatusOr<std::vector<Request>> trace = LoadRequestTrace(path);
    if (!trace.ok()) return WithFlag("trace", trace.status());
    job.requests = *std::move(trace);
    job.from_trace = true;
    job.workload = absl::StrCat(
        "trace ", path, " (", FormatCount(static_cast<int64_t>(job.requests.size())), " requests)");
    return job;
  }
  WorkloadSpec& w = job.spec;
  PROJECTOR_ASSIGN_OR_RETURN(w.num_requests,
                             IntFlag(flags, "num-requests", {.min = 1, .max = int64_t{1} << 24}));
  PROJECTOR_ASSIGN_OR_RETURN(w.input, LengthFromFlags(flags, "input"));
  PROJECTOR_ASSIGN_OR_RETURN(w.output, LengthFromFlags(flags, "output"));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t seed, IntFlag(flags, "seed", {.min = 0}));
  w.seed = static_cast<uint64_t>(seed);
  PROJECTOR_ASSIGN_OR_RETURN(w.shared_prefix_len,
                             IntFlag(flags, "shared-prefix-len", {.min = 0, .max = 1 << 24}));
  PROJECTOR_ASSIGN_OR_RETURN(w.prefix_groups,
                             IntFlag(flags, "prefix-groups", {.min = 1, .max = 1 << 24}));
  if (w.prefix_groups > 1 && w.shared_prefix_len == 0) {
    return FlagError("prefix-groups",
                     "groups share a prefix: give its length with --shared-prefix-len N");
  }
  const std::string arrival = StringFlag(flags, "arrival");
  if (arrival != "poisson" && arrival != "fixed") {
    return FlagError("arrival", absl::StrCat("'", arrival,
                                             "' is not an arrival process; "
                                             "accepted: poisson, fixed"));
  }
  if (rate_searched) {
    for (const char* name : {"qps", "concurrency"}) {
      if (Given(flags, name))
        return FlagError(name, "the latency-target search sets the rate; drop it");
    }
    w.arrival = ArrivalKind::kPoisson;
  } else if (Given(flags, "qps")) {
    PROJECTOR_ASSIGN_OR_RETURN(w.qps, NumberFlag(flags, "qps"));
    if (!(w.qps > 0 && w.qps <= 1e9)) {
      return FlagError("qps", absl::StrCat("requests per second > 0, got ", w.qps));
    }
    w.arrival = arrival == "poisson" ? ArrivalKind::kPoisson : ArrivalKind::kFixedRate;
  } else if (Given(flags, "concurrency") || job.options.engine.batching == BatchingMode::kStatic) {
    w.arrival = ArrivalKind::kAllAtOnce;
  } else {
    return FlagError("qps",
                     "give an arrival rate (--qps R), a closed-loop client "
                     "(--concurrency N) or a trace (--trace FILE)");
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateWorkload(w));
  job.requests = GenerateRequests(w);
  std::string arrivals = rate_searched ? std::string("poisson at the searched rate")
                         : w.arrival == ArrivalKind::kAllAtOnce
                             ? std::string("all at once")
                             : absl::StrFormat("%s at %g req/s", ArrivalKindName(w.arrival), w.qps);
  if (job.options.engine.concurrency > 0) {
    absl::StrAppend(&arrivals, ", at most ", job.options.engine.concurrency, " in flight");
  }
  job.workload =
      absl::StrCat(arrivals, ", ", FormatCount(w.num_requests), " requests, input ",
                   LengthPhrase(w.input), ", output ", LengthPhrase(w.output), ", seed ", seed);
  if (w.shared_prefix_len > 0) {
    absl::StrAppend(&job.workload, ", each prompt after a shared prefix of ",
                    FormatCount(w.shared_prefix_len), " tokens (", FormatCount(w.prefix_groups),
                    w.prefix_groups == 1 ? " group)" : " groups)");
  }
  return job;
}

}  // namespace projector
