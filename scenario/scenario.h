// Scenario: model + hardware profile (with node/network) + parallel layout + training settings
// + backend selection, loaded and validated once. Everything after this point can assume valid
// input. Sources: a scenario JSON file, CLI flags (which override it), or one case of a
// calibration file (the ../shared/calibration schema).
#ifndef PROJECTOR_SCENARIO_SCENARIO_H_
#define PROJECTOR_SCENARIO_SCENARIO_H_

#include <optional>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/backend_registry.h"
#include "core/training_config.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "models/convnet_spec.h"
#include "nlohmann/json.hpp"

namespace projector {

struct Scenario {
  std::string name;  // case id or "default"
  ModelSpec model;
  // gpus_per_node and clock overrides already applied; the attention efficiencies are those of
  // the flash kernel that runs (ResolveKernels).
  HardwareProfile hw;
  ParallelConfig parallel;
  TrainingConfig training;
  BackendSelection backends;
  int64_t num_gpus = 8;
  std::optional<double> measured_tokens_per_s_per_gpu;
  // The attention kernel that runs, set by ResolveKernels: a kernel of the GPU profile
  // ("fa3"), "flash" for a profile that names none, or "unfused".
  std::string attention_kernel_used;
  // Settings the input did not state and the tool's defaults decided (shown in the report).
  std::vector<std::string> defaults_used;
  // The hardware overlay file applied to `hw` (`--hw-overlay`), empty when none; carried into
  // the commands search prints.
  std::string hw_overlay_file;
  // Hardware what-ifs applied to `hw` (`--hw-set PATH=VALUE` and its named shorthands; a
  // search's --gpu-clock-mhz), as the flags were given ("--hw-set scale_out.nics_per_node=4",
  // "--hbm-gib 120"): shown in reports and carried into printed commands; empty when none.
  std::vector<std::string> hw_settings;
  // The scenario file a search started from (`project search --scenario`), carried into the
  // commands it prints; empty otherwise.
  std::string scenario_file;
};

// Llama-3.1-8B on 8 MI300X, TP1 DP8, seq 8192, micro-batch 1, global batch 64, bf16.
absl::StatusOr<Scenario> DefaultScenario();

// Upper bounds of a scenario (ValidateScenario), far beyond any training run.
inline constexpr int64_t kMaxGpus = int64_t{1} << 24;
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
inline constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 30;
inline constexpr int64_t kMaxMicroBatchesPerStep = int64_t{1} << 20;
inline constexpr int64_t kMaxTokensPerMicroBatch = int64_t{1} << 32;
// No GPU clocks above a few GHz or below a few hundred MHz; [1, 10000] MHz leaves room for any
// what-if while keeping every time finite.
inline constexpr double kMinClockMhz = 1.0;
inline constexpr double kMaxClockMhz = 10000.0;
// A measured throughput beyond 10^8 tokens/s per GPU is a typo (the fastest runs of the calibration
// file are near 2·10^5).
inline constexpr double kMaxMeasuredTokensPerSecondPerGpu = 1e8;

// Cross-field validation: TP·PP·CP·DP == num_gpus, heads % TP, kv heads vs TP, layers across
// PP·VPP (unless an uneven split is given), experts % EP, EP·ETP vs DP·CP·TP, global batch vs
// micro-batch·DP, ... kFailedPrecondition / kInvalidArgument with `origin` and the field.
absl::Status ValidateScenario(const Scenario& scenario, const std::string& origin);

// tp·pp·cp (with_dp: ·dp) in double, so that degrees no one has bounded yet cannot overflow:
// exact up to 2^53, which is far above kMaxGpus. Callers reject a product above kMaxGpus before
// they divide by it or store it as a GPU count.
double LayoutProduct(const ParallelConfig& parallel, bool with_dp);

// Unless the input set it (`given`), sets the distributed optimizer of a non-FSDP layout with
// DP > 1 from the stack: on under Megatron (as Megatron-LM and NeMo benchmark recipes run), off
// under a PyTorch-native stack (DDP), and records the default (replacing an earlier record).
void DefaultDistributedOptimizer(bool given, Scenario& scenario);

// training.recompute_modules against the scenario: Megatron-Core's, under selective recompute
// (unless they are the default), each module one the model has. kFailedPrecondition
// "<origin>: /training/recompute_modules: ..." otherwise. Part of ValidateScenario.
absl::Status ValidateRecomputeModules(const Scenario& scenario, const std::string& origin);

// Forgets the defaults_used entries on `key` (those starting "key="), for a caller that sets the
// key itself (a command-line what-if over a case's or file's default).
void DropDefaultNote(std::string_view key, Scenario& scenario);

// training.moe_capacity_factor, moe_pad_to_capacity and moe_imbalance against the model and
// layout (part of ValidateScenario): MoE models only, capacity in (0, E/top_k] or 0, padding
// only with a capacity, imbalance in [1, MaxMoeImbalance].
absl::Status ValidateMoeRouting(const Scenario& scenario, const std::string& origin);

// Whether `layers` split evenly over pp·vpp virtual stages without an explicit first/last stage:
// divisible, or (more than two stages) divisible once the embedding and the loss each take a
// layer's slot (Megatron's account_for_embedding/loss_in_pipeline_split).
bool LayersSplitEvenly(int64_t layers, int64_t virtual_stages);

// Whether `micro_batches` per step run under the layout's pipeline schedule: any count without
// interleaving; with vpp > 1 a multiple of pp. Megatron-LM's interleaved 1F1B takes the
// micro-batches in groups of pp per model chunk (get_schedule_table) with a warm-up of
// 2·(pp − rank − 1) + (vpp − 1)·pp passes, and its releases up to 2024 refused other counts
// ("number of microbatches is not divisible by pipeline-model-parallel-size when using
// interleaved schedule"); with a shorter last group that order waits on itself (pp 8, vpp 2,
// 12 micro-batches: rank 0's forward of micro-batch 9 on its second chunk needs rank 7's, which
// waits for rank 0's backward of micro-batch 0).
bool InterleavedMicroBatchesFit(const ParallelConfig& parallel, int64_t micro_batches);

// An uneven pipeline split for a layer count that pp does not divide: {first, last} stage
// layers with the pp − 2 middle stages at m layers each, m as small as any split allows
// (ceil(layers/pp), the critical stage), and the rest shared by the first and last stage, the
// last taking the smaller half (it also runs the output layer and loss); with MTP modules (on
// the last stage) and no VPP the first stage takes m and the last the rest. Empty when pp < 2 or
// the layers are too few to give every stage one.
std::optional<std::pair<int64_t, int64_t>> SuggestUnevenSplit(int64_t layers, int64_t pp,
                                                              int64_t vpp, int64_t mtp_layers);

// Whether ValidateScenario accepts `first` / `last` stage layers (0 = dealt like a middle
// stage; at least one > 0) for `layers` on pp stages of vpp model chunks: pp >= 2, the layers
// left split evenly over the other stages, and with vpp > 1 every stage at least vpp layers.
bool UnevenSplitAccepted(int64_t layers, int64_t pp, int64_t vpp, int64_t first, int64_t last);

// The largest training.moe_imbalance a layout allows: the busiest of the EP ranks can receive at
// most min(top_k, E/ep) of every token's top_k pairs, ep·min(top_k, E/ep)/top_k times the
// balanced share (1 with ep 1, or for a model without experts).
double MaxMoeImbalance(const ModelSpec& model, const ParallelConfig& parallel);

// Picks the attention kernel training.attention_kernel asks for on the scenario's GPU and puts
// that kernel's efficiencies into hw.gpu: "auto" takes, for a PyTorch-native layout
// (IsPyTorchNativeLayout), the profile's attention_kernel_pytorch_bias when the model uses ALiBi
// or else attention_kernel_pytorch, when the profile names them; otherwise the profile's
// default kernel; the choice is listed in defaults_used. An "auto" training.loss_kernel and
// training.train_metric_passes are listed there too, with what ResolvedLossKernel and
// ResolvedTrainMetricPasses pick for the layout. Idempotent, so a
// caller that changes the GPU, layout or kernel afterwards resolves again. The builders below
// call it. kInvalidArgument "<origin>: /training/attention_kernel: ..." listing the valid values
// when the GPU's profile has no kernel of that name.
absl::Status ResolveKernels(Scenario& scenario, const std::string& origin);

// A scenario JSON file: {"model": NAME|PATH|{inline model}, "gpu": NAME|PATH, "num_gpus",
// "gpus_per_node", "parallel": {...}, "training": {...}, "backends": {...},
// "measured_tokens_per_s_per_gpu"}.
absl::StatusOr<Scenario> LoadScenarioFile(const std::string& path);
// One case object of a calibration JSONL file (`origin` is "file:line").
// Also reads the classic schema (../shared/calibration/classic_public.jsonl: framework, a library
// model by name, per_gpu_batch, measured throughput with unit and scope), told apart by its
// per_gpu_batch; an image model's case is kUnimplemented.
absl::StatusOr<Scenario> ScenarioFromCase(const nlohmann::json& value, const std::string& origin);
// An image model's case of the classic schema (image_size set): the network, the GPU and the
// data-parallel run it describes; `project estimate convnet` and `validate` project it.
struct ConvNetCase {
  ConvNetSpec spec;
  HardwareProfile hw;
  int64_t num_gpus = 1;
  int64_t images_per_gpu = 1;
  DType precision = DType::kFp16;
  double measured_images_per_s_per_gpu = 0;
};
bool IsImageCase(const nlohmann::json& value);
absl::StatusOr<ConvNetCase> ConvNetCaseFromJson(const nlohmann::json& value,
                                                const std::string& origin);
// A classic case's measured throughput in samples/s per GPU: tokens (sequences x seq_len) for a
// language model, images for an image model.
absl::StatusOr<double> ClassicCaseSamplesPerSecondPerGpu(const nlohmann::json& value,
                                                        const std::string& origin);
// "FILE:ID": the case with that id.
absl::StatusOr<Scenario> LoadCalibrationCase(const std::string& file_colon_id);

// The scenario as JSON (model, gpu, cluster, layout, training, backends, defaults used).
nlohmann::json ScenarioToJson(const Scenario& scenario);
// A few readable lines describing the scenario.
std::string DescribeScenario(const Scenario& scenario);

// ", N train-metric passes" for the passes ResolvedTrainMetricPasses runs ("1 train-metric
// pass"; nothing when none), then on a PyTorch-native stack how its elementwise work runs:
// ", eager elementwise" or ", torch.compile".
std::string TrainMetricsPhrase(const TrainingConfig& training, const ParallelConfig& parallel);
// ", dropout P" (hidden and attention alike), ", dropout hidden P, attention Q", or "" without
// dropout (ResolvedDropout), for the training line.
std::string DropoutPhrase(const Scenario& s);
// ", FSDP1", ", FSDP2" or ", Megatron-FSDP" (ResolvedFsdpImpl) on an FSDP layout, else "".
std::string FsdpImplPhrase(const Scenario& s);
// What the training line says after the loss kernel: TrainMetricsPhrase, FsdpImplPhrase and
// DropoutPhrase in that order.
std::string TrainingSwitchesPhrase(const Scenario& s);

// The attention kernel the scenario runs (attention_kernel_used), or the training.attention_kernel
// request when the scenario was not resolved.
std::string_view AttentionKernelOf(const Scenario& scenario);

// One-line layout summary: "TP8 PP16 VPP4 CP1 EP1 DP128 SP".
// The layout as the scenario JSON's "parallel" object (tp ... pipeline_schedule).
nlohmann::json ParallelConfigJson(const ParallelConfig& parallel);
std::string LayoutSummary(const ParallelConfig& parallel);

}  // namespace projector

#endif  // PROJECTOR_SCENARIO_SCENARIO_H_
