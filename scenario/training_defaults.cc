#include "scenario/training_defaults.h"

namespace projector {

bool IsGptStyle(const ModelSpec& model) {
  return model.mlp == MlpKind::kGelu && model.norm == NormKind::kLayerNorm;
}

DropoutRates ResolvedDropout(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training) {
  const double stack_default =
      ResolvedStack(training, parallel) == TrainingStack::kMegatron && IsGptStyle(model)
          ? kMegatronDefaultDropout
          : 0.0;
  auto resolve = [&](double p) { return p == kAutoDropout ? stack_default : p; };
  return {.hidden = resolve(training.hidden_dropout),
          .attention = resolve(training.attention_dropout)};
}

RunChoices ResolveRunChoices(const ModelSpec& model, const ParallelConfig& parallel,
                             const TrainingConfig& training) {
  const DropoutRates dropout = ResolvedDropout(model, parallel, training);
  return RunChoices{.stack = ResolvedStack(training, parallel),
                    .loss_kernel = ResolvedLossKernel(training, parallel),
                    .fsdp_impl = ResolvedFsdpImpl(training, parallel),
                    .train_metric_passes = ResolvedTrainMetricPasses(training, parallel),
                    .dropout = dropout,
                    .eager_elementwise = RunsEagerElementwise(training, parallel)};
}

}  // namespace projector
