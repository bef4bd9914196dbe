// `project serve --validate FILE`: published serving results (calibration/serving_public.jsonl:
// TensorRT-LLM, SGLang and vLLM on A100, H100 and H200) against the serving projection. Each
// case's workload and engine are rebuilt from what the case states: a static batch of fixed
// lengths (TensorRT-LLM's gptSessionBenchmark), an offline run of every request at once, or
// Poisson arrivals; the engine's own defaults for what it does not state (EngineForCase). Every
// figure a case publishes (throughput, TTFT, TPOT, E2E) is compared.
#ifndef PROJECTOR_SERVING_SERVE_VALIDATE_H_
#define PROJECTOR_SERVING_SERVE_VALIDATE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "serving/serve.h"

namespace projector {

// One published figure of one case.
struct ServeFigure {
  std::string case_id;
  std::string metric;  // "output_tokens_per_s", "ttft_ms_p50", ...
  double measured = 0;
  double projected = 0;
  double error_pct = 0;  // (projected − measured) / measured
};

struct ServeCaseSummary {
  std::string id;
  std::string engine;
  std::string deployment;  // "llama2-70b a100-sxm-80gb TP4 fp16"
  std::string workload;    // "static batch 1024, 128 in / 128 out"
};

struct ServeValidation {
  std::string cases_file;
  std::vector<ServeCaseSummary> cases;
  std::vector<ServeFigure> figures;
  double median_abs_error_pct = 0;
  int64_t within_20_pct = 0;
};

// Reads one case per line (fields in calibration/README.md). kNotFound for a missing file;
// kInvalidArgument naming file:line and the JSON pointer of a bad field (an unknown engine or
// workload kind, a model or GPU not in the libraries, no measured figure).
absl::StatusOr<ServeValidation> ValidateServingCases(const std::string& path);

}  // namespace projector

#endif  // PROJECTOR_SERVING_SERVE_VALIDATE_H_
