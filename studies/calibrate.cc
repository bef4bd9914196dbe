#include "studies/calibrate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "Eigen/Dense"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/json_reader.h"
#include "core/status_macros.h"
#include "hw_profiles/hw_overlay.h"
#include "studies/profile_mode.h"

// GCC 12 reports a false -Warray-bounds inside std::map when nlohmann::json objects are built
// (GCC bug 107138); the JSON code here is plain nlohmann::json use.
#pragma GCC diagnostic ignored "-Warray-bounds"

namespace projector {
namespace {

using nlohmann::json;

constexpr double kMinConstant = 0.01;
constexpr double kMaxConstant = 1.0;

// The constants an overlay carries are the ones fitted (hw_profiles/hw_overlay.h).
const std::span<const OverlayConstant> kConstants = OverlayConstants();
const int kNumConstants = static_cast<int>(kConstants.size());
constexpr int kMaxIterations = 60;

// Simulated time of every profile op (seconds) on `hw`.
absl::StatusOr<Eigen::VectorXd> Simulate(const Profile& profile, const HardwareProfile& hw,
                                         const BackendSelection& selection) {
  PROJECTOR_ASSIGN_OR_RETURN(BackendSet set, MakeBackendSet(selection, hw));
  Eigen::VectorXd t(static_cast<Eigen::Index>(profile.ops.size()));
  for (size_t i = 0; i < profile.ops.size(); ++i) {
    PROJECTOR_ASSIGN_OR_RETURN(Seconds time, SimulateProfiledOp(set, profile.ops[i]));
    t[static_cast<Eigen::Index>(i)] = std::max(time.value(), 1e-15);
  }
  return t;
}

HardwareProfile WithConstants(const HardwareProfile& base, const std::vector<int>& active,
                              const Eigen::VectorXd& p) {
  HardwareProfile hw = base;
  for (size_t j = 0; j < active.size(); ++j) {
    kConstants[active[j]].ref(hw) = p[static_cast<Eigen::Index>(j)];
  }
  return hw;
}

double RmsPct(const Eigen::VectorXd& sim, const Eigen::VectorXd& measured) {
  if (sim.size() == 0) return 0;
  const Eigen::ArrayXd rel = sim.array() / measured.array() - 1.0;
  return std::sqrt(rel.square().mean()) * 100.0;
}

}  // namespace

absl::StatusOr<CalibrationResult> Calibrate(const Profile& profile, const HardwareProfile& hw,
                                            const BackendSelection& selection) {
  if (profile.ops.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(profile.origin,
                     ": /ops: calibration needs measured ops; accepted: a profile with a "
                     "non-empty ops list (module times alone do not identify the constants)"));
  }
  const auto n = static_cast<Eigen::Index>(profile.ops.size());
  Eigen::VectorXd measured(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    measured[i] = profile.ops[static_cast<size_t>(i)].time.median.value();
  }
  const Eigen::ArrayXd log_measured = measured.array().log();

  CalibrationResult result;
  result.gpu = hw.name;
  result.profile_file = profile.origin;
  PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd before, Simulate(profile, hw, selection));

  // Which constants the ops depend on: a finite-difference probe of each one.
  std::vector<int> active;
  HardwareProfile probe_base = hw;
  for (int c = 0; c < kNumConstants; ++c) {
    CalibratedConstant constant{
        .name = kConstants[c].name,
        .json_pointer = absl::StrCat("/", kConstants[c].section, "/", kConstants[c].name),
        .initial = kConstants[c].ref(probe_base),
        .fitted = kConstants[c].ref(probe_base)};
    HardwareProfile probe = hw;
    double& v = kConstants[c].ref(probe);
    v = v > 0.5 ? v * 0.9 : v * 1.1;
    PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd t, Simulate(profile, probe, selection));
    const Eigen::ArrayXd rel = ((t.array() - before.array()) / before.array()).abs();
    constant.ops = (rel > 1e-9).count();
    constant.identifiable = constant.ops > 0;
    if (constant.identifiable) active.push_back(c);
    result.constants.push_back(std::move(constant));
  }

  // Levenberg–Marquardt on r(p) = log(sim(p)) − log(measured), p clamped to [0.01, 1].
  const auto m = static_cast<Eigen::Index>(active.size());
  Eigen::VectorXd p(m);
  for (Eigen::Index j = 0; j < m; ++j)
    p[j] = result.constants[static_cast<size_t>(active[static_cast<size_t>(j)])].initial;
  auto residual = [&](const Eigen::VectorXd& params) -> absl::StatusOr<Eigen::VectorXd> {
    PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd t,
                               Simulate(profile, WithConstants(hw, active, params), selection));
    return Eigen::VectorXd(t.array().log() - log_measured);
  };
  if (m > 0) {
    PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd r, residual(p));
    double cost = r.squaredNorm();
    double lambda = 1e-3;
    for (int iter = 0; iter < kMaxIterations && cost > 1e-24; ++iter) {
      result.iterations = iter + 1;
      Eigen::MatrixXd jac(n, m);
      for (Eigen::Index j = 0; j < m; ++j) {
        Eigen::VectorXd q = p;
        const double h = std::max(1e-6, 1e-5 * p[j]) * (p[j] + 1e-5 > kMaxConstant ? -1.0 : 1.0);
        q[j] += h;
        PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd rq, residual(q));
        jac.col(j) = (rq - r) / h;
      }
      const Eigen::MatrixXd jtj = jac.transpose() * jac;
      const Eigen::VectorXd g = jac.transpose() * r;
      bool improved = false;
      for (int attempt = 0; attempt < 12 && !improved; ++attempt) {
        Eigen::MatrixXd a = jtj;
        a.diagonal() += lambda * (jtj.diagonal().array() + 1e-12).matrix();
        const Eigen::VectorXd step = a.ldlt().solve(-g);
        const Eigen::VectorXd next = (p + step).cwiseMax(kMinConstant).cwiseMin(kMaxConstant);
        PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd rn, residual(next));
        const double next_cost = rn.squaredNorm();
        if (next_cost < cost) {
          const double change = (next - p).cwiseAbs().maxCoeff();
          p = next;
          r = rn;
          cost = next_cost;
          lambda = std::max(lambda / 10.0, 1e-12);
          improved = true;
          if (change < 1e-10) iter = kMaxIterations;
        } else {
          lambda *= 10.0;
        }
      }
      if (!improved) break;
    }
  }
  for (Eigen::Index j = 0; j < m; ++j) {
    CalibratedConstant& c = result.constants[static_cast<size_t>(active[static_cast<size_t>(j)])];
    c.fitted = p[j];
    c.at_bound = p[j] <= kMinConstant + 1e-12 || p[j] >= kMaxConstant - 1e-12;
  }
  result.fitted_hw = WithConstants(hw, active, p);
  PROJECTOR_ASSIGN_OR_RETURN(Eigen::VectorXd after, Simulate(profile, result.fitted_hw, selection));
  result.rms_error_before_pct = RmsPct(before, measured);
  result.rms_error_after_pct = RmsPct(after, measured);
  for (Eigen::Index i = 0; i < n; ++i) {
    result.residuals.push_back({.shape = DescribeProfiledOp(profile.ops[static_cast<size_t>(i)]),
                                .measured_us = measured[i] * 1e6,
                                .before_us = before[i] * 1e6,
                                .after_us = after[i] * 1e6});
  }
  return result;
}

json HwOverlayJson(const CalibrationResult& result) {
  json out = json::object();
  out["format"] = std::string(kHwOverlayFormat);
  out["version"] = kHwOverlayVersion;
  out["base"] = result.gpu;
  out["fitted_from"] = result.profile_file;
  for (int c = 0; c < kNumConstants; ++c) {
    const CalibratedConstant& k = result.constants[static_cast<size_t>(c)];
    if (!k.identifiable) continue;
    out[kConstants[c].section][kConstants[c].name] = k.fitted;
  }
  json fit = json::object();
  fit["rms_error_before_pct"] = result.rms_error_before_pct;
  fit["rms_error_after_pct"] = result.rms_error_after_pct;
  fit["ops"] = result.residuals.size();
  out["fit"] = std::move(fit);
  return out;
}

namespace {

json ScaleOverlay(const std::string& gpu, double scale) {
  return {{"format", std::string(kHwOverlayFormat)},
          {"version", kHwOverlayVersion},
          {"base", gpu},
          {"gpu", {{"compute_scale", scale}}}};
}

// Validation of the case set with the compute scale applied to `gpu`.
absl::StatusOr<ValidationReport> ValidateScaled(const std::string& cases_file,
                                                const std::string& gpu, double scale,
                                                ValidationOptions options) {
  options.hw_overlays.push_back({.value = ScaleOverlay(gpu, scale),
                                 .origin = absl::StrFormat("compute_scale %.4f", scale),
                                 .base = gpu});
  return ValidateCasesFile(cases_file, options);
}

// Mean of log(projected / measured)² over the projected cases.
double MeanSquaredLogError(const ValidationReport& r) {
  double sum = 0;
  int64_t n = 0;
  for (const ValidationCase& c : r.cases) {
    if (!c.error_pct) continue;
    const double l = std::log1p(*c.error_pct / 100.0);
    sum += l * l;
    ++n;
  }
  return n > 0 ? sum / static_cast<double>(n) : 0.0;
}

}  // namespace

int64_t CalibrationEvaluations() {
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  int64_t steps = 0;
  for (double width = kMaxComputeScale - kMinFitScale; width > kScaleTolerance; width *= phi) {
    ++steps;
  }
  return 1 + 2 + steps + 1;
}

absl::StatusOr<StackCalibrationResult> CalibrateFromCases(
    const std::string& cases_file, const std::string& gpu, ValidationOptions options,
    const std::function<void(int64_t done, int64_t total)>& on_progress) {
  options.gpu = gpu;
  StackCalibrationResult result;
  result.gpu = gpu;
  result.cases_file = cases_file;
  const int64_t total = CalibrationEvaluations();
  auto evaluated = [&] {
    ++result.evaluations;
    if (on_progress) on_progress(result.evaluations, total);
  };
  PROJECTOR_ASSIGN_OR_RETURN(ValidationReport before, ValidateCasesFile(cases_file, options));
  evaluated();
  if (before.summary.projected == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        cases_file, ": no case on '", gpu, "' could be projected (", before.summary.count,
        " on that GPU", options.only.empty() ? "" : absl::StrCat(" matching '", options.only, "'"),
        "); nothing to calibrate against"));
  }
  result.before = before.summary;
  // Golden-section search of the scale on [kMinFitScale, kMaxComputeScale]: the squared log
  // error is unimodal in the scale (the projected TGS rises monotonically with it).
  const double phi = (std::sqrt(5.0) - 1.0) / 2.0;
  double lo = kMinFitScale, hi = kMaxComputeScale;
  auto objective = [&](double scale) -> absl::StatusOr<double> {
    PROJECTOR_ASSIGN_OR_RETURN(ValidationReport r, ValidateScaled(cases_file, gpu, scale, options));
    evaluated();
    return MeanSquaredLogError(r);
  };
  double a = hi - phi * (hi - lo), b = lo + phi * (hi - lo);
  PROJECTOR_ASSIGN_OR_RETURN(double fa, objective(a));
  PROJECTOR_ASSIGN_OR_RETURN(double fb, objective(b));
  while (hi - lo > kScaleTolerance) {
    if (fa <= fb) {
      hi = b;
      b = a;
      fb = fa;
      a = hi - phi * (hi - lo);
      PROJECTOR_ASSIGN_OR_RETURN(fa, objective(a));
    } else {
      lo = a;
      a = b;
      fa = fb;
      b = lo + phi * (hi - lo);
      PROJECTOR_ASSIGN_OR_RETURN(fb, objective(b));
    }
  }
  result.compute_scale = 0.5 * (lo + hi);
  result.at_bound = result.compute_scale - kMinFitScale < kScaleTolerance ||
                    kMaxComputeScale - result.compute_scale < kScaleTolerance;
  PROJECTOR_ASSIGN_OR_RETURN(ValidationReport after,
                             ValidateScaled(cases_file, gpu, result.compute_scale, options));
  evaluated();
  result.after = after.summary;
  return result;
}

json StackOverlayJson(const StackCalibrationResult& result) {
  json out = ScaleOverlay(result.gpu, result.compute_scale);
  out["fitted_from"] = result.cases_file;
  out["fit"] = {{"cases", result.after.projected},
                {"median_abs_error_before_pct", result.before.median_abs_error_pct},
                {"median_abs_error_after_pct", result.after.median_abs_error_pct}};
  return out;
}

absl::StatusOr<std::vector<GroupScale>> FitScalesBySourceAndGpu(const std::string& cases_file,
                                                                const ValidationReport& report,
                                                                const ValidationOptions& options) {
  std::vector<std::pair<std::string, std::string>> groups;  // (source, gpu), first-seen order
  std::map<std::pair<std::string, std::string>, int64_t> projected;
  for (const ValidationCase& c : report.cases) {
    if (!c.error_pct) continue;
    auto key = std::make_pair(c.source, c.gpu);
    if (projected[key]++ == 0) groups.push_back(key);
  }
  std::vector<GroupScale> out;
  for (const auto& key : groups) {
    if (projected[key] < kMinCasesForScaleFit) continue;
    ValidationOptions o = options;
    o.source = key.first;
    PROJECTOR_ASSIGN_OR_RETURN(StackCalibrationResult fit,
                               CalibrateFromCases(cases_file, key.second, std::move(o)));
    out.push_back({.source = key.first, .fit = std::move(fit)});
  }
  return out;
}

}  // namespace projector
