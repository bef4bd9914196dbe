#include "report/library_report.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"

namespace projector {

std::string ModelLibraryText() {
  std::string out;
  for (const std::string& name : ListLibraryModels()) {
    auto m = ResolveModel(name);
    if (!m.ok()) {
      absl::StrAppend(&out, name, "  (", m.status().message(), ")\n");
      continue;
    }
    absl::StrAppendFormat(
        &out, "%-22s %-26s %4d layers  hidden %6d  %s%.1fB params\n", name, m->name, m->num_layers,
        m->hidden_size,
        m->moe ? absl::StrFormat("MoE %dx top-%d  ", m->moe->num_experts, m->moe->top_k)
               : std::string(),
        m->TotalParameters() / 1e9);
  }
  return out;
}

std::string GpuLibraryText() {
  std::string out;
  for (const std::string& name : ListLibraryGpus()) {
    auto hw = ResolveHardwareProfile(name);
    if (!hw.ok()) {
      absl::StrAppend(&out, name, "  (", hw.status().message(), ")\n");
      continue;
    }
    const GpuSpec& g = hw->gpu;
    absl::StrAppendFormat(
        &out,
        "%-15s %4d CUs/SMs  bf16 %7.1f TFLOP/s @ %4.0f MHz  HBM %6.1f GiB %4.2f TB/s  %d/node\n",
        name, g.compute_units, ToTeraFlopsPerSecond(g.MatrixPeak(DType::kBf16, g.peak_clock)),
        ToMegahertz(g.peak_clock), g.hbm_capacity / Gibibytes(1), g.hbm_bandwidth.value() / 1e12,
        hw->gpus_per_node);
  }
  return out;
}

}  // namespace projector
