#include "backends/profile/profile_file.h"

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/json_reader.h"
#include "core/status_macros.h"

namespace projector {
namespace {

using nlohmann::json;

constexpr CollectiveKind kCollectiveKinds[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
    CollectiveKind::kAllToAll,  CollectiveKind::kSendRecv,  CollectiveKind::kBroadcast};

const std::vector<std::string> kModuleNames = {"attention", "mlp",       "moe",    "moe_a2a",
                                               "norms",     "embedding", "output", "layer"};

absl::StatusOr<TimingStats> ParseTiming(JsonObject& parent, std::string_view key) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject t, parent.Object(key));
  TimingStats stats;
  PROJECTOR_ASSIGN_OR_RETURN(double median_us, t.PositiveNumber("median"));
  PROJECTOR_ASSIGN_OR_RETURN(double min_us, t.NumberOr("min", median_us));
  PROJECTOR_ASSIGN_OR_RETURN(double max_us, t.NumberOr("max", median_us));
  PROJECTOR_ASSIGN_OR_RETURN(stats.repetitions, t.PositiveInt("repetitions"));
  PROJECTOR_RETURN_IF_ERROR(t.CheckNoUnknownKeys());
  // One kernel or module timed for more than an hour is a unit slip (µs expected), and beyond
  // that the projection's sums could leave the finite range.
  constexpr double kMaxTimingUs = 3.6e9;
  for (auto [name, v] :
       {std::pair<const char*, double>{"median", median_us}, {"min", min_us}, {"max", max_us}}) {
    if (v > kMaxTimingUs) {
      return t.FieldError(name, absl::StrFormat("%g µs is over an hour; accepted: <= %g µs "
                                                "(times are in microseconds)",
                                                v, kMaxTimingUs));
    }
  }
  if (!(min_us > 0)) return t.FieldError("min", absl::StrCat("must be > 0, got ", min_us));
  if (min_us > median_us) {
    return t.FieldError("min", absl::StrFormat("%g exceeds the median %g; accepted: min <= median "
                                               "<= max",
                                               min_us, median_us));
  }
  if (max_us < median_us) {
    return t.FieldError("max", absl::StrFormat("%g is below the median %g; accepted: min <= "
                                               "median <= max",
                                               max_us, median_us));
  }
  stats.median = Microseconds(median_us);
  stats.min = Microseconds(min_us);
  stats.max = Microseconds(max_us);
  return stats;
}

absl::StatusOr<DType> ParseDTypeField(JsonObject& o, std::string_view key, DType fallback) {
  PROJECTOR_ASSIGN_OR_RETURN(std::string name, o.StringOr(key, std::string(DTypeName(fallback))));
  auto d = ParseDType(name);
  if (!d.ok()) return o.FieldError(key, std::string(d.status().message()));
  return *d;
}

absl::StatusOr<ProfileScenario> ParseScenario(JsonObject& root) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject s, root.Object("scenario"));
  ProfileScenario sc;
  PROJECTOR_ASSIGN_OR_RETURN(sc.model, s.String("model"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.gpu, s.String("gpu"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.num_gpus, s.PositiveInt("num_gpus"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.gpus_per_node, s.IntOr("gpus_per_node", 0));
  if (sc.gpus_per_node < 0) return s.FieldError("gpus_per_node", "must be >= 0 (0: the GPU's)");
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject layout, s.Object("layout"));
  ParallelConfig& p = sc.parallel;
  for (auto [key, field] : std::initializer_list<std::pair<const char*, int64_t*>>{
           {"tp", &p.tp}, {"pp", &p.pp}, {"vpp", &p.vpp}, {"cp", &p.cp}, {"ep", &p.ep},
           {"etp", &p.etp}, {"dp", &p.dp}}) {
    PROJECTOR_ASSIGN_OR_RETURN(*field, layout.IntOr(key, 1));
    if (*field < 1) return layout.FieldError(key, absl::StrCat("must be >= 1, got ", *field));
  }
  PROJECTOR_ASSIGN_OR_RETURN(p.sequence_parallel, layout.BoolOr("sequence_parallel", false));
  PROJECTOR_ASSIGN_OR_RETURN(p.fsdp, layout.BoolOr("fsdp", false));
  PROJECTOR_ASSIGN_OR_RETURN(p.distributed_optimizer,
                             layout.BoolOr("distributed_optimizer", false));
  PROJECTOR_RETURN_IF_ERROR(layout.CheckNoUnknownKeys());
  if (p.NumGpus() != sc.num_gpus) {
    return s.FieldError("num_gpus",
                        absl::StrFormat("%d does not equal tp·pp·cp·dp = %d of /scenario/layout",
                                        sc.num_gpus, p.NumGpus()));
  }
  PROJECTOR_ASSIGN_OR_RETURN(sc.micro_batch, s.PositiveInt("micro_batch"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.seq_len, s.PositiveInt("seq_len"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.global_batch, s.IntOr("global_batch", 0));
  if (sc.global_batch < 0) return s.FieldError("global_batch", "must be >= 0 (0: micro_batch·dp)");
  PROJECTOR_ASSIGN_OR_RETURN(sc.precision, ParseDTypeField(s, "precision", DType::kBf16));
  PROJECTOR_ASSIGN_OR_RETURN(std::string recompute, s.EnumOr("recompute", {"none", "selective", "full"}, "none"));
  PROJECTOR_ASSIGN_OR_RETURN(sc.recompute, ParseRecompute(recompute));
  PROJECTOR_ASSIGN_OR_RETURN(sc.clock_mhz, s.NumberOr("clock_mhz", 0));
  if (sc.clock_mhz < 0) return s.FieldError("clock_mhz", "must be >= 0 (0: the GPU's sustained clock)");
  PROJECTOR_ASSIGN_OR_RETURN(sc.measured_tokens_per_s_per_gpu,
                             s.OptionalNumber("measured_tokens_per_s_per_gpu"));
  if (sc.measured_tokens_per_s_per_gpu && !(*sc.measured_tokens_per_s_per_gpu > 0)) {
    return s.FieldError("measured_tokens_per_s_per_gpu", "must be > 0");
  }
  PROJECTOR_RETURN_IF_ERROR(s.CheckNoUnknownKeys());
  return sc;
}

absl::StatusOr<ProfiledOp> ParseOp(const json& value, const std::string& origin,
                                   const std::string& pointer, const ProfileScenario& sc) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject o, JsonObject::Make(value, origin, pointer));
  ProfiledOp op;
  PROJECTOR_ASSIGN_OR_RETURN(std::string kind,
                             o.Enum("kind", {"gemm", "attention", "memory", "collective"}));
  PROJECTOR_ASSIGN_OR_RETURN(op.name, o.StringOr("name", ""));
  PROJECTOR_ASSIGN_OR_RETURN(op.module, o.StringOr("module", ""));
  if (kind == "gemm") {
    op.kind = ProfiledOpKind::kGemm;
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.m, o.PositiveInt("m"));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.n, o.PositiveInt("n"));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.k, o.PositiveInt("k"));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.batch, o.IntOr("batch", 1));
    if (op.gemm.batch < 1) return o.FieldError("batch", absl::StrCat("must be >= 1, got ", op.gemm.batch));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.dtype, ParseDTypeField(o, "dtype", sc.precision));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.transpose_a, o.BoolOr("transpose_a", false));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.transpose_b, o.BoolOr("transpose_b", false));
    PROJECTOR_ASSIGN_OR_RETURN(op.gemm.block_scaled, o.BoolOr("block_scaled", false));
  } else if (kind == "attention") {
    op.kind = ProfiledOpKind::kAttention;
    AttentionShape& a = op.attention;
    PROJECTOR_ASSIGN_OR_RETURN(std::string pass, o.Enum("pass", {"fwd", "bwd"}));
    op.pass = pass == "fwd" ? AttentionPass::kForward : AttentionPass::kBackward;
    PROJECTOR_ASSIGN_OR_RETURN(a.batch, o.PositiveInt("batch"));
    PROJECTOR_ASSIGN_OR_RETURN(a.num_q_heads, o.PositiveInt("num_q_heads"));
    PROJECTOR_ASSIGN_OR_RETURN(a.num_kv_heads, o.PositiveInt("num_kv_heads"));
    PROJECTOR_ASSIGN_OR_RETURN(a.seq_q, o.PositiveInt("seq_q"));
    PROJECTOR_ASSIGN_OR_RETURN(a.seq_kv, o.PositiveInt("seq_kv"));
    PROJECTOR_ASSIGN_OR_RETURN(a.qk_head_dim, o.PositiveInt("qk_head_dim"));
    PROJECTOR_ASSIGN_OR_RETURN(a.v_head_dim, o.PositiveInt("v_head_dim"));
    PROJECTOR_ASSIGN_OR_RETURN(a.causal, o.BoolOr("causal", true));
    PROJECTOR_ASSIGN_OR_RETURN(a.dtype, ParseDTypeField(o, "dtype", sc.precision));
    if (a.num_q_heads % a.num_kv_heads != 0) {
      return o.FieldError("num_kv_heads",
                          absl::StrFormat("shape mismatch: num_q_heads %d is not a multiple of "
                                          "num_kv_heads %d",
                                          a.num_q_heads, a.num_kv_heads));
    }
  } else if (kind == "memory") {
    op.kind = ProfiledOpKind::kMemory;
    PROJECTOR_ASSIGN_OR_RETURN(double bytes, o.PositiveNumber("bytes"));
    PROJECTOR_ASSIGN_OR_RETURN(double flops, o.NumberOr("flops", 0));
    if (flops < 0) return o.FieldError("flops", absl::StrCat("must be >= 0, got ", flops));
    op.memory.bytes = Bytes(bytes);
    op.memory.flops = Flops(flops);
    PROJECTOR_ASSIGN_OR_RETURN(op.memory.launches, o.IntOr("launches", 1));
    if (op.memory.launches < 1) return o.FieldError("launches", "must be >= 1");
  } else {
    op.kind = ProfiledOpKind::kCollective;
    PROJECTOR_ASSIGN_OR_RETURN(std::string name, o.String("op"));
    auto ck = ParseCollectiveKindName(name);
    if (!ck.ok()) return o.FieldError("op", std::string(ck.status().message()));
    op.collective.kind = *ck;
    PROJECTOR_ASSIGN_OR_RETURN(double bytes, o.PositiveNumber("bytes"));
    op.collective.bytes = Bytes(bytes);
    PROJECTOR_ASSIGN_OR_RETURN(op.collective.group.size, o.PositiveInt("ranks"));
    PROJECTOR_ASSIGN_OR_RETURN(op.collective.group.stride, o.IntOr("stride", 1));
    if (op.collective.group.stride < 1) return o.FieldError("stride", "must be >= 1");
    if (op.collective.kind == CollectiveKind::kSendRecv && op.collective.group.size != 2) {
      return o.FieldError("ranks", absl::StrCat("shape mismatch: sendrecv needs ranks 2, got ",
                                                op.collective.group.size));
    }
    const int64_t span = (op.collective.group.size - 1) * op.collective.group.stride + 1;
    if (span > sc.num_gpus) {
      return o.FieldError(
          "ranks", absl::StrFormat("shape mismatch: the group spans %d ranks (ranks %d, stride "
                                   "%d) but /scenario/num_gpus is %d",
                                   span, op.collective.group.size, op.collective.group.stride,
                                   sc.num_gpus));
    }
  }
  PROJECTOR_ASSIGN_OR_RETURN(op.time, ParseTiming(o, "time_us"));
  PROJECTOR_RETURN_IF_ERROR(o.CheckNoUnknownKeys());
  return op;
}

absl::StatusOr<ProfiledModule> ParseModule(const json& value, const std::string& origin,
                                           const std::string& pointer) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject o, JsonObject::Make(value, origin, pointer));
  ProfiledModule m;
  PROJECTOR_ASSIGN_OR_RETURN(m.module, o.Enum("module", kModuleNames));
  const bool per_layer = m.module != "embedding" && m.module != "output";
  if (per_layer) {
    PROJECTOR_ASSIGN_OR_RETURN(m.layer_kind, o.EnumOr("layer_kind", {"dense", "moe"}, "dense"));
  } else {
    o.Accept("layer_kind");
    if (o.Has("layer_kind")) {
      return o.FieldError("layer_kind", absl::StrCat("not allowed for module '", m.module,
                                                     "'; accepted: only per-layer modules"));
    }
  }
  if ((m.module == "moe" || m.module == "moe_a2a") && m.layer_kind != "moe") {
    return o.FieldError("layer_kind", absl::StrCat("module '", m.module, "' needs layer_kind moe"));
  }
  if (o.Has("forward_us")) {
    PROJECTOR_ASSIGN_OR_RETURN(m.forward, ParseTiming(o, "forward_us"));
  }
  if (o.Has("backward_us")) {
    PROJECTOR_ASSIGN_OR_RETURN(m.backward, ParseTiming(o, "backward_us"));
  }
  o.Accept("forward_us");
  o.Accept("backward_us");
  PROJECTOR_RETURN_IF_ERROR(o.CheckNoUnknownKeys());
  if (!m.forward && !m.backward) {
    return JsonFieldError(origin, pointer + "/forward_us",
                          "missing field; accepted: forward_us and/or backward_us");
  }
  return m;
}

// Built key by key: GCC 12 reports a false -Warray-bounds on nested initializer lists of json.
json TimingToJson(const TimingStats& t) {
  json j = json::object();
  j["median"] = ToMicroseconds(t.median);
  j["min"] = ToMicroseconds(t.min);
  j["max"] = ToMicroseconds(t.max);
  j["repetitions"] = t.repetitions;
  return j;
}

}  // namespace

std::string_view ProfiledOpKindName(ProfiledOpKind k) {
  switch (k) {
    case ProfiledOpKind::kGemm:
      return "gemm";
    case ProfiledOpKind::kAttention:
      return "attention";
    case ProfiledOpKind::kMemory:
      return "memory";
    case ProfiledOpKind::kCollective:
      return "collective";
  }
  return "?";
}

absl::StatusOr<CollectiveKind> ParseCollectiveKindName(std::string_view name) {
  std::string valid;
  for (CollectiveKind k : kCollectiveKinds) {
    if (CollectiveKindName(k) == name) return k;
    absl::StrAppend(&valid, valid.empty() ? "" : ", ", std::string(CollectiveKindName(k)));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective '", std::string(name), "'; accepted: ", valid));
}

absl::StatusOr<Profile> ParseProfile(const json& value, const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject root, JsonObject::Make(value, origin, ""));
  PROJECTOR_ASSIGN_OR_RETURN(std::string format, root.String("format"));
  if (format != kProfileFormat) {
    return root.FieldError("format", absl::StrCat("unknown format '", format, "'; accepted: ",
                                                  std::string(kProfileFormat)));
  }
  PROJECTOR_ASSIGN_OR_RETURN(int64_t version, root.Int("version"));
  if (version != kProfileVersion) {
    return root.FieldError("version", absl::StrCat("unknown version ", version,
                                                   "; accepted: ", kProfileVersion));
  }
  Profile profile;
  profile.origin = origin;
  PROJECTOR_ASSIGN_OR_RETURN(profile.scenario, ParseScenario(root));
  PROJECTOR_ASSIGN_OR_RETURN(profile.tool, root.StringOr("tool", ""));
  PROJECTOR_ASSIGN_OR_RETURN(profile.device, root.StringOr("device", ""));
  root.Accept("ops");
  root.Accept("modules");
  if (!root.Has("ops") && !root.Has("modules")) {
    return JsonFieldError(origin, "/ops", "missing field; accepted: ops and/or modules");
  }
  if (root.Has("ops")) {
    PROJECTOR_ASSIGN_OR_RETURN(const json* ops, root.Array("ops"));
    for (size_t i = 0; i < ops->size(); ++i) {
      PROJECTOR_ASSIGN_OR_RETURN(
          ProfiledOp op, ParseOp((*ops)[i], origin, absl::StrCat("/ops/", i), profile.scenario));
      profile.ops.push_back(std::move(op));
    }
  }
  if (root.Has("modules")) {
    PROJECTOR_ASSIGN_OR_RETURN(const json* mods, root.Array("modules"));
    for (size_t i = 0; i < mods->size(); ++i) {
      PROJECTOR_ASSIGN_OR_RETURN(ProfiledModule m,
                                 ParseModule((*mods)[i], origin, absl::StrCat("/modules/", i)));
      profile.modules.push_back(std::move(m));
    }
  }
  PROJECTOR_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  return profile;
}

absl::StatusOr<Profile> LoadProfileFile(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(json value, ReadJsonFile(path));
  return ParseProfile(value, path);
}

// GCC 12 reports a false -Warray-bounds inside std::map when json objects are built in a loop
// (GCC bug 107138); the code is plain nlohmann::json use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
json ProfileToJson(const Profile& profile) {
  const ProfileScenario& sc = profile.scenario;
  const ParallelConfig& p = sc.parallel;
  json layout = json::object();
  layout["tp"] = p.tp;
  layout["pp"] = p.pp;
  layout["vpp"] = p.vpp;
  layout["cp"] = p.cp;
  layout["ep"] = p.ep;
  layout["etp"] = p.etp;
  layout["dp"] = p.dp;
  layout["sequence_parallel"] = p.sequence_parallel;
  layout["fsdp"] = p.fsdp;
  layout["distributed_optimizer"] = p.distributed_optimizer;
  json scenario = json::object();
  scenario["model"] = sc.model;
  scenario["gpu"] = sc.gpu;
  scenario["num_gpus"] = sc.num_gpus;
  scenario["gpus_per_node"] = sc.gpus_per_node;
  scenario["layout"] = std::move(layout);
  scenario["micro_batch"] = sc.micro_batch;
  scenario["seq_len"] = sc.seq_len;
  scenario["global_batch"] = sc.global_batch;
  scenario["precision"] = std::string(DTypeName(sc.precision));
  scenario["recompute"] = std::string(RecomputeName(sc.recompute));
  scenario["clock_mhz"] = sc.clock_mhz;
  if (sc.measured_tokens_per_s_per_gpu) {
    scenario["measured_tokens_per_s_per_gpu"] = *sc.measured_tokens_per_s_per_gpu;
  }
  json ops = json::array();
  for (const ProfiledOp& op : profile.ops) {
    json j = json::object();
    j["kind"] = std::string(ProfiledOpKindName(op.kind));
    if (!op.name.empty()) j["name"] = op.name;
    if (!op.module.empty()) j["module"] = op.module;
    switch (op.kind) {
      case ProfiledOpKind::kGemm:
        j["m"] = op.gemm.m;
        j["n"] = op.gemm.n;
        j["k"] = op.gemm.k;
        // No `kernels`: the measure runners time a batch as one batched GEMM, so a measured
        // op stands for one kernel, and a projection of a per-expert-kernel GroupedLinear
        // (GemmShape::kernels) scales from it by the simulate backends' ratio, launches included.
        j["batch"] = op.gemm.batch;
        j["dtype"] = std::string(DTypeName(op.gemm.dtype));
        j["transpose_a"] = op.gemm.transpose_a;
        j["transpose_b"] = op.gemm.transpose_b;
        if (op.gemm.block_scaled) j["block_scaled"] = true;
        break;
      case ProfiledOpKind::kAttention: {
        const AttentionShape& a = op.attention;
        j["pass"] = op.pass == AttentionPass::kForward ? "fwd" : "bwd";
        j["batch"] = a.batch;
        j["num_q_heads"] = a.num_q_heads;
        j["num_kv_heads"] = a.num_kv_heads;
        j["seq_q"] = a.seq_q;
        j["seq_kv"] = a.seq_kv;
        j["qk_head_dim"] = a.qk_head_dim;
        j["v_head_dim"] = a.v_head_dim;
        j["causal"] = a.causal;
        j["dtype"] = std::string(DTypeName(a.dtype));
        break;
      }
      case ProfiledOpKind::kMemory:
        j["bytes"] = op.memory.bytes.value();
        j["flops"] = op.memory.flops.value();
        j["launches"] = op.memory.launches;
        break;
      case ProfiledOpKind::kCollective:
        j["op"] = std::string(CollectiveKindName(op.collective.kind));
        j["bytes"] = op.collective.bytes.value();
        j["ranks"] = op.collective.group.size;
        j["stride"] = op.collective.group.stride;
        break;
    }
    j["time_us"] = TimingToJson(op.time);
    ops.push_back(std::move(j));
  }
  json modules = json::array();
  for (const ProfiledModule& m : profile.modules) {
    json j = json::object();
    j["module"] = m.module;
    if (!m.layer_kind.empty()) j["layer_kind"] = m.layer_kind;
    if (m.forward) j["forward_us"] = TimingToJson(*m.forward);
    if (m.backward) j["backward_us"] = TimingToJson(*m.backward);
    modules.push_back(std::move(j));
  }
  json out = json::object();
  out["format"] = std::string(kProfileFormat);
  out["version"] = kProfileVersion;
  out["scenario"] = std::move(scenario);
  if (!profile.tool.empty()) out["tool"] = profile.tool;
  if (!profile.device.empty()) out["device"] = profile.device;
  out["ops"] = std::move(ops);
  if (!modules.empty()) out["modules"] = std::move(modules);
  return out;
}
#pragma GCC diagnostic pop

absl::Status WriteProfileFile(const Profile& profile, const std::string& path) {
  std::ofstream file(path);
  if (!file) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot open for writing"));
  file << ProfileToJson(profile).dump(2) << "\n";
  file.close();
  if (!file) return absl::InvalidArgumentError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

std::string DescribeProfiledOp(const ProfiledOp& op) {
  switch (op.kind) {
    case ProfiledOpKind::kGemm:
      return absl::StrFormat("gemm %dx%dx%d b%d %s", op.gemm.m, op.gemm.n, op.gemm.k,
                             op.gemm.batch, DTypeName(op.gemm.dtype));
    case ProfiledOpKind::kAttention: {
      const AttentionShape& a = op.attention;
      return absl::StrFormat("attention %s B%d H%d/%d S%d/%d D%d/%d%s %s",
                             op.pass == AttentionPass::kForward ? "fwd" : "bwd", a.batch,
                             a.num_q_heads, a.num_kv_heads, a.seq_q, a.seq_kv, a.qk_head_dim,
                             a.v_head_dim, a.causal ? " causal" : "", DTypeName(a.dtype));
    }
    case ProfiledOpKind::kMemory:
      return absl::StrFormat("memory %.4g B x%d", op.memory.bytes.value(), op.memory.launches);
    case ProfiledOpKind::kCollective:
      return absl::StrFormat("%s %.4g B ranks %d stride %d",
                             CollectiveKindName(op.collective.kind), op.collective.bytes.value(),
                             op.collective.group.size, op.collective.group.stride);
  }
  return "?";
}

}  // namespace projector
