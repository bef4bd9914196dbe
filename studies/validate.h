// Projected vs measured: projects every case of a calibration JSONL file (the
// ../shared/calibration schema) in simulate mode and summarises the errors overall, by GPU and
// by source. Cases the tool cannot project are listed with the reason and counted.
#ifndef PROJECTOR_STUDIES_VALIDATE_H_
#define PROJECTOR_STUDIES_VALIDATE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/training_config.h"
#include "nlohmann/json.hpp"

namespace projector {

struct ValidationCase {
  int64_t line = 0;
  std::string id;
  std::string model;
  std::string model_family;  // "moe" when the model has routed experts, else "dense"
  // What the throughputs count: "tokens", or "images" for an image model's case (the
  // *_tokens_per_s_per_gpu fields then hold images/s per GPU).
  std::string unit = "tokens";
  std::string gpu;
  std::string source;  // short source label used for grouping
  int64_t num_gpus = 0;
  int64_t gpus_per_node = 0;
  std::string precision;  // "bf16", "fp16" or "fp8", as the case states it
  int64_t seq_len = 0;
  std::string layout;
  double measured_tokens_per_s_per_gpu = 0;
  std::optional<double> projected_tokens_per_s_per_gpu;
  std::optional<double> error_pct;  // (projected − measured) / measured · 100
  std::string status;               // "ok" or "unsupported"
  std::string reason;               // why a case could not be projected
  std::string dominant_terms;       // "compute 81%, dp 7%"
  std::string attention_kernel;     // the kernel the projection ran ("fa2", "unfused", ...)
  std::string loss_kernel;          // the loss kernel it ran ("megatron", "pytorch", "fused")
  int64_t train_metric_passes = 0;  // the train-metric passes it ran
  std::string stack;                // the stack it was taken as ("megatron", "llm-foundry", ...)
  bool fits_in_memory = true;
  // Sibling check: cases of the same source, model, GPU, precision, sequence, micro-batch,
  // recompute and layout that differ only in the GPU count (DP) form a scaling series. With 3 or
  // more projected siblings, `sibling_deviation_pct` is how far this case's measured/projected
  // ratio lies from the series median; beyond kSiblingDeviationFlagPct the case is flagged as
  // inconsistent with its own series (the projection cannot be right for all of them at once).
  std::optional<double> sibling_deviation_pct;
  int64_t siblings = 0;  // series size, this case included (0 when no series)
  // Sequence check: a case measured slower than a longer-sequence case of the same work (same
  // source, model, GPU, GPU count, precision, recompute, layout, tokens per micro-batch and per
  // step). A shorter sequence does strictly less attention work per token and the same of
  // everything else, so it cannot be slower; beyond kSequenceMonotonicityFlagPct (run-to-run
  // variation) the measurement contradicts its sibling. The slowest-relative longer sibling.
  std::string faster_longer_sequence_id;
  int64_t faster_longer_sequence_seq_len = 0;
  std::optional<double> longer_sequence_deficit_pct;  // measured vs that sibling, < 0
  // Twin check: cases the projection cannot tell apart (same source, model, GPU, GPU count,
  // precision, sequence, micro- and global batch, recompute and layout, and the same projected
  // throughput, so nothing else the tool reads differs) measured more than kTwinSpreadFlagPct
  // apart. One projection serves the whole group, so at least one of them is off by
  // twin_error_floor_pct = (max − min) / (max + min) · 100 of the group's measurements, whatever
  // the model: the runs differed in something the case does not state.
  std::string twin_id;               // the twin measured furthest from this case
  std::optional<double> twin_ratio;  // this measured / that twin's measured
  std::optional<double> twin_error_floor_pct;
  // Flagged by any check.
  bool inconsistent = false;
  // With ValidationOptions::sensitivity: the lowest and highest throughput over the projection
  // and its re-projections with each run setting switched alone (RunSettingSensitivity).
  std::optional<double> settings_low_tokens_per_s_per_gpu;
  std::optional<double> settings_high_tokens_per_s_per_gpu;
};

// Whether a case's measurement lies within its run-settings range (false without one).
bool MeasuredWithinSettingsRange(const ValidationCase& c);

// A measured value more than this far (in percent) from what its scaling series predicts is
// flagged: the projection's own variation across the series is removed first, so the flag marks
// a measurement the rest of the series contradicts, not a model error.
inline constexpr double kSiblingDeviationFlagPct = 10.0;
// A case measured more than this much slower (in percent) than a longer-sequence run of the same
// work is flagged (ValidationCase::longer_sequence_deficit_pct).
inline constexpr double kSequenceMonotonicityFlagPct = 5.0;
// Twins (ValidationCase::twin_id) measured more than this far apart, in percent of the slower,
// are flagged; the same run-to-run allowance as the sibling check.
inline constexpr double kTwinSpreadFlagPct = 10.0;

struct ErrorSummary {
  std::string group;  // "all", a GPU name or a source label
  int64_t count = 0;
  int64_t projected = 0;
  double median_abs_error_pct = 0;
  double mean_error_pct = 0;
  double within_10_pct = 0;  // share of projected cases, in percent
  double within_20_pct = 0;
  double within_30_pct = 0;
};

// How a projected speedup compares with the measured one over matched cases of one source:
// CompareGpus pairs cases on two GPUs with the same model, sequence length, GPU count and
// precision (micro-batch and recompute may differ: each run picks what fits its GPU);
// ComparePrecisions pairs cases in two precisions with the same model, sequence, GPU and GPU
// count. A stack's in-situ efficiency largely cancels in the ratio, so this checks the hardware
// (or FP8) model on its own.
struct Speedup {
  std::string source;
  std::string context;  // ComparePrecisions: the GPU; CompareGpus: empty
  std::string a, b;     // the two GPUs or precisions; b is the faster (measured median >= 1)
  int64_t pairs = 0;
  double measured_ratio = 0;        // median of measured TGS on b / on a
  double projected_ratio = 0;       // median of projected TGS on b / on a
  double median_abs_error_pct = 0;  // median |projected ratio / measured ratio − 1| · 100
  double mean_error_pct = 0;        // mean (projected ratio / measured ratio − 1) · 100
};

// Every (source[, GPU], pair of variants) with at least one matched pair of projected cases, in
// source then name order. A key with two cases of one variant is ambiguous and skipped.
std::vector<Speedup> CompareGpus(const std::vector<ValidationCase>& cases);
std::vector<Speedup> ComparePrecisions(const std::vector<ValidationCase>& cases);

struct ValidationReport {
  std::string file;
  std::vector<ValidationCase> cases;
  ErrorSummary summary;
  std::vector<ErrorSummary> by_gpu;
  std::vector<ErrorSummary> by_source;
  // The same split by what a projection's blind spots tend to follow: training precision,
  // sequence-length band (attention's share of the work grows with it) and cluster scale
  // (one node, where no collective crosses a NIC, vs several).
  std::vector<ErrorSummary> by_model_family;  // dense vs MoE: the expert layer's own terms
  std::vector<ErrorSummary> by_precision;
  std::vector<ErrorSummary> by_seq_len;
  std::vector<ErrorSummary> by_scale;
  std::vector<Speedup> gpu_speedups;
  std::vector<Speedup> precision_speedups;
  int64_t inconsistent_cases = 0;  // cases flagged by the sibling, sequence or twin check
  // Flagged twin groups, and the largest error floor among them (ValidationCase::twin_*).
  int64_t twin_groups = 0;
  double max_twin_error_floor_pct = 0;
  // With ValidationOptions::sensitivity: the cases with a run-settings range, and those of them
  // measured within it (a setting the case does not state could account for the error).
  int64_t with_settings_range = 0;
  int64_t within_settings_range = 0;
  // Projected cases the memory model says do not fit in HBM although they were measured, so
  // ran: the memory model's false "does not fit" count.
  int64_t measured_but_not_fitting = 0;
  double elapsed_s = 0;
};

// What-if settings applied to every case, and a case filter.
struct ValidationOptions {
  int threads = 0;  // <= 0: all cores
  // Overrides the attention kernel of every case, a training.attention_kernel value (the
  // calibration schema does not carry it; the default is auto). E.g. unfused for runs that
  // predate FlashAttention; a kernel a case's GPU lacks makes that case unsupported.
  std::optional<std::string> attention_kernel;
  // Overrides of every case's training stack, loss kernel, train-metric passes, torch.compile,
  // FSDP implementation and dropout (defaults auto: the stack llm-foundry for the FSDP-only
  // layouts and megatron for the rest, the kernels and the rest following it; torch.compile
  // off); the settings left auto are resolved again.
  TrainingOverrides training;
  // Stack switches the schema does not carry either (defaults: off and fp32, Megatron's):
  // training.tp_comm_overlap and training.grad_reduce_dtype for every case.
  std::optional<bool> tp_comm_overlap;
  std::optional<bool> moe_a2a_overlap;            // training.moe_a2a_overlap, likewise
  std::optional<bool> moe_shared_expert_overlap;  // training.moe_shared_expert_overlap
  std::optional<DType> grad_reduce_dtype;
  // training.overlap_grad_reduce, and parallel.distributed_optimizer of the non-FSDP cases with
  // DP > 1 (the case default is true for both; false models pre-2022/2023 Megatron-LM).
  std::optional<bool> overlap_grad_reduce;
  std::optional<bool> distributed_optimizer;
  // Hardware overlays (`project calibrate`), each applied to the cases on the GPU it names
  // ("base"); `origin` names its file in messages.
  struct Overlay {
    nlohmann::json value;
    std::string origin;
    std::string base;
  };
  std::vector<Overlay> hw_overlays;
  // Keep only cases on this GPU (empty: all).
  std::string gpu;
  // Keep only cases whose source label (ValidationCase::source) is this (empty: all).
  std::string source;
  // Keep only cases whose id or source contains this text (empty: all).
  std::string only;
  // Keep only cases of this model family, "dense" or "moe" (empty: all).
  std::string model_family;
  // Also re-project every case with each run setting switched alone (`--sensitivity`).
  bool sensitivity = false;
  // Called as cases finish with (cases done, cases in the file), one call at a time though the
  // cases are projected on several threads (a progress bar's Update); empty: none.
  std::function<void(int64_t done, int64_t total)> on_progress;
};

// Reads and projects every case. A malformed line (bad JSON, wrong type, missing or unknown
// field) fails the whole run with kInvalidArgument naming "file:line" and the field; a case
// that parses but cannot be projected (invalid layout, unsupported feature) is listed as
// "unsupported" with the reason. `threads` <= 0 uses all cores.
absl::StatusOr<ValidationReport> ValidateCasesFile(const std::string& path, int threads = 0);
absl::StatusOr<ValidationReport> ValidateCasesFile(const std::string& path,
                                                   const ValidationOptions& options);

// The band of ValidationReport::by_seq_len a sequence length falls in, and its rank (bands are
// reported shortest first): "seq <= 1024", "seq 1025-4096", "seq 4097-16384", "seq > 16384".
std::pair<int, std::string> SequenceBand(int64_t seq_len);
// The band of ValidationReport::by_scale: "1 node" (num_gpus <= gpus_per_node),
// "2-16 nodes", "17+ nodes".
std::pair<int, std::string> ScaleBand(int64_t num_gpus, int64_t gpus_per_node);

// Reads an overlay for `project validate`, checked against the library profile of the GPU it
// names (so a malformed one fails before any case is projected).
absl::StatusOr<ValidationOptions::Overlay> LoadValidationOverlay(const std::string& path);

// The accuracy floor a user asks `project validate` to enforce (--max-median-error-pct,
// --min-within-20-pct, --max-not-fitting): kOutOfRange saying which limit was missed, or that
// nothing was projected.
struct AccuracyFloor {
  std::optional<double> max_median_abs_error_pct = {};
  std::optional<double> min_within_20_pct = {};
  // Measured cases the memory model may reject (ValidationReport::measured_but_not_fitting).
  std::optional<double> max_not_fitting = {};
};
absl::Status CheckAccuracyFloor(const ValidationReport& report, const AccuracyFloor& floor);

// Summary over the projected cases of `cases` (count includes the unsupported ones).
ErrorSummary Summarise(const std::vector<const ValidationCase*>& cases, std::string group);

}  // namespace projector

#endif  // PROJECTOR_STUDIES_VALIDATE_H_
