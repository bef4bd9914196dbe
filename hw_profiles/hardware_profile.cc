#include "hw_profiles/hardware_profile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string_view>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/file_memo.h"
#include "core/json_reader.h"
#include "core/yaml_reader.h"
#include "core/status_macros.h"
#include "core/suggest.h"
#include "core/training_config.h"

#ifndef PROJECTOR_DEFAULT_HW_PROFILES_DIR
#define PROJECTOR_DEFAULT_HW_PROFILES_DIR "hw_profiles"
#endif

namespace projector {
namespace {

using nlohmann::json;

// Per-field range a figure must satisfy.
enum class Range {
  kPositive,     // > 0: sizes, rates, clocks, counts
  kNonNegative,  // >= 0: optional capabilities where 0 means "none" (LLC, fp8 rate, overheads)
  kFraction,     // (0, 1]: efficiencies
};

// Plausibility bounds of every figure, whatever its unit (counts, MHz, FLOP/clk, GB/s, TB/s, µs,
// GiB, MB all lie far inside [1e-3, 1e7] for any real part): beyond them a typo would turn into
// infinite or zero times downstream.
constexpr double kSmallestFigure = 1e-3;
constexpr double kLargestFigure = 1e7;

const char* RangeText(Range range) {
  switch (range) {
    case Range::kPositive:
      return "must be in [0.001, 1e7] (a positive figure of a real part)";
    case Range::kNonNegative:
      return "must be 0 (none) or in [0.001, 1e7]";
    case Range::kFraction:
      return "must be a fraction in [0.001, 1]";
  }
  return "";
}

bool InRange(double v, Range range) {
  switch (range) {
    case Range::kPositive:
      return v >= kSmallestFigure && v <= kLargestFigure;
    case Range::kNonNegative:
      return v == 0 || (v >= kSmallestFigure && v <= kLargestFigure);
    case Range::kFraction:
      return v >= kSmallestFigure && v <= 1;
  }
  return false;
}

// Reads the figures of one JSON object: each is a bare number (user-written profiles) or
// {"value": n, "source": "...", "derived": "..."} (the shipped library cites every figure).
// Sources are collected into `sources`, keyed by the figure's JSON pointer.
class FigureReader {
 public:
  FigureReader(JsonObject obj, std::map<std::string, std::string>& sources)
      : obj_(std::move(obj)), sources_(sources) {}

  JsonObject& object() { return obj_; }

  // nullopt when absent or null (the caller supplies the default).
  absl::StatusOr<std::optional<double>> Optional(std::string_view key, Range range) {
    if (!obj_.Has(key)) {
      obj_.Accept(key);
      return std::optional<double>();
    }
    PROJECTOR_ASSIGN_OR_RETURN(Figure fig, Read(key));
    if (!InRange(fig.value, range)) {
      return JsonFieldError(obj_.origin(), fig.pointer,
                            absl::StrCat(RangeText(range), ", got ", FormatNumber(fig.value)));
    }
    return std::optional<double>(fig.value);
  }

  absl::StatusOr<double> Required(std::string_view key, Range range) {
    if (!obj_.Has(key)) {
      obj_.Accept(key);
      return obj_.FieldError(key, absl::StrCat("required field is missing; a number or {\"value\": "
                                               "number, \"source\": string}"));
    }
    PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> v, Optional(key, range));
    return *v;
  }

  absl::StatusOr<double> Or(std::string_view key, Range range, double fallback) {
    PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> v, Optional(key, range));
    return v.value_or(fallback);
  }

  // A count: a positive integer.
  absl::StatusOr<int64_t> Count(std::string_view key) {
    if (!obj_.Has(key)) {
      obj_.Accept(key);
      return obj_.FieldError(key, "required field is missing; a positive integer");
    }
    PROJECTOR_ASSIGN_OR_RETURN(Figure fig, Read(key));
    if (std::floor(fig.value) != fig.value || std::fabs(fig.value) > 9e15) {
      return JsonFieldError(obj_.origin(), fig.pointer,
                            absl::StrCat("expected an integer, got ", FormatNumber(fig.value)));
    }
    if (fig.value <= 0 || fig.value > kLargestFigure) {
      return JsonFieldError(obj_.origin(), fig.pointer,
                            absl::StrCat("must be in [1, 1e7], got ", FormatNumber(fig.value)));
    }
    return static_cast<int64_t>(fig.value);
  }

  // A count that may be 0 (0 = none): a non-negative integer; `fallback` when absent.
  absl::StatusOr<int64_t> CountOr(std::string_view key, int64_t fallback) {
    if (!obj_.Has(key)) {
      obj_.Accept(key);
      return fallback;
    }
    PROJECTOR_ASSIGN_OR_RETURN(Figure fig, Read(key));
    if (std::floor(fig.value) != fig.value || std::fabs(fig.value) > 9e15) {
      return JsonFieldError(obj_.origin(), fig.pointer,
                            absl::StrCat("expected an integer, got ", FormatNumber(fig.value)));
    }
    if (fig.value < 0 || fig.value > kLargestFigure) {
      return JsonFieldError(obj_.origin(), fig.pointer,
                            absl::StrCat("must be in [0, 1e7], got ", FormatNumber(fig.value)));
    }
    return static_cast<int64_t>(fig.value);
  }

  // A flag, bare or as {"value": true, "source": "..."}; `fallback` when absent.
  absl::StatusOr<bool> Flag(std::string_view key, bool fallback) {
    if (!obj_.Has(key)) {
      obj_.Accept(key);
      return fallback;
    }
    const json& j = obj_.json().at(std::string(key));
    if (!j.is_object()) return obj_.Bool(key);
    obj_.Accept(key);
    PROJECTOR_ASSIGN_OR_RETURN(JsonObject fig, JsonObject::Make(j, obj_.origin(), obj_.PathOf(key)));
    PROJECTOR_ASSIGN_OR_RETURN(bool value, fig.Bool("value"));
    PROJECTOR_RETURN_IF_ERROR(ReadProvenance(fig));
    return value;
  }

  // A name, bare or as {"value": "...", "source": "..."}; nullopt when absent.
  absl::StatusOr<std::optional<std::string>> Name(std::string_view key) {
    obj_.Accept(key);
    if (!obj_.Has(key)) return std::optional<std::string>();
    const json& j = obj_.json().at(std::string(key));
    if (!j.is_object()) return obj_.String(key);
    PROJECTOR_ASSIGN_OR_RETURN(JsonObject fig,
                               JsonObject::Make(j, obj_.origin(), obj_.PathOf(key)));
    PROJECTOR_ASSIGN_OR_RETURN(std::string value, fig.String("value"));
    PROJECTOR_RETURN_IF_ERROR(ReadProvenance(fig));
    return value;
  }

 private:
  struct Figure {
    double value = 0;
    std::string pointer;  // of the number itself, for range messages
  };

  static std::string FormatNumber(double v) { return absl::StrCat(v); }

  absl::StatusOr<Figure> Read(std::string_view key) {
    const json& j = obj_.json().at(std::string(key));
    if (j.is_number()) {
      PROJECTOR_ASSIGN_OR_RETURN(double v, obj_.Number(key));
      return Figure{v, obj_.PathOf(key)};
    }
    obj_.Accept(key);
    if (!j.is_object()) {
      return obj_.FieldError(
          key, absl::StrCat("expected a number or {\"value\": number, \"source\": string}, got ",
                            std::string(JsonTypeName(j)), j.is_primitive() ? absl::StrCat(" ", j.dump()) : ""));
    }
    PROJECTOR_ASSIGN_OR_RETURN(JsonObject fig, JsonObject::Make(j, obj_.origin(), obj_.PathOf(key)));
    PROJECTOR_ASSIGN_OR_RETURN(double v, fig.Number("value"));
    PROJECTOR_RETURN_IF_ERROR(ReadProvenance(fig));
    return Figure{v, fig.PathOf("value")};
  }

  // "source" and "derived" of a figure object; records the source by pointer.
  absl::Status ReadProvenance(JsonObject& fig) {
    PROJECTOR_ASSIGN_OR_RETURN(std::string source, fig.StringOr("source", ""));
    PROJECTOR_ASSIGN_OR_RETURN(std::string derived, fig.StringOr("derived", ""));
    PROJECTOR_RETURN_IF_ERROR(fig.CheckNoUnknownKeys());
    if (!source.empty()) {
      sources_[fig.pointer()] =
          derived.empty() ? source : absl::StrCat(source, " [derived: ", derived, "]");
    }
    return absl::OkStatus();
  }

  JsonObject obj_;
  std::map<std::string, std::string>& sources_;
};

absl::StatusOr<FigureReader> Section(JsonObject& parent, std::string_view key,
                                     std::map<std::string, std::string>& sources) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject obj, parent.Object(key));
  return FigureReader(std::move(obj), sources);
}

absl::Status ReadMatrixRates(FigureReader& gpu, GpuSpec& spec,
                             std::map<std::string, std::string>& sources) {
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader rates,
                             Section(gpu.object(), "matrix_flops_per_clock_per_cu", sources));
  for (DType d : kAllDTypes) {
    // 0 or absent = no native support; bf16 > 0 is a cross-field rule of the validator.
    PROJECTOR_ASSIGN_OR_RETURN(double v, rates.Or(DTypeName(d), Range::kNonNegative, 0.0));
    spec.matrix_flops_per_clock_per_cu[DTypeIndex(d)] = v;
  }
  return rates.object().CheckNoUnknownKeys();
}

// Why `name` cannot name an attention kernel; empty when it can.
std::string KernelNameProblem(std::string_view name) {
  const bool plain = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
  if (!plain) {
    return absl::StrCat("'", std::string(name),
                        "' is not a kernel name; lower-case letters, digits, '-' and '_' (e.g. "
                        "fa2)");
  }
  for (std::string_view reserved : kAttentionKernelRequests) {
    if (name == reserved) {
      return absl::StrCat("'", std::string(name),
                          "' is reserved for training.attention_kernel; name the kernel itself "
                          "(e.g. fa2, fa3, ck)");
    }
  }
  return "";
}

std::string KernelNames(const GpuSpec& g) {
  std::vector<std::string> names;
  for (const AttentionKernelSpec& k : g.attention_kernels) names.push_back(k.name);
  return absl::StrJoin(names, ", ");
}

// gpu.attention_kernel_default names the kernel of the top-level attention figures;
// gpu.attention_kernels holds the others, {"fa2": {"fwd_efficiency", "bwd_efficiency"}};
// gpu.attention_kernel_pytorch names one of them. Runs after the top-level figures are read.
absl::Status ReadAttentionKernels(FigureReader& gpu, std::map<std::string, std::string>& sources,
                                  GpuSpec& g) {
  JsonObject& obj = gpu.object();
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<std::string> default_name,
                             gpu.Name("attention_kernel_default"));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<std::string> pytorch,
                             gpu.Name("attention_kernel_pytorch"));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<std::string> pytorch_bias,
                             gpu.Name("attention_kernel_pytorch_bias"));
  if (default_name) {
    if (std::string problem = KernelNameProblem(*default_name); !problem.empty()) {
      return obj.FieldError("attention_kernel_default", problem);
    }
    g.attention_kernels.push_back(
        {*default_name, g.attention_fwd_efficiency, g.attention_bwd_efficiency});
  }
  obj.Accept("attention_kernels");
  if (obj.Has("attention_kernels")) {
    if (!default_name) {
      return obj.FieldError("attention_kernels",
                            "needs attention_kernel_default, the name of the kernel that "
                            "attention_fwd_efficiency and attention_bwd_efficiency describe");
    }
    PROJECTOR_ASSIGN_OR_RETURN(FigureReader kernels, Section(obj, "attention_kernels", sources));
    for (const auto& item : kernels.object().json().items()) {
      const std::string& name = item.key();
      if (std::string problem = KernelNameProblem(name); !problem.empty()) {
        return kernels.object().FieldError(name, problem);
      }
      if (name == *default_name) {
        return kernels.object().FieldError(
            name,
            "is the default kernel (attention_kernel_default); its figures are "
            "attention_fwd_efficiency and attention_bwd_efficiency");
      }
      PROJECTOR_ASSIGN_OR_RETURN(FigureReader kernel, Section(kernels.object(), name, sources));
      AttentionKernelSpec spec{.name = name};
      PROJECTOR_ASSIGN_OR_RETURN(spec.fwd_efficiency,
                                 kernel.Required("fwd_efficiency", Range::kFraction));
      PROJECTOR_ASSIGN_OR_RETURN(spec.bwd_efficiency,
                                 kernel.Required("bwd_efficiency", Range::kFraction));
      PROJECTOR_RETURN_IF_ERROR(kernel.object().CheckNoUnknownKeys());
      g.attention_kernels.push_back(std::move(spec));
    }
  }
  // Whether it names one of them is a cross-field rule of the validator.
  g.attention_kernel_pytorch = pytorch.value_or("");
  g.attention_kernel_pytorch_bias = pytorch_bias.value_or("");
  return absl::OkStatus();
}

absl::Status ReadGpu(JsonObject& root, std::map<std::string, std::string>& sources,
                     GpuSpec& g) {
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader gpu, Section(root, "gpu", sources));
  JsonObject& obj = gpu.object();
  PROJECTOR_ASSIGN_OR_RETURN(std::string vendor, obj.Enum("vendor", {"amd", "nvidia"}));
  g.vendor = vendor == "amd" ? Vendor::kAmd : Vendor::kNvidia;
  PROJECTOR_ASSIGN_OR_RETURN(g.arch, obj.String("arch"));
  PROJECTOR_ASSIGN_OR_RETURN(g.compute_units, gpu.Count("compute_units"));
  PROJECTOR_ASSIGN_OR_RETURN(g.num_xcds, gpu.Count("num_xcds"));
  PROJECTOR_ASSIGN_OR_RETURN(double peak_mhz, gpu.Required("peak_clock_mhz", Range::kPositive));
  g.peak_clock = Megahertz(peak_mhz);
  PROJECTOR_ASSIGN_OR_RETURN(double sustained_mhz,
                             gpu.Or("sustained_clock_mhz", Range::kPositive, peak_mhz));
  g.sustained_clock = Megahertz(sustained_mhz);
  PROJECTOR_RETURN_IF_ERROR(ReadMatrixRates(gpu, g, sources));
  PROJECTOR_ASSIGN_OR_RETURN(g.vector_fp32_flops_per_clock_per_cu,
                             gpu.Required("vector_fp32_flops_per_clock_per_cu", Range::kPositive));
  PROJECTOR_ASSIGN_OR_RETURN(g.exp_per_clock_per_cu,
                             gpu.Or("exp_per_clock_per_cu", Range::kPositive, 16));

  // HBM capacity: `hbm_capacity_gib`, the usable memory the driver reports (nvidia-smi /
  // rocm-smi memory total; DRAM dies and hence HBM stacks have binary capacities, so an
  // "80 GB" part holds ~80 GiB), or the decimal datasheet figure `hbm_capacity_gb`; exactly one.
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> hbm_gib,
                             gpu.Optional("hbm_capacity_gib", Range::kPositive));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> hbm_gb,
                             gpu.Optional("hbm_capacity_gb", Range::kPositive));
  if (hbm_gib.has_value() == hbm_gb.has_value()) {
    return obj.FieldError(hbm_gib.has_value() ? "hbm_capacity_gb" : "hbm_capacity_gib",
                          hbm_gib.has_value()
                              ? "give the HBM capacity once: hbm_capacity_gib (usable GiB as the "
                                "driver reports it) or hbm_capacity_gb (decimal GB), not both"
                              : "required field is missing; hbm_capacity_gib (usable GiB as the "
                                "driver reports it) or hbm_capacity_gb (decimal GB), a number or "
                                "{\"value\": number, \"source\": string}");
  }
  g.hbm_capacity = hbm_gib.has_value() ? Gibibytes(*hbm_gib) : Gigabytes(*hbm_gb);
  PROJECTOR_ASSIGN_OR_RETURN(double hbm_tbs, gpu.Required("hbm_bandwidth_tbs", Range::kPositive));
  g.hbm_bandwidth = TerabytesPerSecond(hbm_tbs);
  // Cache sizes are binary, as vendors quote them (MI300X "4 MB" L2 per XCD = 4 MiB).
  PROJECTOR_ASSIGN_OR_RETURN(double l2_mb, gpu.Required("l2_cache_mb", Range::kPositive));
  g.l2_cache = Mebibytes(l2_mb);
  PROJECTOR_ASSIGN_OR_RETURN(double llc_mb,
                             gpu.Or("last_level_cache_mb", Range::kNonNegative, 0.0));
  g.last_level_cache = Mebibytes(llc_mb);
  PROJECTOR_ASSIGN_OR_RETURN(double lds_kb, gpu.Required("lds_per_cu_kb", Range::kPositive));
  g.lds_per_cu = Kibibytes(lds_kb);
  PROJECTOR_ASSIGN_OR_RETURN(double rf_kb,
                             gpu.Required("register_file_per_cu_kb", Range::kPositive));
  g.register_file_per_cu = Kibibytes(rf_kb);

  PROJECTOR_ASSIGN_OR_RETURN(g.gemm_efficiency,
                             gpu.Or("gemm_efficiency", Range::kFraction, g.gemm_efficiency));
  PROJECTOR_ASSIGN_OR_RETURN(g.gemm_efficiency_fp8,
                             gpu.Optional("gemm_efficiency_fp8", Range::kFraction));
  PROJECTOR_ASSIGN_OR_RETURN(g.fp8_block_scaled_gemm_ratio,
                             gpu.Optional("fp8_block_scaled_gemm_ratio", Range::kFraction));
  PROJECTOR_ASSIGN_OR_RETURN(
      g.attention_fwd_efficiency,
      gpu.Or("attention_fwd_efficiency", Range::kFraction, g.attention_fwd_efficiency));
  PROJECTOR_ASSIGN_OR_RETURN(
      g.attention_bwd_efficiency,
      gpu.Or("attention_bwd_efficiency", Range::kFraction, g.attention_bwd_efficiency));
  PROJECTOR_RETURN_IF_ERROR(ReadAttentionKernels(gpu, sources, g));
  PROJECTOR_ASSIGN_OR_RETURN(g.hbm_efficiency,
                             gpu.Or("hbm_efficiency", Range::kFraction, g.hbm_efficiency));
  // Atomic scatter-add rates, in 10^9 element adds per second.
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> scatter_add_g,
                             gpu.Optional("scatter_add_gelems_per_s", Range::kPositive));
  PROJECTOR_ASSIGN_OR_RETURN(std::optional<double> index_add_g,
                             gpu.Optional("index_add_gelems_per_s", Range::kPositive));
  if (scatter_add_g) g.scatter_add_rate = *scatter_add_g * 1e9;
  if (index_add_g) g.index_add_rate = *index_add_g * 1e9;
  PROJECTOR_ASSIGN_OR_RETURN(double launch_us,
                             gpu.Or("kernel_launch_overhead_us", Range::kNonNegative, 0.0));
  g.kernel_launch_overhead = Microseconds(launch_us);
  PROJECTOR_ASSIGN_OR_RETURN(double dispatch_us,
                             gpu.Or("host_op_dispatch_us", Range::kNonNegative, 0.0));
  g.host_op_dispatch = Microseconds(dispatch_us);
  return obj.CheckNoUnknownKeys();
}

absl::Status ReadNode(JsonObject& root, std::map<std::string, std::string>& sources,
                      HardwareProfile& hw) {
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader node, Section(root, "node", sources));
  PROJECTOR_ASSIGN_OR_RETURN(hw.gpus_per_node, node.Count("gpus_per_node"));
  return node.object().CheckNoUnknownKeys();
}

absl::Status ReadScaleUp(JsonObject& root, std::map<std::string, std::string>& sources,
                         ScaleUpFabric& f) {
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader up, Section(root, "scale_up", sources));
  JsonObject& obj = up.object();
  PROJECTOR_ASSIGN_OR_RETURN(f.name, obj.String("name"));
  PROJECTOR_ASSIGN_OR_RETURN(std::string topology, obj.Enum("topology", {"switch", "full_mesh"}));
  f.topology = topology == "switch" ? FabricTopology::kSwitch : FabricTopology::kFullMesh;
  PROJECTOR_ASSIGN_OR_RETURN(double per_gpu,
                             up.Required("per_gpu_bandwidth_gbs", Range::kPositive));
  f.per_gpu_bandwidth = GigabytesPerSecond(per_gpu);
  PROJECTOR_ASSIGN_OR_RETURN(double per_link,
                             up.Required("per_link_bandwidth_gbs", Range::kPositive));
  f.per_link_bandwidth = GigabytesPerSecond(per_link);
  PROJECTOR_ASSIGN_OR_RETURN(f.links_per_gpu, up.Count("links_per_gpu"));
  PROJECTOR_ASSIGN_OR_RETURN(double latency_us, up.Required("latency_us", Range::kNonNegative));
  f.latency = Microseconds(latency_us);
  PROJECTOR_ASSIGN_OR_RETURN(
      f.allreduce_efficiency,
      up.Or("allreduce_efficiency", Range::kFraction, f.allreduce_efficiency));
  PROJECTOR_ASSIGN_OR_RETURN(
      f.alltoall_efficiency, up.Or("alltoall_efficiency", Range::kFraction, f.alltoall_efficiency));
  PROJECTOR_ASSIGN_OR_RETURN(double peer_us,
                             up.Or("alltoall_per_peer_overhead_us", Range::kNonNegative, 0.0));
  f.alltoall_per_peer_overhead = Microseconds(peer_us);
  PROJECTOR_ASSIGN_OR_RETURN(f.supports_in_network_reduction,
                             up.Flag("supports_in_network_reduction", false));
  PROJECTOR_ASSIGN_OR_RETURN(
      double nvls_gbs, up.Or("in_network_allreduce_busbw_gbs", Range::kNonNegative, 0.0));
  f.in_network_allreduce_busbw = GigabytesPerSecond(nvls_gbs);
  return obj.CheckNoUnknownKeys();
}

absl::Status ReadScaleOut(JsonObject& root, std::map<std::string, std::string>& sources,
                          ScaleOutNetwork& n) {
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader out, Section(root, "scale_out", sources));
  JsonObject& obj = out.object();
  PROJECTOR_ASSIGN_OR_RETURN(n.name, obj.String("name"));
  PROJECTOR_ASSIGN_OR_RETURN(n.nics_per_node, out.Count("nics_per_node"));
  PROJECTOR_ASSIGN_OR_RETURN(double gbps, out.Required("per_nic_bandwidth_gbps", Range::kPositive));
  n.per_nic_bandwidth = GigabitsPerSecond(gbps);
  PROJECTOR_ASSIGN_OR_RETURN(double latency_us, out.Required("latency_us", Range::kNonNegative));
  n.latency = Microseconds(latency_us);
  PROJECTOR_ASSIGN_OR_RETURN(n.efficiency, out.Or("efficiency", Range::kFraction, n.efficiency));
  PROJECTOR_ASSIGN_OR_RETURN(double peer_us,
                             out.Or("alltoall_per_peer_overhead_us", Range::kNonNegative, 0.0));
  n.alltoall_per_peer_overhead = Microseconds(peer_us);
  PROJECTOR_ASSIGN_OR_RETURN(n.p2p_efficiency, out.Optional("p2p_efficiency", Range::kFraction));
  PROJECTOR_ASSIGN_OR_RETURN(n.deepep_efficiency,
                             out.Optional("deepep_efficiency", Range::kFraction));
  PROJECTOR_ASSIGN_OR_RETURN(n.deepep_low_latency_efficiency,
                             out.Optional("deepep_low_latency_efficiency", Range::kFraction));
  return obj.CheckNoUnknownKeys();
}

// Optional section: a profile without it models communication beside compute as free.
absl::Status ReadCommInterference(JsonObject& root, std::map<std::string, std::string>& sources,
                                  CommInterference& c) {
  if (!root.Has("comm_interference")) {
    root.Accept("comm_interference");
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(FigureReader ci, Section(root, "comm_interference", sources));
  PROJECTOR_ASSIGN_OR_RETURN(c.scale_up_ctas, ci.CountOr("scale_up_ctas", 0));
  PROJECTOR_ASSIGN_OR_RETURN(c.scale_out_ctas, ci.CountOr("scale_out_ctas", 0));
  PROJECTOR_ASSIGN_OR_RETURN(c.ep_dispatch_ctas, ci.CountOr("ep_dispatch_ctas", 0));
  return ci.object().CheckNoUnknownKeys();
}

absl::Status CheckNotes(JsonObject& root) {
  if (!root.Has("notes")) {
    root.Accept("notes");
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(const json* notes, root.Array("notes"));
  for (size_t note_idx = 0; note_idx < notes->size(); ++note_idx) {
    if (!(*notes)[note_idx].is_string()) {
      return JsonFieldError(root.origin(), absl::StrCat(root.PathOf("notes"), "/", note_idx),
                            absl::StrCat("expected a string, got ",
                                         std::string(JsonTypeName((*notes)[note_idx]))));
    }
  }
  return absl::OkStatus();
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool LooksLikePath(std::string_view s) {
  return s.find('/') != std::string_view::npos ||
         (s.size() >= 5 && s.substr(s.size() - 5) == ".json") || IsYamlPath(s);
}

// Rule of the validator: `value` must satisfy `range`.
absl::Status CheckRange(const std::string& origin, std::string_view pointer, double value,
                        Range range) {
  if (InRange(value, range)) return absl::OkStatus();
  return JsonFieldError(origin, pointer, absl::StrCat(RangeText(range), ", got ", value));
}

// The named kernels of a profile, loaded or built in code: valid names, each once, fractions in
// range, and the PyTorch kernel among them. Entry 0 is the default (attention_kernel_default).
absl::Status ValidateAttentionKernels(const GpuSpec& g, const std::string& origin) {
  for (size_t kernel_idx = 0; kernel_idx < g.attention_kernels.size(); ++kernel_idx) {
    const AttentionKernelSpec& k = g.attention_kernels[kernel_idx];
    const std::string pointer = absl::StrCat("/gpu/attention_kernels/", k.name);
    if (std::string problem = KernelNameProblem(k.name); !problem.empty()) {
      return JsonFieldError(origin, kernel_idx == 0 ? "/gpu/attention_kernel_default" : pointer,
                            problem);
    }
    if (g.FindAttentionKernel(k.name) != &k) {
      return JsonFieldError(origin, pointer,
                            absl::StrCat("'", k.name, "' is named twice; name each kernel once"));
    }
    PROJECTOR_RETURN_IF_ERROR(CheckRange(origin, absl::StrCat(pointer, "/fwd_efficiency"),
                                         k.fwd_efficiency, Range::kFraction));
    PROJECTOR_RETURN_IF_ERROR(CheckRange(origin, absl::StrCat(pointer, "/bwd_efficiency"),
                                         k.bwd_efficiency, Range::kFraction));
  }
  for (const auto& [field, name] :
       {std::pair<std::string_view, const std::string&>{"attention_kernel_pytorch",
                                                         g.attention_kernel_pytorch},
        {"attention_kernel_pytorch_bias", g.attention_kernel_pytorch_bias}}) {
    if (name.empty() || g.FindAttentionKernel(name) != nullptr) continue;
    return JsonFieldError(
        origin, absl::StrCat("/gpu/", std::string(field)),
        absl::StrCat("'", name,
                     "' is neither attention_kernel_default nor an entry of attention_kernels; "
                     "accepted: ",
                     g.attention_kernels.empty() ? "none (no kernel is named)" : KernelNames(g)));
  }
  return absl::OkStatus();
}

}  // namespace

FlopsPerSecond GpuSpec::MatrixPeak(DType dtype, Hertz clock) const {
  return FlopsPerSecond(static_cast<double>(compute_units) *
                        matrix_flops_per_clock_per_cu[DTypeIndex(dtype)] * clock.value());
}

// FP4 shares the FP8 figure: no stored source measures an FP4 GEMM, and both run the
// narrow-precision tensor-core/MFMA path with the same tiling and epilogue.
// Block scaling applies to FP8 alone: FP4 (NVFP4, MXFP4) is block-scaled by format, and its
// figure is the FP8 one already.
double GpuSpec::GemmEfficiency(DType dtype, bool block_scaled) const {
  const bool narrow = dtype == DType::kFp8 || dtype == DType::kFp4;
  const double base = narrow && gemm_efficiency_fp8.has_value() ? *gemm_efficiency_fp8
                                                                 : gemm_efficiency;
  if (dtype == DType::kFp8 && block_scaled) return base * fp8_block_scaled_gemm_ratio.value_or(1.0);
  return base;
}

std::optional<double> GpuSpec::AtomicAddRate(AtomicAddKernel kernel) const {
  switch (kernel) {
    case AtomicAddKernel::kScatterAdd:
      return scatter_add_rate;
    case AtomicAddKernel::kIndexAdd:
      return index_add_rate;
    case AtomicAddKernel::kNone:
      break;
  }
  return std::nullopt;
}

const AttentionKernelSpec* GpuSpec::FindAttentionKernel(std::string_view kernel) const {
  for (const AttentionKernelSpec& k : attention_kernels) {
    if (k.name == kernel) return &k;
  }
  return nullptr;
}

absl::StatusOr<HardwareProfile> LoadHardwareProfileFile(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(json doc, ReadConfigFile(path));
  return ParseHardwareProfile(doc, path, path);
}

absl::StatusOr<HardwareProfile> ParseHardwareProfile(const nlohmann::json& doc,
                                                     const std::string& path,
                                                     const std::string& origin) {
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject root, JsonObject::Make(doc, origin, ""));
  HardwareProfile hw;
  hw.source_file = path;
  PROJECTOR_ASSIGN_OR_RETURN(hw.name,
                             root.StringOr("name", std::filesystem::path(path).stem().string()));
  if (hw.name.empty()) return root.FieldError("name", "must not be empty");
  PROJECTOR_ASSIGN_OR_RETURN(hw.description, root.StringOr("description", ""));
  PROJECTOR_RETURN_IF_ERROR(CheckNotes(root));
  hw.gpu.name = hw.name;
  PROJECTOR_RETURN_IF_ERROR(ReadGpu(root, hw.figure_sources, hw.gpu));
  PROJECTOR_RETURN_IF_ERROR(ReadNode(root, hw.figure_sources, hw));
  PROJECTOR_RETURN_IF_ERROR(ReadScaleUp(root, hw.figure_sources, hw.scale_up));
  PROJECTOR_RETURN_IF_ERROR(ReadScaleOut(root, hw.figure_sources, hw.scale_out));
  PROJECTOR_RETURN_IF_ERROR(ReadCommInterference(root, hw.figure_sources, hw.comm_interference));
  PROJECTOR_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  return hw;
}

namespace {

// Per-field ranges, for profiles built in code as well as loaded ones.
absl::Status ValidateFieldRanges(const HardwareProfile& hw, const std::string& origin) {
  const GpuSpec& g = hw.gpu;
  const ScaleUpFabric& up = hw.scale_up;
  const ScaleOutNetwork& out = hw.scale_out;
  // Per-field ranges again, for profiles built in code rather than loaded; values in the JSON
  // key's unit so the message reads like the file.
  struct RangeRule {
    std::string_view pointer;
    double value;
    Range range;
  };
  const RangeRule rules[] = {
      {"/gpu/compute_units", static_cast<double>(g.compute_units), Range::kPositive},
      {"/gpu/num_xcds", static_cast<double>(g.num_xcds), Range::kPositive},
      {"/gpu/peak_clock_mhz", ToMegahertz(g.peak_clock), Range::kPositive},
      {"/gpu/sustained_clock_mhz", ToMegahertz(g.sustained_clock), Range::kPositive},
      {"/gpu/vector_fp32_flops_per_clock_per_cu", g.vector_fp32_flops_per_clock_per_cu,
       Range::kPositive},
      {"/gpu/exp_per_clock_per_cu", g.exp_per_clock_per_cu, Range::kPositive},
      {"/gpu/hbm_capacity_gib", g.hbm_capacity / Gibibytes(1), Range::kPositive},
      {"/gpu/hbm_bandwidth_tbs", g.hbm_bandwidth.value() * 1e-12, Range::kPositive},
      {"/gpu/l2_cache_mb", g.l2_cache / Mebibytes(1), Range::kPositive},
      {"/gpu/last_level_cache_mb", g.last_level_cache / Mebibytes(1), Range::kNonNegative},
      {"/gpu/lds_per_cu_kb", g.lds_per_cu / Kibibytes(1), Range::kPositive},
      {"/gpu/register_file_per_cu_kb", g.register_file_per_cu / Kibibytes(1), Range::kPositive},
      {"/gpu/gemm_efficiency", g.gemm_efficiency, Range::kFraction},
      {"/gpu/attention_fwd_efficiency", g.attention_fwd_efficiency, Range::kFraction},
      {"/gpu/attention_bwd_efficiency", g.attention_bwd_efficiency, Range::kFraction},
      {"/gpu/hbm_efficiency", g.hbm_efficiency, Range::kFraction},
      {"/gpu/kernel_launch_overhead_us", ToMicroseconds(g.kernel_launch_overhead), Range::kNonNegative},
      {"/gpu/host_op_dispatch_us", ToMicroseconds(g.host_op_dispatch), Range::kNonNegative},
      {"/node/gpus_per_node", static_cast<double>(hw.gpus_per_node), Range::kPositive},
      {"/scale_up/per_gpu_bandwidth_gbs", ToGigabytesPerSecond(up.per_gpu_bandwidth), Range::kPositive},
      {"/scale_up/per_link_bandwidth_gbs", ToGigabytesPerSecond(up.per_link_bandwidth), Range::kPositive},
      {"/scale_up/links_per_gpu", static_cast<double>(up.links_per_gpu), Range::kPositive},
      {"/scale_up/latency_us", ToMicroseconds(up.latency), Range::kNonNegative},
      {"/scale_up/allreduce_efficiency", up.allreduce_efficiency, Range::kFraction},
      {"/scale_up/alltoall_efficiency", up.alltoall_efficiency, Range::kFraction},
      {"/scale_up/alltoall_per_peer_overhead_us", ToMicroseconds(up.alltoall_per_peer_overhead),
       Range::kNonNegative},
      {"/scale_up/in_network_allreduce_busbw_gbs", ToGigabytesPerSecond(up.in_network_allreduce_busbw),
       Range::kNonNegative},
      {"/scale_out/nics_per_node", static_cast<double>(out.nics_per_node), Range::kPositive},
      {"/scale_out/per_nic_bandwidth_gbps", out.per_nic_bandwidth / GigabitsPerSecond(1), Range::kPositive},
      {"/scale_out/latency_us", ToMicroseconds(out.latency), Range::kNonNegative},
      {"/scale_out/efficiency", out.efficiency, Range::kFraction},
      {"/scale_out/alltoall_per_peer_overhead_us", ToMicroseconds(out.alltoall_per_peer_overhead),
       Range::kNonNegative},
      {"/comm_interference/scale_up_ctas", static_cast<double>(hw.comm_interference.scale_up_ctas),
       Range::kNonNegative},
      {"/comm_interference/scale_out_ctas",
       static_cast<double>(hw.comm_interference.scale_out_ctas), Range::kNonNegative},
      {"/comm_interference/ep_dispatch_ctas",
       static_cast<double>(hw.comm_interference.ep_dispatch_ctas), Range::kNonNegative},
  };
  for (const RangeRule& rule : rules) {
    PROJECTOR_RETURN_IF_ERROR(CheckRange(origin, rule.pointer, rule.value, rule.range));
  }
  // Optional fractions: checked where given.
  const std::pair<std::string_view, const std::optional<double>*> optional_fractions[] = {
      {"/gpu/gemm_efficiency_fp8", &g.gemm_efficiency_fp8},
      {"/scale_out/p2p_efficiency", &out.p2p_efficiency},
      {"/scale_out/deepep_efficiency", &out.deepep_efficiency},
      {"/scale_out/deepep_low_latency_efficiency", &out.deepep_low_latency_efficiency},
  };
  for (const auto& [pointer, value] : optional_fractions) {
    if (value->has_value()) {
      PROJECTOR_RETURN_IF_ERROR(CheckRange(origin, pointer, **value, Range::kFraction));
    }
  }
  PROJECTOR_RETURN_IF_ERROR(ValidateAttentionKernels(g, origin));
  for (DType d : kAllDTypes) {
    PROJECTOR_RETURN_IF_ERROR(
        CheckRange(origin, absl::StrCat("/gpu/matrix_flops_per_clock_per_cu/", std::string(DTypeName(d))),
                   g.matrix_flops_per_clock_per_cu[DTypeIndex(d)], Range::kNonNegative));
  }
  return absl::OkStatus();
}

// The GPU's clocks, its bf16 rate and its XCDs.
absl::Status ValidateGpuRelations(const HardwareProfile& hw, const std::string& origin) {
  const GpuSpec& g = hw.gpu;
  if (g.sustained_clock > g.peak_clock) {
    return JsonFieldError(
        origin, "/gpu/sustained_clock_mhz",
        absl::StrCat(ToMegahertz(g.sustained_clock), " MHz exceeds peak_clock_mhz ",
                     ToMegahertz(g.peak_clock), "; the sustained clock must be <= the peak clock"));
  }
  if (g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kBf16)] <= 0 &&
      g.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kFp16)] <= 0) {
    return JsonFieldError(origin, "/gpu/matrix_flops_per_clock_per_cu/bf16",
                          "must be > 0 (or fp16, for a GPU without bf16 tensor cores such as "
                          "Volta); every profile needs a 16-bit matrix rate");
  }
  if (g.compute_units % g.num_xcds != 0) {
    return JsonFieldError(origin, "/gpu/num_xcds",
                          absl::StrCat("compute_units ", g.compute_units,
                                       " is not divisible by num_xcds ", g.num_xcds,
                                       "; each XCD / L2 domain holds the same number of CUs"));
  }
  return absl::OkStatus();
}

// The scale-up links against the per-GPU bandwidth and the node's peers.
absl::Status ValidateFabricRelations(const HardwareProfile& hw, const std::string& origin) {
  const ScaleUpFabric& up = hw.scale_up;
  if (up.per_link_bandwidth > up.per_gpu_bandwidth) {
    return JsonFieldError(
        origin, "/scale_up/per_link_bandwidth_gbs",
        absl::StrCat(ToGigabytesPerSecond(up.per_link_bandwidth),
                     " GB/s exceeds per_gpu_bandwidth_gbs ",
                     ToGigabytesPerSecond(up.per_gpu_bandwidth),
                     "; one link cannot carry more than all links of the GPU"));
  }
  // 0.1% slack for vendor rounding (76.5 GB/s x 7 vs a quoted aggregate).
  if (up.per_gpu_bandwidth.value() >
      1.001 * static_cast<double>(up.links_per_gpu) * up.per_link_bandwidth.value()) {
    return JsonFieldError(
        origin, "/scale_up/per_gpu_bandwidth_gbs",
        absl::StrCat(ToGigabytesPerSecond(up.per_gpu_bandwidth),
                     " GB/s exceeds links_per_gpu x per_link_bandwidth_gbs = ", up.links_per_gpu,
                     " x ", ToGigabytesPerSecond(up.per_link_bandwidth),
                     "; the per-GPU bandwidth is at most the sum of its links"));
  }
  if (up.topology == FabricTopology::kFullMesh && up.links_per_gpu < hw.gpus_per_node - 1) {
    return JsonFieldError(
        origin, "/scale_up/links_per_gpu",
        absl::StrCat(up.links_per_gpu, " links cannot reach the ", hw.gpus_per_node - 1,
                     " peers of a full mesh of gpus_per_node ", hw.gpus_per_node,
                     "; a full mesh needs links_per_gpu >= gpus_per_node - 1"));
  }
  return absl::OkStatus();
}

// Communication kernels' CTAs below the GPU's SMs/CUs, and in-network reduction consistent.
absl::Status ValidateCommunicationKernels(const HardwareProfile& hw, const std::string& origin) {
  const GpuSpec& g = hw.gpu;
  const ScaleUpFabric& up = hw.scale_up;
  // A collective holding every SM/CU would stop the compute beside it; NCCL caps its CTAs far
  // below that (MAXCHANNELS), so such a figure is a typo.
  const struct {
    std::string_view pointer;
    int64_t ctas;
  } cta_rules[] = {
      {"/comm_interference/scale_up_ctas", hw.comm_interference.scale_up_ctas},
      {"/comm_interference/scale_out_ctas", hw.comm_interference.scale_out_ctas},
      {"/comm_interference/ep_dispatch_ctas", hw.comm_interference.ep_dispatch_ctas},
  };
  for (const auto& rule : cta_rules) {
    if (rule.ctas >= g.compute_units) {
      return JsonFieldError(
          origin, rule.pointer,
          absl::StrCat(rule.ctas, " CTAs is not below compute_units ", g.compute_units,
                       "; a communication kernel holds fewer CTAs than the GPU has SMs/CUs"));
    }
  }
  if (!up.supports_in_network_reduction && up.in_network_allreduce_busbw.value() > 0) {
    return JsonFieldError(origin, "/scale_up/in_network_allreduce_busbw_gbs",
                          "is set but supports_in_network_reduction is false; set both or "
                          "neither");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateHardwareProfile(const HardwareProfile& hw, const std::string& origin) {
  PROJECTOR_RETURN_IF_ERROR(ValidateFieldRanges(hw, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateGpuRelations(hw, origin));
  PROJECTOR_RETURN_IF_ERROR(ValidateFabricRelations(hw, origin));
  return ValidateCommunicationKernels(hw, origin);
}

std::string HardwareLibraryDir() {
  const char* env = std::getenv("PROJECTOR_HW_PROFILES_DIR");
  if (env != nullptr && env[0] != '\0') return env;
  return PROJECTOR_DEFAULT_HW_PROFILES_DIR;
}

std::vector<std::string> ListLibraryGpus() { return JsonFileStems(HardwareLibraryDir()); }

std::vector<std::string> ListLibraryAttentionKernels() {
  std::vector<std::string> names;
  for (const std::string& gpu : ListLibraryGpus()) {
    absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(gpu);
    if (!hw.ok()) continue;
    for (const AttentionKernelSpec& k : hw->gpu.attention_kernels) names.push_back(k.name);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

std::string_view GpuAliasTarget(std::string_view name) {
  for (const GpuAlias& a : kGpuAliases) {
    if (a.alias == name) return a.profile;
  }
  return {};
}

absl::StatusOr<HardwareProfile> ResolveHardwareProfile(const std::string& name_or_path) {
  std::string path;
  if (LooksLikePath(name_or_path)) {
    path = name_or_path;
  } else {
    std::vector<std::string> names = ListLibraryGpus();
    std::string wanted = ToLower(name_or_path);
    if (const std::string_view target = GpuAliasTarget(wanted); !target.empty()) {
      wanted = std::string(target);
    }
    if (std::find(names.begin(), names.end(), wanted) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown GPU '", name_or_path, "'", DidYouMean(wanted, names), "; valid: ",
                       names.empty() ? absl::StrCat("none found in ", HardwareLibraryDir())
                                     : absl::StrJoin(names, ", "),
                       ", or a path to a profile .json file"));
    }
    path = absl::StrCat(HardwareLibraryDir(), "/", wanted, ".json");
  }
  // Validated once per file contents: validate and search resolve the same profile per case.
  return LoadFileMemoised<HardwareProfile>(
      path, [](const std::string& p) -> absl::StatusOr<HardwareProfile> {
        PROJECTOR_ASSIGN_OR_RETURN(HardwareProfile hw, LoadHardwareProfileFile(p));
        PROJECTOR_RETURN_IF_ERROR(ValidateHardwareProfile(hw, p));
        return hw;
      });
}

}  // namespace projector
