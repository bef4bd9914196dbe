#include "studies/validate.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/json_reader.h"
#include "core/statistics.h"
#include "core/status_macros.h"
#include "hw_profiles/hw_overlay.h"
#include "projection/projection.h"
#include "scenario/scenario.h"
#include "scenario/training_defaults.h"
#include "studies/convnet_training.h"
#include "studies/sensitivity.h"

namespace projector {
namespace {

using nlohmann::json;

// Short label of a source for grouping: a repository path's first token
// ("mosaicml/llm-foundry"), else the text before the first comma, colon or parenthesis
// ("Narayanan et al.", "ROCm blog 'Primus Projection"), at most 28 characters (the width of the
// summary tables' group column).
std::string SourceLabel(const std::string& source) {
  std::string first = source.substr(0, source.find(' '));
  if (first.find('/') != std::string::npos) return first;
  std::string head = source.substr(0, source.find_first_of(",:("));
  while (!head.empty() && head.back() == ' ') head.pop_back();
  if (head.size() > 28) head = head.substr(0, 28);
  return head;
}

// The two largest terms of the step breakdown with their share of the step.
// The two largest step-breakdown terms with their share of the step: "compute 71%, ep 29%"
// (a term's short name without "_comm", underscores as spaces).
std::string DominantTerms(const Projection& p) {
  std::vector<std::pair<double, std::string>> terms;
  for (const BreakdownTerm& t : kBreakdownTerms) {
    std::string name(t.short_name);
    if (absl::EndsWith(name, "_comm")) name.resize(name.size() - 5);
    std::replace(name.begin(), name.end(), '_', ' ');
    terms.emplace_back((p.breakdown.*t.member).value(), std::move(name));
  }
  std::stable_sort(terms.begin(), terms.end(),
                   [](const auto& a, const auto& c) { return a.first > c.first; });
  double total = p.step_time.value();
  std::string out;
  for (int i = 0; i < 2; ++i) {
    if (terms[i].first <= 0) break;
    if (!out.empty()) out += ", ";
    absl::StrAppendFormat(&out, "%s %.0f%%", terms[i].second, 100.0 * terms[i].first / total);
  }
  return out;
}

struct ParsedCase {
  ValidationCase result;
  std::optional<Scenario> scenario;
  std::optional<ConvNetCase> convnet;  // an image model's case (projected without a Scenario)
};

// Cases with equal keys share one BackendSet: same GPU, node size, clock and attention kernel.
std::string HardwareKey(const Scenario& s) {
  return absl::StrCat(s.hw.name, "/", s.hw.gpus_per_node, "/", s.hw.gpu.sustained_clock.value(),
                      "/", s.attention_kernel_used);
}

// Cases of one scaling series share everything but the GPU count (and so DP).
std::string SiblingKey(const ParsedCase& pc) {
  const Scenario& s = *pc.scenario;
  const ParallelConfig& p = s.parallel;
  return absl::StrCat(pc.result.source, "|", s.model.name, "|", s.hw.name, "|",
                      std::string(DTypeName(s.training.precision)), "|", s.training.seq_len, "|",
                      s.training.micro_batch, "|", std::string(RecomputeName(s.training.recompute)),
                      "|tp", p.tp, "pp", p.pp, "vpp", p.vpp, "cp", p.cp, "ep", p.ep,
                      p.sequence_parallel ? "sp" : "", p.fsdp ? "fsdp" : "");
}

// For every series of 3 or more projected cases: deviation of each case's measured/projected
// ratio from the series median ratio. Dividing by the projection removes the scaling the model
// predicts (e.g. more exposed communication at more GPUs), so what is left is how much this
// measurement disagrees with its siblings.
void CheckSiblings(std::vector<ParsedCase>& parsed) {
  std::map<std::string, std::vector<ValidationCase*>> series;
  for (ParsedCase& pc : parsed) {
    if (!pc.scenario || !pc.result.projected_tokens_per_s_per_gpu) continue;
    if (*pc.result.projected_tokens_per_s_per_gpu <= 0) continue;
    series[SiblingKey(pc)].push_back(&pc.result);
  }
  for (auto& [key, members] : series) {
    if (members.size() < 3) continue;
    std::vector<double> ratios;
    ratios.reserve(members.size());
    for (const ValidationCase* c : members) {
      ratios.push_back(c->measured_tokens_per_s_per_gpu / *c->projected_tokens_per_s_per_gpu);
    }
    const double median = Median(ratios);
    for (size_t i = 0; i < members.size(); ++i) {
      ValidationCase& c = *members[i];
      c.siblings = static_cast<int64_t>(members.size());
      c.sibling_deviation_pct = 100.0 * (ratios[i] / median - 1.0);
      c.inconsistent = std::fabs(*c.sibling_deviation_pct) > kSiblingDeviationFlagPct;
    }
  }
}

// Cases that do the same work per micro-batch and per step, in tokens, on the same hardware and
// layout; only the sequence length (so the micro-batch in sequences) differs.
std::string EqualTokensKey(const ParsedCase& pc) {
  const Scenario& s = *pc.scenario;
  const ParallelConfig& p = s.parallel;
  const TrainingConfig& t = s.training;
  return absl::StrCat(pc.result.source, "|", s.model.name, "|", s.hw.name, "|", s.num_gpus, "|",
                      std::string(DTypeName(t.precision)), "|",
                      std::string(RecomputeName(t.recompute)), "|tp", p.tp, "pp", p.pp, "vpp",
                      p.vpp, "cp", p.cp, "ep", p.ep, "dp", p.dp, p.sequence_parallel ? "sp" : "",
                      p.fsdp ? "fsdp" : "", "|", t.micro_batch * t.seq_len, "|",
                      t.global_batch * t.seq_len);
}

// Flags every case measured more than kSequenceMonotonicityFlagPct slower than a longer-sequence
// case of the same work (model-free: attention work per token grows with the sequence, nothing
// else changes). Records the sibling it falls furthest behind.
void CheckSequenceMonotonicity(std::vector<ParsedCase>& parsed) {
  std::map<std::string, std::vector<std::pair<int64_t, ValidationCase*>>> groups;
  for (ParsedCase& pc : parsed) {
    if (!pc.scenario || pc.result.measured_tokens_per_s_per_gpu <= 0) continue;
    groups[EqualTokensKey(pc)].emplace_back(pc.scenario->training.seq_len, &pc.result);
  }
  for (auto& [key, members] : groups) {
    for (auto& [seq, c] : members) {
      for (const auto& [other_seq, other] : members) {
        if (other_seq <= seq) continue;
        double deficit =
            100.0 * (c->measured_tokens_per_s_per_gpu / other->measured_tokens_per_s_per_gpu - 1.0);
        if (deficit >= -kSequenceMonotonicityFlagPct) continue;
        if (c->longer_sequence_deficit_pct && *c->longer_sequence_deficit_pct <= deficit) continue;
        c->longer_sequence_deficit_pct = deficit;
        c->faster_longer_sequence_id = other->id;
        c->faster_longer_sequence_seq_len = other_seq;
        c->inconsistent = true;
      }
    }
  }
}

// Cases the projection cannot tell apart: a scaling series' key, the GPU count and global batch,
// and the projected throughput itself (equal to 9 digits), so that a switch only one of them
// states (a `training` block) keeps them apart.
std::string TwinKey(const ParsedCase& pc) {
  const Scenario& s = *pc.scenario;
  return absl::StrFormat("%s|%d|%d|%.9g", SiblingKey(pc), s.num_gpus, s.training.global_batch,
                         *pc.result.projected_tokens_per_s_per_gpu);
}

// Flags every group of twins whose measurements lie more than kTwinSpreadFlagPct apart. Each
// member records the twin measured furthest from it and the group's error floor: one projection
// P serves them all, and max(P / min − 1, 1 − P / max) is least, (max − min) / (max + min), at
// P = 2 · min · max / (min + max).
int64_t CheckTwins(std::vector<ParsedCase>& parsed) {
  std::map<std::string, std::vector<ValidationCase*>> groups;
  for (ParsedCase& pc : parsed) {
    if (!pc.scenario || !pc.result.projected_tokens_per_s_per_gpu) continue;
    if (pc.result.measured_tokens_per_s_per_gpu <= 0) continue;
    groups[TwinKey(pc)].push_back(&pc.result);
  }
  int64_t flagged_groups = 0;
  for (auto& [key, members] : groups) {
    if (members.size() < 2) continue;
    auto by_measured = [](const ValidationCase* a, const ValidationCase* b) {
      return a->measured_tokens_per_s_per_gpu < b->measured_tokens_per_s_per_gpu;
    };
    const ValidationCase* slowest = *std::min_element(members.begin(), members.end(), by_measured);
    const ValidationCase* fastest = *std::max_element(members.begin(), members.end(), by_measured);
    const double lo = slowest->measured_tokens_per_s_per_gpu;
    const double hi = fastest->measured_tokens_per_s_per_gpu;
    if (100.0 * (hi / lo - 1.0) <= kTwinSpreadFlagPct) continue;
    ++flagged_groups;
    const double floor_pct = 100.0 * (hi - lo) / (hi + lo);
    for (ValidationCase* c : members) {
      // The furthest twin in ratio: the fastest for a case below the geometric middle.
      const double m = c->measured_tokens_per_s_per_gpu;
      const ValidationCase* far = (m * m < lo * hi) ? fastest : slowest;
      c->twin_id = far->id;
      c->twin_ratio = m / far->measured_tokens_per_s_per_gpu;
      c->twin_error_floor_pct = floor_pct;
      c->inconsistent = true;
    }
  }
  return flagged_groups;
}

// The what-if kernel on one case: resolved against the case's GPU, then the layout checked
// again (unfused has no context parallelism).
absl::Status OverrideAttentionKernel(const std::string& kernel, const std::string& origin,
                                     Scenario& scenario) {
  PROJECTOR_RETURN_IF_ERROR(SetAttentionKernel(kernel, scenario.training));
  PROJECTOR_RETURN_IF_ERROR(ResolveKernels(scenario, origin));
  return ValidateScenario(scenario, origin);
}

}  // namespace

ErrorSummary Summarise(const std::vector<const ValidationCase*>& cases, std::string group) {
  ErrorSummary s;
  s.group = std::move(group);
  s.count = static_cast<int64_t>(cases.size());
  std::vector<double> abs_errors;
  double sum = 0;
  int64_t w10 = 0, w20 = 0, w30 = 0;
  for (const ValidationCase* c : cases) {
    if (!c->error_pct) continue;
    double e = *c->error_pct;
    abs_errors.push_back(std::fabs(e));
    sum += e;
    w10 += std::fabs(e) <= 10;
    w20 += std::fabs(e) <= 20;
    w30 += std::fabs(e) <= 30;
  }
  s.projected = static_cast<int64_t>(abs_errors.size());
  if (s.projected == 0) return s;
  double n = static_cast<double>(s.projected);
  s.median_abs_error_pct = Median(abs_errors);
  s.mean_error_pct = sum / n;
  s.within_10_pct = 100.0 * static_cast<double>(w10) / n;
  s.within_20_pct = 100.0 * static_cast<double>(w20) / n;
  s.within_30_pct = 100.0 * static_cast<double>(w30) / n;
  return s;
}

absl::StatusOr<ValidationReport> ValidateCasesFile(const std::string& path, int threads) {
  ValidationOptions options;
  options.threads = threads;
  return ValidateCasesFile(path, options);
}

namespace {

// Matches the projected cases that share `key` and differ in `variant` (a second case of one
// variant makes that variant ambiguous for the key), and summarises the ratio b/a of every
// (source, context, variant a, variant b) group, oriented from the slower variant to the faster.
template <typename KeyFn, typename VariantFn, typename ContextFn>
std::vector<Speedup> CompareAcross(const std::vector<ValidationCase>& cases, KeyFn key,
                                   VariantFn variant, ContextFn context) {
  std::map<std::string, std::map<std::string, const ValidationCase*>> keyed;
  for (const ValidationCase& c : cases) {
    if (!c.projected_tokens_per_s_per_gpu || c.measured_tokens_per_s_per_gpu <= 0) continue;
    auto [it, inserted] = keyed[key(c)].emplace(variant(c), &c);
    if (!inserted) it->second = nullptr;
  }
  struct Ratios {
    std::vector<double> measured, projected;
  };
  std::map<std::tuple<std::string, std::string, std::string, std::string>, Ratios> groups;
  for (const auto& [k, by_variant] : keyed) {
    for (auto a = by_variant.begin(); a != by_variant.end(); ++a) {
      for (auto b = std::next(a); b != by_variant.end(); ++b) {
        if (a->second == nullptr || b->second == nullptr) continue;
        const ValidationCase& ca = *a->second;
        const ValidationCase& cb = *b->second;
        Ratios& r = groups[{ca.source, context(ca), a->first, b->first}];
        r.measured.push_back(cb.measured_tokens_per_s_per_gpu / ca.measured_tokens_per_s_per_gpu);
        r.projected.push_back(*cb.projected_tokens_per_s_per_gpu /
                              *ca.projected_tokens_per_s_per_gpu);
      }
    }
  }
  std::vector<Speedup> out;
  for (auto& [k, r] : groups) {
    Speedup g{.source = std::get<0>(k),
              .context = std::get<1>(k),
              .a = std::get<2>(k),
              .b = std::get<3>(k),
              .pairs = static_cast<int64_t>(r.measured.size())};
    if (Median(r.measured) < 1.0) {
      // Orient from the slower variant to the faster: invert every ratio.
      std::swap(g.a, g.b);
      for (double& m : r.measured) m = 1.0 / m;
      for (double& pr : r.projected) pr = 1.0 / pr;
    }
    std::vector<double> abs_error;
    double sum = 0;
    for (size_t i = 0; i < r.measured.size(); ++i) {
      const double e = 100.0 * (r.projected[i] / r.measured[i] - 1.0);
      abs_error.push_back(std::fabs(e));
      sum += e;
    }
    g.measured_ratio = Median(r.measured);
    g.projected_ratio = Median(r.projected);
    g.median_abs_error_pct = Median(abs_error);
    g.mean_error_pct = sum / static_cast<double>(r.measured.size());
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace

std::vector<Speedup> CompareGpus(const std::vector<ValidationCase>& cases) {
  return CompareAcross(
      cases,
      [](const ValidationCase& c) {
        return absl::StrCat(c.source, "|", c.model, "|", c.seq_len, "|", c.num_gpus, "|",
                            c.precision);
      },
      [](const ValidationCase& c) { return c.gpu; },
      [](const ValidationCase&) { return std::string(); });
}

std::vector<Speedup> ComparePrecisions(const std::vector<ValidationCase>& cases) {
  return CompareAcross(
      cases,
      [](const ValidationCase& c) {
        return absl::StrCat(c.source, "|", c.model, "|", c.seq_len, "|", c.num_gpus, "|", c.gpu);
      },
      [](const ValidationCase& c) { return c.precision; },
      [](const ValidationCase& c) { return c.gpu; });
}

std::pair<int, std::string> SequenceBand(int64_t seq_len) {
  if (seq_len <= 1024) return {0, "seq <= 1024"};
  if (seq_len <= 4096) return {1, "seq 1025-4096"};
  if (seq_len <= 16384) return {2, "seq 4097-16384"};
  return {3, "seq > 16384"};
}

std::pair<int, std::string> ScaleBand(int64_t num_gpus, int64_t gpus_per_node) {
  const int64_t per_node = std::max<int64_t>(gpus_per_node, 1);
  const int64_t nodes = (num_gpus + per_node - 1) / per_node;
  if (nodes <= 1) return {0, "1 node"};
  if (nodes <= 16) return {1, "2-16 nodes"};
  return {2, "17+ nodes"};
}

namespace {

// The case's own fields the report shows, whether or not it can be projected.
void ReadCaseFields(const json& value, int64_t line_no, ValidationCase& c) {
  c.line = line_no;
  c.id = value.value("id", "");
  c.gpu = value.value("gpu", "");
  c.source = SourceLabel(value.value("source", ""));
  c.num_gpus = value.value("num_gpus", int64_t{0});
  c.gpus_per_node = value.value("gpus_per_node", int64_t{0});
  c.precision = value.value("precision", "");
  // null in the classic schema's image cases
  c.seq_len = value.contains("seq_len") && value["seq_len"].is_number_integer()
                  ? value["seq_len"].get<int64_t>()
                  : 0;
  if (value.contains("model") && value["model"].is_object()) {
    c.model = value["model"].value("name", "");
    const bool moe = value["model"].contains("moe") && value["model"]["moe"].is_object();
    c.model_family = moe ? "moe" : "dense";
  } else if (value.contains("model") && value["model"].is_string()) {  // the classic schema
    c.model = value["model"].get<std::string>();
    c.model_family = "dense";
  }
  if (value.contains("per_gpu_batch")) {
    c.measured_tokens_per_s_per_gpu = ClassicCaseSamplesPerSecondPerGpu(value, "").value_or(0.0);
  } else if (value.contains("measured") && value["measured"].is_object()) {
    c.measured_tokens_per_s_per_gpu = value["measured"].value("tokens_per_s_per_gpu", 0.0);
  }
}

// Whether the --only, --gpu and source filters keep the case.
bool Selected(const ValidationOptions& options, const json& value, const ValidationCase& c) {
  if (!options.only.empty() && c.id.find(options.only) == std::string::npos &&
      value.value("source", "").find(options.only) == std::string::npos) {
    return false;
  }
  if (!options.gpu.empty() && c.gpu != options.gpu) return false;
  if (!options.model_family.empty() && c.model_family != options.model_family) return false;
  return options.source.empty() || c.source == options.source;
}

// The hardware overlays and the what-ifs of `options` on a case's scenario; a what-if the case
// cannot take (a kernel its GPU lacks) turns the scenario into that error. A malformed overlay
// fails the run.
absl::Status ApplyWhatIfs(const ValidationOptions& options, const std::string& origin,
                          absl::StatusOr<Scenario>& scenario) {
  if (!scenario.ok()) return absl::OkStatus();
  for (const ValidationOptions::Overlay& o : options.hw_overlays) {
    if (o.base != scenario->hw.name) continue;
    PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlay(o.value, o.origin, scenario->hw));
  }
  TrainingConfig& t = scenario->training;
  if (options.tp_comm_overlap) t.tp_comm_overlap = *options.tp_comm_overlap;
  if (options.moe_a2a_overlap) t.moe_a2a_overlap = *options.moe_a2a_overlap;
  if (options.moe_shared_expert_overlap) {
    t.moe_shared_expert_overlap = *options.moe_shared_expert_overlap;
  }
  if (options.grad_reduce_dtype) t.grad_reduce_dtype = *options.grad_reduce_dtype;
  if (options.overlap_grad_reduce) t.overlap_grad_reduce = *options.overlap_grad_reduce;
  if (options.distributed_optimizer && !scenario->parallel.fsdp && scenario->parallel.dp > 1) {
    scenario->parallel.distributed_optimizer = *options.distributed_optimizer;
  }
  if (options.training.Any()) {
    options.training.ApplyTo(t);
    // The case schema never sets the distributed optimizer: its default follows the stack
    // (a --distributed-optimizer what-if, applied above, wins).
    if (options.training.stack) {
      DefaultDistributedOptimizer(options.distributed_optimizer.has_value(), *scenario);
    }
    if (absl::Status k = ResolveKernels(*scenario, origin); !k.ok()) {
      scenario = k;
      return absl::OkStatus();
    }
  }
  if (options.attention_kernel) {
    absl::Status valid = OverrideAttentionKernel(*options.attention_kernel, origin, *scenario);
    if (!valid.ok()) scenario = valid;
  }
  return absl::OkStatus();
}

// One case of the file: nullopt when the filters drop it.
absl::StatusOr<std::optional<ParsedCase>> ParseCaseLine(const json& value,
                                                        const std::string& origin, int64_t line_no,
                                                        const ValidationOptions& options) {
  if (IsImageCase(value)) {
    // The what-ifs are a transformer projection's switches; an image case takes none of them.
    PROJECTOR_ASSIGN_OR_RETURN(ConvNetCase convnet, ConvNetCaseFromJson(value, origin));
    ParsedCase pc;
    ReadCaseFields(value, line_no, pc.result);
    if (!Selected(options, value, pc.result)) return std::nullopt;
    pc.result.layout = absl::StrCat("DP", convnet.num_gpus);
    pc.convnet = std::move(convnet);
    return pc;
  }
  absl::StatusOr<Scenario> scenario = ScenarioFromCase(value, origin);
  // Schema errors (types, missing or unknown fields) fail the run; a valid case whose layout
  // or feature the tool cannot project is listed instead.
  if (!scenario.ok() && scenario.status().code() == absl::StatusCode::kInvalidArgument &&
      scenario.status().message().find("unknown GPU") == std::string_view::npos &&
      scenario.status().message().find("unknown model") == std::string_view::npos) {
    return scenario.status();
  }
  ParsedCase pc;
  ValidationCase& c = pc.result;
  ReadCaseFields(value, line_no, c);
  if (!Selected(options, value, c)) return std::nullopt;
  PROJECTOR_RETURN_IF_ERROR(ApplyWhatIfs(options, origin, scenario));
  if (scenario.ok()) {
    c.layout = LayoutSummary(scenario->parallel);
    pc.scenario = *std::move(scenario);
  } else {
    c.status = "unsupported";
    c.reason = std::string(scenario.status().message());
  }
  return pc;
}

// Every selected case of the file, in file order. A duplicate id, a line that is not JSON or a
// file without cases fails the run.
absl::StatusOr<std::vector<ParsedCase>> ParseCasesFile(const std::string& path,
                                                       const ValidationOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": is a directory; give the path of a JSONL case file"));
  }
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open file"));
  std::vector<ParsedCase> parsed;
  std::string line;
  int64_t line_no = 0;
  int64_t case_lines = 0;
  std::map<std::string, int64_t> id_lines;  // id -> the line that first used it
  while (std::getline(in, line)) {
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    ++case_lines;
    const std::string origin = absl::StrCat(path, ":", line_no);
    PROJECTOR_ASSIGN_OR_RETURN(json value, ParseJsonText(line, origin));
    if (value.is_object() && value.contains("id") && value["id"].is_string()) {
      const auto [it, added] = id_lines.emplace(value["id"].get<std::string>(), line_no);
      if (!added) {
        return absl::InvalidArgumentError(absl::StrCat(origin, ": /id: '", it->first,
                                                       "' is already the id of line ", it->second,
                                                       "; each case needs a unique id"));
      }
    }
    PROJECTOR_ASSIGN_OR_RETURN(std::optional<ParsedCase> pc,
                               ParseCaseLine(value, origin, line_no, options));
    if (pc) parsed.push_back(*std::move(pc));
  }
  if (case_lines == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": no cases (the file has no non-blank line); one JSON case per line"));
  }
  return parsed;
}

// An image model's case through the convolutional network's data-parallel training step.
void ProjectConvNetCase(const ConvNetCase& cc, const BackendSet& set, ValidationCase& c) {
  absl::StatusOr<ConvNetTraining> t = ProjectConvNetTraining(
      cc.spec, cc.hw, RefsOf(set), cc.images_per_gpu, cc.num_gpus, cc.precision);
  if (!t.ok()) {
    c.status = "unsupported";
    c.reason = std::string(t.status().message());
    return;
  }
  c.status = "ok";
  c.unit = "images";
  c.projected_tokens_per_s_per_gpu = t->images_per_s_per_gpu;
  c.error_pct = 100.0 * (t->images_per_s_per_gpu - c.measured_tokens_per_s_per_gpu) /
                c.measured_tokens_per_s_per_gpu;
  const double step = t->step.value();
  c.dominant_terms = absl::StrFormat("compute %.0f%%, dp %.0f%%",
                                     100.0 * (t->forward + t->backward).value() / step,
                                     100.0 * t->exposed_allreduce.value() / step);
  c.stack = "convnet";
  c.attention_kernel = "-";
  c.loss_kernel = "-";
  c.fits_in_memory = t->activations < cc.hw.gpu.hbm_capacity;
}

// The range of a case's projection and its run-setting re-projections (RunSettingSensitivity);
// unset when the re-projections fail.
void RecordSettingsRange(const Scenario& s, double tgs, ValidationCase& c) {
  absl::StatusOr<std::vector<SettingChange>> changes = RunSettingSensitivity(s);
  if (!changes.ok()) return;
  const SettingsRange range = RangeOf(*changes, tgs);
  c.settings_low_tokens_per_s_per_gpu = range.low;
  c.settings_high_tokens_per_s_per_gpu = range.high;
}

// Projects every projectable case on `threads` workers (all cores when <= 0), one backend set
// per distinct hardware (backends are immutable and shared across threads).
absl::Status ProjectCases(std::vector<ParsedCase>& parsed, int threads, bool sensitivity,
                          const std::function<void(int64_t, int64_t)>& on_progress) {
  std::map<std::string, BackendSet> backends;
  for (ParsedCase& pc : parsed) {
    if (!pc.scenario) continue;
    std::string key = HardwareKey(*pc.scenario);
    if (backends.count(key)) continue;
    auto set = MakeBackendSet(pc.scenario->backends, pc.scenario->hw);
    if (!set.ok()) return set.status();
    backends.emplace(key, *std::move(set));
  }
  for (ParsedCase& pc : parsed) {
    if (!pc.convnet || backends.count(pc.convnet->hw.name)) continue;
    auto set = MakeBackendSet(BackendSelection{}, pc.convnet->hw);
    if (!set.ok()) return set.status();
    backends.emplace(pc.convnet->hw.name, *std::move(set));
  }
  std::atomic<size_t> next{0};
  std::mutex progress_mutex;
  int64_t done = 0;
  const auto total = static_cast<int64_t>(parsed.size());
  auto project_case = [&](ParsedCase& pc) {
    if (pc.convnet) {
      ProjectConvNetCase(*pc.convnet, backends.at(pc.convnet->hw.name), pc.result);
      return;
    }
    if (!pc.scenario) return;
    const BackendSet& set = backends.at(HardwareKey(*pc.scenario));
    auto projection = Project(*pc.scenario, RefsOf(set));
    ValidationCase& c = pc.result;
    if (!projection.ok()) {
      c.status = "unsupported";
      c.reason = std::string(projection.status().message());
      return;
    }
    const Scenario& s = *pc.scenario;
    c.status = "ok";
    c.projected_tokens_per_s_per_gpu = projection->tokens_per_s_per_gpu;
    c.error_pct = 100.0 * (projection->tokens_per_s_per_gpu - c.measured_tokens_per_s_per_gpu) /
                  c.measured_tokens_per_s_per_gpu;
    c.dominant_terms = DominantTerms(*projection);
    c.attention_kernel = s.attention_kernel_used;
    c.loss_kernel = std::string(LossKernelName(ResolvedLossKernel(s.training, s.parallel)));
    c.train_metric_passes = ResolvedTrainMetricPasses(s.training, s.parallel);
    c.stack = std::string(TrainingStackName(ResolvedStack(s.training, s.parallel)));
    c.fits_in_memory = projection->fits_in_memory;
    if (sensitivity) RecordSettingsRange(s, projection->tokens_per_s_per_gpu, c);
  };
  auto worker = [&]() {
    for (size_t i = next++; i < parsed.size(); i = next++) {
      project_case(parsed[i]);
      if (!on_progress) continue;
      const std::lock_guard<std::mutex> lock(progress_mutex);
      on_progress(++done, total);
    }
  };
  int n =
      threads > 0 ? threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 1; t < n; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();
  return absl::OkStatus();
}

// The summaries overall and by GPU, source, model family, precision, sequence band and scale
// band, and the
// speedup checks across GPUs and precisions.
void Summarise(ValidationReport& report) {
  std::vector<const ValidationCase*> all;
  std::map<std::string, std::vector<const ValidationCase*>> by_gpu, by_source, by_family,
      by_precision;
  // Ordered bands: (rank, label).
  std::map<std::pair<int, std::string>, std::vector<const ValidationCase*>> by_seq, by_scale;
  for (const ValidationCase& c : report.cases) {
    report.inconsistent_cases += c.inconsistent;
    if (c.settings_low_tokens_per_s_per_gpu) {
      ++report.with_settings_range;
      report.within_settings_range += MeasuredWithinSettingsRange(c);
    }
    if (c.twin_error_floor_pct) {
      report.max_twin_error_floor_pct =
          std::max(report.max_twin_error_floor_pct, *c.twin_error_floor_pct);
    }
    report.measured_but_not_fitting += c.projected_tokens_per_s_per_gpu && !c.fits_in_memory;
    all.push_back(&c);
    by_gpu[c.gpu].push_back(&c);
    by_source[c.source].push_back(&c);
    by_family[c.model_family].push_back(&c);
    by_precision[c.precision].push_back(&c);
    by_seq[SequenceBand(c.seq_len)].push_back(&c);
    by_scale[ScaleBand(c.num_gpus, c.gpus_per_node)].push_back(&c);
  }
  report.summary = Summarise(all, "all");
  for (auto& [gpu, cases] : by_gpu) report.by_gpu.push_back(Summarise(cases, gpu));
  for (auto& [source, cases] : by_source) report.by_source.push_back(Summarise(cases, source));
  for (auto& [family, cases] : by_family) {
    report.by_model_family.push_back(Summarise(cases, family));
  }
  for (auto& [p, cases] : by_precision) report.by_precision.push_back(Summarise(cases, p));
  for (auto& [band, cases] : by_seq) report.by_seq_len.push_back(Summarise(cases, band.second));
  for (auto& [band, cases] : by_scale) report.by_scale.push_back(Summarise(cases, band.second));
  report.gpu_speedups = CompareGpus(report.cases);
  report.precision_speedups = ComparePrecisions(report.cases);
}

}  // namespace

bool MeasuredWithinSettingsRange(const ValidationCase& c) {
  return c.settings_low_tokens_per_s_per_gpu && c.settings_high_tokens_per_s_per_gpu &&
         *c.settings_low_tokens_per_s_per_gpu <= c.measured_tokens_per_s_per_gpu &&
         c.measured_tokens_per_s_per_gpu <= *c.settings_high_tokens_per_s_per_gpu;
}

absl::StatusOr<ValidationReport> ValidateCasesFile(const std::string& path,
                                                   const ValidationOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PROJECTOR_ASSIGN_OR_RETURN(std::vector<ParsedCase> parsed, ParseCasesFile(path, options));
  PROJECTOR_RETURN_IF_ERROR(ProjectCases(parsed, options.threads, options.sensitivity, options.on_progress));
  CheckSiblings(parsed);
  CheckSequenceMonotonicity(parsed);
  ValidationReport report;
  report.twin_groups = CheckTwins(parsed);
  report.file = path;
  for (ParsedCase& pc : parsed) report.cases.push_back(std::move(pc.result));
  Summarise(report);
  report.elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

absl::StatusOr<ValidationOptions::Overlay> LoadValidationOverlay(const std::string& path) {
  PROJECTOR_ASSIGN_OR_RETURN(json value, ReadJsonFile(path));
  PROJECTOR_ASSIGN_OR_RETURN(JsonObject root, JsonObject::Make(value, path, ""));
  PROJECTOR_ASSIGN_OR_RETURN(std::string base, root.String("base"));
  absl::StatusOr<HardwareProfile> hw = ResolveHardwareProfile(base);
  if (!hw.ok()) return root.FieldError("base", std::string(hw.status().message()));
  PROJECTOR_RETURN_IF_ERROR(ApplyHwOverlay(value, path, *hw));
  return ValidationOptions::Overlay{.value = std::move(value), .origin = path, .base = base};
}

absl::Status CheckAccuracyFloor(const ValidationReport& report, const AccuracyFloor& floor) {
  if (!floor.max_median_abs_error_pct && !floor.min_within_20_pct && !floor.max_not_fitting) {
    return absl::OkStatus();
  }
  if (report.summary.projected == 0) {
    return absl::OutOfRangeError(
        "accuracy floor not met: no case was projected (none matched the filters, or see 'Cases "
        "not projected')");
  }
  if (floor.max_median_abs_error_pct &&
      report.summary.median_abs_error_pct > *floor.max_median_abs_error_pct) {
    return absl::OutOfRangeError(
        absl::StrFormat("accuracy floor not met: median |error| %.1f%% > %.1f%%",
                        report.summary.median_abs_error_pct, *floor.max_median_abs_error_pct));
  }
  if (floor.min_within_20_pct && report.summary.within_20_pct < *floor.min_within_20_pct) {
    return absl::OutOfRangeError(
        absl::StrFormat("accuracy floor not met: %.1f%% of cases within 20%% < %.1f%%",
                        report.summary.within_20_pct, *floor.min_within_20_pct));
  }
  if (floor.max_not_fitting &&
      static_cast<double>(report.measured_but_not_fitting) > *floor.max_not_fitting) {
    return absl::OutOfRangeError(absl::StrFormat(
        "accuracy floor not met: %d measured cases projected not to fit in HBM > %g",
        report.measured_but_not_fitting, *floor.max_not_fitting));
  }
  return absl::OkStatus();
}

}  // namespace projector
