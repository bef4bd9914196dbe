#include "serving/workload.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <sstream>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace projector {
namespace {

// A uniform draw in (0, 1): the top 53 bits of a 64-bit Mersenne-twister word, never 0.
double Uniform01(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// A standard normal draw (Box-Muller, the cosine branch).
double StandardNormal(std::mt19937_64& rng) {
  const double u1 = Uniform01(rng);
  const double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

int64_t DrawLength(const LengthSpec& spec, std::mt19937_64& rng) {
  double value = spec.mean;
  switch (spec.distribution) {
    case LengthDistribution::kFixed:
      break;
    case LengthDistribution::kUniform: {
      const double low = spec.mean * (1.0 - spec.spread);
      const double high = spec.mean * (1.0 + spec.spread);
      value = low + (high - low) * Uniform01(rng);
      break;
    }
    case LengthDistribution::kLognormal: {
      const double sigma2 = std::log1p(spec.spread * spec.spread);
      const double mu = std::log(spec.mean) - 0.5 * sigma2;
      value = std::exp(mu + std::sqrt(sigma2) * StandardNormal(rng));
      break;
    }
  }
  const double clamped =
      std::clamp(std::round(value), 1.0, static_cast<double>(std::max<int64_t>(spec.max, 1)));
  return static_cast<int64_t>(clamped);
}

absl::Status CheckLength(const LengthSpec& spec, absl::string_view field) {
  if (!(spec.mean >= 1.0) || !std::isfinite(spec.mean)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": mean length must be a number >= 1 token, got ", spec.mean));
  }
  if (spec.distribution == LengthDistribution::kUniform &&
      !(spec.spread >= 0.0 && spec.spread < 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a uniform spread is a fraction of the mean in [0, 1), got ", spec.spread));
  }
  if (spec.distribution == LengthDistribution::kLognormal &&
      !(spec.spread >= 0.0 && std::isfinite(spec.spread))) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ": a lognormal spread is a coefficient of variation >= 0, got ", spec.spread));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view ArrivalKindName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kFixedRate:
      return "fixed_rate";
    case ArrivalKind::kAllAtOnce:
      return "all_at_once";
  }
  return "?";
}

std::string_view LengthDistributionName(LengthDistribution d) {
  switch (d) {
    case LengthDistribution::kFixed:
      return "fixed";
    case LengthDistribution::kUniform:
      return "uniform";
    case LengthDistribution::kLognormal:
      return "lognormal";
  }
  return "?";
}

absl::StatusOr<LengthDistribution> ParseLengthDistribution(std::string_view name) {
  for (LengthDistribution d :
       {LengthDistribution::kFixed, LengthDistribution::kUniform, LengthDistribution::kLognormal}) {
    if (name == LengthDistributionName(d)) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown length distribution '",
                                                 absl::string_view(name.data(), name.size()),
                                                 "'; accepted: fixed, uniform, lognormal"));
}

absl::Status ValidateWorkload(const WorkloadSpec& spec) {
  if (spec.arrival != ArrivalKind::kAllAtOnce && !(spec.qps > 0.0 && std::isfinite(spec.qps))) {
    return absl::InvalidArgumentError(
        absl::StrCat("qps: the arrival rate must be > 0 requests/s, got ", spec.qps));
  }
  if (spec.num_requests < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_requests: must be >= 1, got ", spec.num_requests));
  }
  if (absl::Status s = CheckLength(spec.input, "input_len"); !s.ok()) return s;
  if (spec.shared_prefix_len < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared_prefix_len: a prefix is >= 0 tokens (0: none), got ", spec.shared_prefix_len));
  }
  if (spec.prefix_groups < 1 || (spec.prefix_groups > 1 && spec.shared_prefix_len == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefix_groups: must be >= 1, and > 1 only with a shared prefix "
                     "(shared_prefix_len > 0); got ",
                     spec.prefix_groups, " groups of ", spec.shared_prefix_len, " tokens"));
  }
  return CheckLength(spec.output, "output_len");
}

std::vector<Request> GenerateRequests(const WorkloadSpec& spec) {
  // Separate streams for arrivals and lengths, so changing one distribution leaves the other's
  // draws as they were.
  std::mt19937_64 arrivals(spec.seed);
  std::mt19937_64 lengths(spec.seed ^ 0x9e3779b97f4a7c15ULL);
  std::mt19937_64 groups(spec.seed ^ 0xc2b2ae3d27d4eb4fULL);
  std::vector<Request> requests;
  requests.reserve(static_cast<size_t>(spec.num_requests));
  double t = 0;
  for (int64_t i = 0; i < spec.num_requests; ++i) {
    Request r;
    r.id = i;
    if (spec.arrival == ArrivalKind::kPoisson) {
      t += -std::log(Uniform01(arrivals)) / spec.qps;
    } else if (spec.arrival == ArrivalKind::kFixedRate) {
      t = static_cast<double>(i) / spec.qps;
    }
    r.arrival_s = t;
    r.prompt_tokens = DrawLength(spec.input, lengths);
    r.output_tokens = DrawLength(spec.output, lengths);
    if (spec.shared_prefix_len > 0) {
      const double pick = Uniform01(groups) * static_cast<double>(spec.prefix_groups);
      r.prefix_group = std::min(static_cast<int64_t>(pick), spec.prefix_groups - 1);
      r.prefix_tokens = spec.shared_prefix_len;
      r.prompt_tokens += spec.shared_prefix_len;
    }
    requests.push_back(r);
  }
  return requests;
}

absl::StatusOr<std::vector<Request>> LoadRequestTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the trace file"));
  constexpr absl::string_view kColumns[3] = {"arrival_s", "prompt_tokens", "output_tokens"};
  constexpr absl::string_view kPrefixColumns[2] = {"prefix_group", "prefix_tokens"};
  int index[3] = {-1, -1, -1};
  int prefix_index[2] = {-1, -1};
  absl::flat_hash_map<int64_t, std::pair<int64_t, int64_t>> prefix_of_group;  // tokens, line
  bool header_seen = false;
  std::vector<Request> requests;
  std::string line;
  int64_t line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text.front() == '#') continue;
    const std::vector<absl::string_view> cells = absl::StrSplit(text, ',');
    const std::string where = absl::StrCat(path, ":", line_number, ": ");
    if (!header_seen) {
      header_seen = true;
      for (size_t c = 0; c < cells.size(); ++c) {
        for (int k = 0; k < 3; ++k) {
          if (absl::StripAsciiWhitespace(cells[c]) == kColumns[k]) index[k] = static_cast<int>(c);
        }
        for (int k = 0; k < 2; ++k) {
          if (absl::StripAsciiWhitespace(cells[c]) == kPrefixColumns[k]) {
            prefix_index[k] = static_cast<int>(c);
          }
        }
      }
      if ((prefix_index[0] < 0) != (prefix_index[1] < 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, "the header has column ", kPrefixColumns[prefix_index[0] < 0 ? 1 : 0],
            " without ", kPrefixColumns[prefix_index[0] < 0 ? 0 : 1],
            "; shared prefixes need both (the group and its length in tokens)"));
      }
      for (int k = 0; k < 3; ++k) {
        if (index[k] < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "the header has no column ", kColumns[k],
              "; a trace names arrival_s, prompt_tokens and output_tokens in its first row"));
        }
      }
      continue;
    }
    double values[3] = {0, 0, 0};
    for (int k = 0; k < 3; ++k) {
      const size_t c = static_cast<size_t>(index[k]);
      const absl::string_view cell =
          c < cells.size() ? absl::StripAsciiWhitespace(cells[c]) : absl::string_view();
      if (!absl::SimpleAtod(cell, &values[k]) || !std::isfinite(values[k])) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "column ", kColumns[k], ": '", cell, "' is not a number"));
      }
    }
    if (values[0] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "column arrival_s: arrival times are seconds >= 0, got ", values[0]));
    }
    if (!requests.empty() && values[0] < requests.back().arrival_s) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "column arrival_s: ", values[0], " is before the previous row's ",
                       requests.back().arrival_s, "; rows must be in arrival order"));
    }
    for (int k = 1; k < 3; ++k) {
      if (values[k] < 1 || values[k] != std::floor(values[k]) || values[k] > 1e9) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "column ", kColumns[k],
                         ": a token count is a whole number >= 1, got ", values[k]));
      }
    }
    Request request{.id = static_cast<int64_t>(requests.size()),
                    .arrival_s = values[0],
                    .prompt_tokens = static_cast<int64_t>(values[1]),
                    .output_tokens = static_cast<int64_t>(values[2])};
    if (prefix_index[0] >= 0) {
      double prefix[2] = {0, 0};
      for (int k = 0; k < 2; ++k) {
        const size_t c = static_cast<size_t>(prefix_index[k]);
        const absl::string_view cell =
            c < cells.size() ? absl::StripAsciiWhitespace(cells[c]) : absl::string_view();
        if (!absl::SimpleAtod(cell, &prefix[k]) || prefix[k] != std::floor(prefix[k]) ||
            prefix[k] < -1 || prefix[k] > 1e12) {
          return absl::InvalidArgumentError(absl::StrCat(where, "column ", kPrefixColumns[k], ": '",
                                                         cell,
                                                         "' is not a whole number (-1 or more)"));
        }
      }
      const int64_t group = static_cast<int64_t>(prefix[0]);
      const int64_t tokens = group < 0 ? 0 : static_cast<int64_t>(prefix[1]);
      if (tokens < 0 || tokens > request.prompt_tokens) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "column prefix_tokens: a shared prefix is 0 to the prompt's ",
                         request.prompt_tokens, " tokens, got ", tokens));
      }
      if (group >= 0 && tokens > 0) {
        const auto [it, added] = prefix_of_group.try_emplace(group, tokens, line_number);
        if (!added && it->second.first != tokens) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, "column prefix_tokens: prefix_group ", group, " has ", it->second.first,
              " shared tokens on line ", it->second.second, ", ", tokens, " here"));
        }
        request.prefix_group = group;
        request.prefix_tokens = tokens;
      }
    }
    requests.push_back(request);
  }
  if (requests.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the trace has no requests (a header row, then one row each)"));
  }
  return requests;
}

std::vector<std::vector<Request>> DealRoundRobin(std::span<const Request> requests, int64_t parts) {
  std::vector<std::vector<Request>> shares(static_cast<size_t>(std::max<int64_t>(parts, 1)));
  for (size_t i = 0; i < requests.size(); ++i) shares[i % shares.size()].push_back(requests[i]);
  return shares;
}

}  // namespace projector
