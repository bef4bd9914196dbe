// `project estimate gemm|attention|collective`: one op's time on one GPU profile.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "core/status_macros.h"
#include "backends/backend_registry.h"
#include "core/suggest.h"
#include "models/convnet_spec.h"
#include "projection/projection.h"
#include "studies/convnet_training.h"
#include "report/estimate_report.h"
#include "scenario/network_flags.h"
#include "scenario/scenario_flags.h"
#include "studies/estimate_flags.h"

namespace projector {
namespace {

constexpr FlagSpec kCommonFlags[] = {
    {"help", "Show this help", "", FlagArity::kSwitch},
    {"format", "Output format: text or json", "FORMAT"},
    {"gpu-arch", "GPU profile name or file", "NAME|FILE"},
    {"gpus-per-node", "GPUs per node", "N"},
    {"gpu-clock-mhz", "Sustained clock override", "MHZ"},
};

constexpr FlagSpec kConvNetFlags[] = {
    {"model", "Convolutional network: a name of models/convnets (resnet50) or a file", "NAME|FILE"},
    {"batch", "Images per GPU and step (one micro-batch)", "N"},
    {"num-gpus", "GPUs training data-parallel (default 1)", "N"},
    {"precision", "fp16 (default), bf16 or fp32", "DTYPE"},
};

void AddOpFlags(cxxopts::Options& options, const std::string& kind) {
  AddFlags(options, "", kCommonFlags);
  if (kind == "convnet") {
    AddFlags(options, "", kConvNetFlags);
  } else if (kind == "gemm") {
    AddFlags(options, "", GemmEstimateFlags());
  } else if (kind == "attention") {
    AddFlags(options, "", AttentionEstimateFlags());
  } else {
    AddFlags(options, "", CollectiveEstimateFlags());
  }
}

constexpr char kEstimateUsage[] =
    "Times one op on a GPU with the simulate backends.\n\n"
    "  project estimate gemm --gpu-arch G --m M --n N --k K [--dtype D]\n"
    "  project estimate attention --gpu-arch G --batch B --heads H --seq-q S --head-dim D\n"
    "  project estimate collective --gpu-arch G --op allreduce --bytes 1GB --ranks N\n"
    "  project estimate collective --network FILE --op allreduce --bytes 1GiB [--ranks N]\n"
    "                              [--algorithm A] [--congestion aware|unaware]\n"
    "  project estimate convnet --model resnet50 --gpu-arch G --batch 256 [--num-gpus 8]\n"
    "                           [--precision fp16]   (a data-parallel training step)\n\n"
    "`project estimate OP --help` lists the flags of one op.\n";

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

// A collective on a network file: no GPU profile is read (--gpu-arch and --gpus-per-node
// describe the profile's own network, which the file replaces).
absl::Status PrintNetworkCollective(const FlagValues& flags, const NetworkSpec& network,
                                    bool as_json, const Output& io) {
  for (const char* name : {"gpu-arch", "gpus-per-node", "gpu-clock-mhz"}) {
    if (Given(flags, name)) {
      return FlagError(name, "--network replaces the GPU profile's network; leave out one");
    }
  }
  PROJECTOR_ASSIGN_OR_RETURN(const bool astra, AstraSemanticsFlag(flags));
  if (astra) {
    PROJECTOR_ASSIGN_OR_RETURN(const AstraCollectiveOpEstimate e,
                               EstimateAstraCollectiveFromFlags(flags, network));
    io.out << (as_json ? AstraCollectiveEstimateJson(e).dump(2) + "\n"
                       : AstraCollectiveEstimateText(e));
    return absl::OkStatus();
  }
  if (Given(flags, "concurrent")) {
    PROJECTOR_ASSIGN_OR_RETURN(const ConcurrentCollectivesEstimate e,
                               EstimateConcurrentFromFlags(flags, network));
    io.out << (as_json ? ConcurrentCollectivesJson(e).dump(2) + "\n"
                       : ConcurrentCollectivesText(e));
    return absl::OkStatus();
  }
  PROJECTOR_ASSIGN_OR_RETURN(const NetworkCollectiveOpEstimate e,
                             EstimateNetworkCollectiveFromFlags(flags, network));
  io.out << (as_json ? NetworkCollectiveEstimateJson(e).dump(2) + "\n"
                     : NetworkCollectiveEstimateText(e));
  return absl::OkStatus();
}

// `estimate convnet`: a convolutional network's data-parallel training step.
absl::Status PrintConvNetTraining(const FlagValues& flags, const HardwareProfile& hw,
                                  bool as_json, const Output& io) {
  if (!Given(flags, "model")) return FlagError("model", "required; e.g. --model resnet50");
  absl::StatusOr<ConvNetSpec> spec = ResolveConvNet(StringFlag(flags, "model"));
  if (!spec.ok()) return WithFlag("model", spec.status());
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t batch, IntFlag(flags, "batch", {}, std::nullopt));
  PROJECTOR_ASSIGN_OR_RETURN(const int64_t gpus, IntFlag(flags, "num-gpus", {}, int64_t{1}));
  DType precision = DType::kFp16;
  if (Given(flags, "precision")) {
    const std::string v = StringFlag(flags, "precision");
    if (v != "fp16" && v != "bf16" && v != "fp32") {
      return FlagError("precision", absl::StrCat("unknown precision '", v,
                                                 "'; accepted: fp16, bf16, fp32"));
    }
    precision = *ParseDType(v);
  }
  PROJECTOR_ASSIGN_OR_RETURN(const BackendSet set, MakeBackendSet(BackendSelection{}, hw));
  absl::StatusOr<ConvNetTraining> t =
      ProjectConvNetTraining(*spec, hw, RefsOf(set), batch, gpus, precision);
  if (!t.ok()) return t.status();
  io.out << (as_json ? ConvNetTrainingJson(*t).dump(2) + "\n" : ConvNetTrainingText(*t));
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
  if (kind == "--help" || kind == "-h") {
    io.out << kEstimateUsage;
    return absl::OkStatus();
  }
  if (kind != "gemm" && kind != "attention" && kind != "collective" && kind != "convnet") {
    const std::vector<std::string> ops = {"gemm", "attention", "collective", "convnet"};
    return absl::InvalidArgumentError(absl::StrCat(
        "estimate: unknown op '", kind, "'", DidYouMean(kind, ops),
        "; accepted: gemm, attention, collective, convnet"));
  }
  cxxopts::Options options(absl::StrCat("project estimate ", kind), "Estimate one op.");
  AddOpFlags(options, kind);
  std::vector<std::string> storage = WithGemmDimsRenamed(argc, argv);
  std::vector<char*> args = {argv[2]};
  for (std::string& a : storage) args.push_back(a.data());
  PROJECTOR_ASSIGN_OR_RETURN(const std::optional<FlagValues> flags,
                             ParseFlags(options, {args.data(), args.size()},
                                        absl::StrCat("estimate ", kind, ": "), "", io.out));
  if (!flags) return absl::OkStatus();
  PROJECTOR_ASSIGN_OR_RETURN(const bool as_json, WantsJson(*flags));
  if (kind == "collective") {
    PROJECTOR_ASSIGN_OR_RETURN(const std::optional<NetworkSpec> network, NetworkFromFlags(*flags));
    if (network) return PrintNetworkCollective(*flags, *network, as_json, io);
  }
  PROJECTOR_ASSIGN_OR_RETURN(const HardwareProfile hw, HardwareFromFlags(*flags));
  if (kind == "convnet") return PrintConvNetTraining(*flags, hw, as_json, io);
  if (kind == "gemm") {
    PROJECTOR_ASSIGN_OR_RETURN(const GemmOpEstimate e, EstimateGemmFromFlags(*flags, hw));
    io.out << (as_json ? GemmEstimateJson(e).dump(2) + "\n" : GemmEstimateText(e));
  } else if (kind == "attention") {
    PROJECTOR_ASSIGN_OR_RETURN(const AttentionOpEstimate e, EstimateAttentionFromFlags(*flags, hw));
    io.out << (as_json ? AttentionEstimateJson(e).dump(2) + "\n" : AttentionEstimateText(e));
  } else {
    PROJECTOR_ASSIGN_OR_RETURN(const CollectiveOpEstimate e,
                               EstimateCollectiveFromFlags(*flags, hw));
    io.out << (as_json ? CollectiveEstimateJson(e).dump(2) + "\n" : CollectiveEstimateText(e));
  }
  return absl::OkStatus();
}

}  // namespace projector
