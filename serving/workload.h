// Serving workloads: the requests a deployment receives, each with an arrival time, a prompt
// length and an output length. Synthetic (Poisson or fixed-rate arrivals at a rate, every
// request at once for a fixed concurrency or a static batch; lengths fixed, uniform or
// lognormal; a seed) or replayed from a CSV trace. The random streams are the 64-bit Mersenne
// twister and inverse-transform / Box-Muller draws written here, so a seed gives the same
// requests on every platform (std::*_distribution is implementation-defined).
#ifndef PROJECTOR_SERVING_WORKLOAD_H_
#define PROJECTOR_SERVING_WORKLOAD_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace projector {

struct Request {
  int64_t id = 0;
  double arrival_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  // Arrives with its prompt's KV cache and its first token (a decode pool's request in
  // disaggregated serving): it needs cache blocks for the prompt and decodes from there.
  bool prefilled = false;
  // The first prefix_tokens tokens of the prompt are the same in every request of
  // prefix_group (a system prompt, a few-shot preamble, a shared document); -1: none. What an
  // engine's prefix cache can reuse (EngineConfig::prefix_caching).
  int64_t prefix_group = -1;
  int64_t prefix_tokens = 0;
  // Under data-parallel attention, the attention rank the request is bound to (a disaggregated
  // decode pool's request: the rank its cache was sent to); -1: dealt round robin.
  int64_t dp_rank = -1;
};

// How requests arrive. kPoisson: exponential gaps at `qps` (vLLM's benchmark_serving
// --request-rate); kFixedRate: every 1/qps; kAllAtOnce: every request at time 0 (an offline
// benchmark; with a fixed concurrency the engine admits them as slots free).
enum class ArrivalKind { kPoisson, kFixedRate, kAllAtOnce };
std::string_view ArrivalKindName(ArrivalKind kind);

enum class LengthDistribution { kFixed, kUniform, kLognormal };
std::string_view LengthDistributionName(LengthDistribution d);
absl::StatusOr<LengthDistribution> ParseLengthDistribution(std::string_view name);

// Token lengths: `mean` exactly (kFixed); uniform over [mean·(1 − spread), mean·(1 + spread)];
// lognormal with that mean and coefficient of variation `spread` (σ² = ln(1 + spread²),
// μ = ln(mean) − σ²/2). Every draw is rounded to an integer and clamped to [1, max].
struct LengthSpec {
  LengthDistribution distribution = LengthDistribution::kFixed;
  double mean = 0;
  double spread = 0;
  int64_t max = int64_t{1} << 20;
};

struct WorkloadSpec {
  ArrivalKind arrival = ArrivalKind::kPoisson;
  double qps = 1.0;  // kPoisson, kFixedRate
  int64_t num_requests = 1000;
  LengthSpec input;
  LengthSpec output;
  uint64_t seed = 0;
  // Shared prefixes (SGLang's generated-shared-prefix benchmark: a system prompt per group):
  // every prompt starts with shared_prefix_len tokens of one of prefix_groups prefixes, drawn
  // uniformly, and goes on with its own input draw. 0: no shared prefix.
  int64_t shared_prefix_len = 0;
  int64_t prefix_groups = 1;
};

// kInvalidArgument naming the field (qps > 0 for timed arrivals, num_requests >= 1, means
// >= 1, spread in [0, 1) for uniform and >= 0 for lognormal, shared_prefix_len >= 0,
// prefix_groups >= 1 and > 1 only with a shared prefix).
absl::Status ValidateWorkload(const WorkloadSpec& spec);

// The requests of a synthetic workload, ids 0.., in arrival order. Same spec, same requests;
// the prefix groups come from a stream of their own, so a shared prefix leaves the arrivals and
// the input and output draws as they were (each prompt is the prefix plus its draw).
std::vector<Request> GenerateRequests(const WorkloadSpec& spec);

// A trace CSV: a header row naming the columns arrival_s, prompt_tokens and output_tokens (in
// any order; other columns ignored), optionally prefix_group and prefix_tokens (both or
// neither: the request's prompt starts with prefix_tokens tokens shared by its group; -1 or 0
// tokens for none), then one request per row; blank lines and lines starting with '#' skipped.
// kNotFound if the file cannot be read; kInvalidArgument "<file>:<line>: column <name>:
// <problem>" for a missing column, a value that is not a number, a negative arrival, token
// counts < 1, arrivals out of order, a prefix longer than its prompt, or a group whose rows
// give it different prefix lengths.
absl::StatusOr<std::vector<Request>> LoadRequestTrace(const std::string& path);

// `requests` dealt to `parts` replicas in turn (a round-robin load balancer): request i to part
// i mod parts, each part's share in the given order.
std::vector<std::vector<Request>> DealRoundRobin(std::span<const Request> requests, int64_t parts);

}  // namespace projector

#endif  // PROJECTOR_SERVING_WORKLOAD_H_
