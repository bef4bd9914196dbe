// Profile file: measured op and module times of one scenario (model, GPU, layout, run settings),
// as written by `--profiling-mode measure` or by hand from framework traces, read by the profile
// backends and by `project calibrate`. JSON, versioned ("format": "projector-profile",
// "version": 1); every time is in microseconds with median, min, max and repetitions.
#ifndef PROJECTOR_BACKENDS_PROFILE_PROFILE_FILE_H_
#define PROJECTOR_BACKENDS_PROFILE_PROFILE_FILE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/dtype.h"
#include "core/op_shapes.h"
#include "core/training_config.h"
#include "core/units.h"
#include "nlohmann/json.hpp"

namespace projector {

inline constexpr std::string_view kProfileFormat = "projector-profile";
inline constexpr int64_t kProfileVersion = 1;

// Spread of repeated runs of one op or module.
struct TimingStats {
  Seconds median;
  Seconds min;
  Seconds max;
  int64_t repetitions = 1;
};

// The scenario the profile was measured on.
struct ProfileScenario {
  std::string model;  // library name or path, as ResolveModel takes it
  std::string gpu;    // library name or path, as ResolveHardwareProfile takes it
  int64_t num_gpus = 1;
  int64_t gpus_per_node = 0;  // 0: the hardware profile's
  ParallelConfig parallel;
  int64_t micro_batch = 1;
  int64_t seq_len = 4096;
  int64_t global_batch = 0;  // 0: micro_batch · dp
  DType precision = DType::kBf16;
  Recompute recompute = Recompute::kNone;
  double clock_mhz = 0;  // clock the GPU ran at while measured; 0 = the profile's sustained clock
  std::optional<double> measured_tokens_per_s_per_gpu;  // end-to-end, when the run reported it
};

enum class ProfiledOpKind { kGemm, kAttention, kMemory, kCollective };
std::string_view ProfiledOpKindName(ProfiledOpKind k);

// One measured op. Exactly one shape field is meaningful, by `kind`.
struct ProfiledOp {
  ProfiledOpKind kind = ProfiledOpKind::kGemm;
  std::string name;    // optional: "qkv_proj", ...
  std::string module;  // optional: "attention", "mlp", ...
  GemmShape gemm;
  AttentionShape attention;
  AttentionPass pass = AttentionPass::kForward;
  MemoryOp memory;
  CollectiveOp collective;
  TimingStats time;
};

// Measured time of one module of one layer (or the embedding / output layer), one micro-batch.
struct ProfiledModule {
  std::string module;      // attention, mlp, moe, moe_a2a, norms, embedding, output, layer
  std::string layer_kind;  // dense or moe ("" for embedding/output)
  std::optional<TimingStats> forward;
  std::optional<TimingStats> backward;
};

struct Profile {
  std::string origin;  // file it was read from (for messages)
  ProfileScenario scenario;
  std::string tool;    // who wrote it ("project measure (CUDA 13.0, cuBLASLt)", ...)
  std::string device;  // device name as the runtime reported it
  std::vector<ProfiledOp> ops;
  std::vector<ProfiledModule> modules;
};

// Reads, parses and validates a profile file. kNotFound if it cannot be opened; kInvalidArgument
// "<file>: <json-pointer>: <problem>; <accepted>" for a syntax error, a wrong format or version,
// a missing field, an unknown key, a wrong type, a non-positive size, min > median > max, or a
// shape that contradicts itself or the scenario (heads, ranks > num_gpus, layout product).
absl::StatusOr<Profile> LoadProfileFile(const std::string& path);
// The same from parsed JSON; `origin` names it in messages.
absl::StatusOr<Profile> ParseProfile(const nlohmann::json& value, const std::string& origin);

// The profile as JSON (the format ParseProfile reads; ParseProfile(ProfileToJson(p)) == p).
nlohmann::json ProfileToJson(const Profile& profile);
// kInvalidArgument if the file cannot be written.
absl::Status WriteProfileFile(const Profile& profile, const std::string& path);

// One line describing an op's shape ("gemm 4096x4096x4096 b1 bf16").
std::string DescribeProfiledOp(const ProfiledOp& op);

// Parses/names collective kinds as the profile spells them: allreduce, allgather,
// reducescatter, alltoall, sendrecv, broadcast.
absl::StatusOr<CollectiveKind> ParseCollectiveKindName(std::string_view name);

}  // namespace projector

#endif  // PROJECTOR_BACKENDS_PROFILE_PROFILE_FILE_H_
