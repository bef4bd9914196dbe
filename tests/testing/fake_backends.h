// Fake backends for profiler and composer tests: every estimate is a fixed rate times the op's
// work, so expected times are closed forms. GEMM and attention: seconds per FLOP; memory and
// collectives: seconds per byte (+ an optional fixed latency). FakeBackends bundles one of each
// and hands out BackendRefs.
#ifndef PROJECTOR_TESTS_TESTING_FAKE_BACKENDS_H_
#define PROJECTOR_TESTS_TESTING_FAKE_BACKENDS_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "backends/attention_backend.h"
#include "backends/collective_backend.h"
#include "backends/gemm_backend.h"
#include "backends/memory_backend.h"
#include "core/op_shapes.h"
#include "core/units.h"
#include "profilers/op_list.h"

namespace projector::testing {

// time = GemmFlops(shape) · seconds_per_flop (all of it clock-scaled). kInvalidArgument for a
// non-positive m, n, k or batch; kUnimplemented for `unsupported_dtype` when set.
class FakeGemmBackend final : public GemmBackend {
 public:
  explicit FakeGemmBackend(Seconds seconds_per_flop = Seconds(1e-15),
                           std::optional<DType> unsupported_dtype = std::nullopt)
      : seconds_per_flop_(seconds_per_flop), unsupported_dtype_(unsupported_dtype) {}

  absl::StatusOr<GemmEstimate> Estimate(const GemmShape& shape) const override {
    ++calls_;
    if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("fake gemm: non-positive shape m=", shape.m,
                                                     " n=", shape.n, " k=", shape.k,
                                                     " batch=", shape.batch));
    }
    if (unsupported_dtype_.has_value() && shape.dtype == *unsupported_dtype_) {
      return absl::UnimplementedError("fake gemm: unsupported dtype");
    }
    Seconds t = seconds_per_flop_ * GemmFlops(shape).value();
    return GemmEstimate{.time = t, .clock_scaled_time = t, .bound = Bound::kCompute};
  }
  std::string_view name() const override { return "fake_gemm"; }

  Seconds seconds_per_flop() const { return seconds_per_flop_; }
  int64_t calls() const { return calls_.load(); }

 private:
  Seconds seconds_per_flop_;
  std::optional<DType> unsupported_dtype_;
  mutable std::atomic<int64_t> calls_{0};
};

// time = AttentionFlops(shape, pass) · seconds_per_flop (all clock-scaled). kInvalidArgument
// for non-positive sizes or num_q_heads not a multiple of num_kv_heads.
class FakeAttentionBackend final : public AttentionBackend {
 public:
  explicit FakeAttentionBackend(Seconds seconds_per_flop = Seconds(1e-15))
      : seconds_per_flop_(seconds_per_flop) {}

  absl::StatusOr<AttentionEstimate> Estimate(const AttentionShape& shape,
                                             AttentionPass pass) const override {
    ++calls_;
    if (shape.batch <= 0 || shape.num_q_heads <= 0 || shape.num_kv_heads <= 0 ||
        shape.seq_q <= 0 || shape.seq_kv <= 0 || shape.qk_head_dim <= 0 ||
        shape.v_head_dim <= 0) {
      return absl::InvalidArgumentError("fake attention: non-positive size");
    }
    if (shape.num_q_heads % shape.num_kv_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat("fake attention: ", shape.num_q_heads,
                                                     " q heads not a multiple of ",
                                                     shape.num_kv_heads, " kv heads"));
    }
    Seconds t = seconds_per_flop_ * AttentionFlops(shape, pass).value();
    return AttentionEstimate{.time = t, .clock_scaled_time = t, .bound = Bound::kCompute};
  }
  std::string_view name() const override { return "fake_attention"; }

  Seconds seconds_per_flop() const { return seconds_per_flop_; }
  int64_t calls() const { return calls_.load(); }

 private:
  Seconds seconds_per_flop_;
  mutable std::atomic<int64_t> calls_{0};
};

// time = bytes · seconds_per_byte + launches · launch_latency; nothing clock-scaled (HBM bound).
// kInvalidArgument for negative bytes/flops or launches < 1.
class FakeMemoryBackend final : public MemoryBackend {
 public:
  explicit FakeMemoryBackend(Seconds seconds_per_byte = Seconds(1e-12),
                             Seconds launch_latency = Seconds(0))
      : seconds_per_byte_(seconds_per_byte), launch_latency_(launch_latency) {}

  absl::StatusOr<MemoryEstimate> Estimate(const MemoryOp& op) const override {
    ++calls_;
    if (op.bytes.value() < 0 || op.flops.value() < 0 || op.launches < 1) {
      return absl::InvalidArgumentError("fake memory: negative bytes/flops or launches < 1");
    }
    Seconds t = seconds_per_byte_ * op.bytes.value() +
                launch_latency_ * static_cast<double>(op.launches);
    return MemoryEstimate{.time = t, .clock_scaled_time = Seconds(0), .bound = Bound::kMemory};
  }
  std::string_view name() const override { return "fake_memory"; }

  Seconds seconds_per_byte() const { return seconds_per_byte_; }
  int64_t calls() const { return calls_.load(); }

 private:
  Seconds seconds_per_byte_;
  Seconds launch_latency_;
  mutable std::atomic<int64_t> calls_{0};
};

// time = bytes · seconds_per_byte + latency (0 for a group of one rank: no communication).
// Reports kRing for kAuto, otherwise echoes the requested algorithm, and remembers the last
// one asked for. kInvalidArgument for group size < 1, negative bytes or SendRecv with a group
// size other than 2; kUnimplemented for `unsupported_algorithm` when set.
class FakeCollectiveBackend final : public CollectiveBackend {
 public:
  explicit FakeCollectiveBackend(
      Seconds seconds_per_byte = Seconds(1e-10), Seconds latency = Seconds(0),
      std::optional<CollectiveAlgorithm> unsupported_algorithm = std::nullopt)
      : seconds_per_byte_(seconds_per_byte),
        latency_(latency),
        unsupported_algorithm_(unsupported_algorithm) {}

  absl::StatusOr<CollectiveEstimate> Estimate(
      const CollectiveOp& op,
      CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto) const override {
    ++calls_;
    last_algorithm_.store(algorithm);
    if (op.group.size < 1 || op.bytes.value() < 0) {
      return absl::InvalidArgumentError("fake collective: group size < 1 or negative bytes");
    }
    if (op.kind == CollectiveKind::kSendRecv && op.group.size != 2) {
      return absl::InvalidArgumentError("fake collective: SendRecv needs a group of 2");
    }
    if (unsupported_algorithm_.has_value() && algorithm == *unsupported_algorithm_) {
      return absl::UnimplementedError("fake collective: unsupported algorithm");
    }
    CollectiveEstimate e;
    e.algorithm = algorithm == CollectiveAlgorithm::kAuto ? CollectiveAlgorithm::kRing : algorithm;
    if (op.group.size == 1) return e;
    e.time = seconds_per_byte_ * op.bytes.value() + latency_;
    if (e.time.value() > 0) e.bus_bandwidth = op.bytes / e.time;
    return e;
  }
  std::string_view name() const override { return "fake_collective"; }

  Seconds seconds_per_byte() const { return seconds_per_byte_; }
  Seconds latency() const { return latency_; }
  int64_t calls() const { return calls_.load(); }
  CollectiveAlgorithm last_algorithm() const { return last_algorithm_.load(); }

 private:
  Seconds seconds_per_byte_;
  Seconds latency_;
  std::optional<CollectiveAlgorithm> unsupported_algorithm_;
  mutable std::atomic<int64_t> calls_{0};
  mutable std::atomic<CollectiveAlgorithm> last_algorithm_{CollectiveAlgorithm::kAuto};
};

// One fake of each family with the default rates: 1 fs per FLOP (1 PFLOP/s), 1 ps per HBM byte
// (1 TB/s), 0.1 ns per wire byte (10 GB/s).
struct FakeBackends {
  FakeGemmBackend gemm;
  FakeAttentionBackend attention;
  FakeMemoryBackend memory;
  FakeCollectiveBackend collective;

  BackendRefs Refs() const {
    return BackendRefs{.gemm = gemm, .attention = attention, .memory = memory,
                       .collective = collective};
  }
};

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_FAKE_BACKENDS_H_
