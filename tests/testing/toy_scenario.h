// Toy scenario and hand-built layers for the projection tests (fake backends, closed forms).
#ifndef PROJECTOR_TESTS_TESTING_TOY_SCENARIO_H_
#define PROJECTOR_TESTS_TESTING_TOY_SCENARIO_H_

#include "core/units.h"
#include "hw_profiles/hardware_profile.h"
#include "models/model_spec.h"
#include "projection/layer_composer.h"
#include "scenario/scenario.h"

namespace projector::testing {

// 4-layer dense GPT-ish model: hidden 256, FFN 1024 (SwiGLU), 4 heads of 64, vocab 1000.
inline ModelSpec ToyModel() {
  ModelSpec m;
  m.name = "toy";
  m.source = "test";
  m.num_layers = 4;
  m.hidden_size = 256;
  m.ffn_hidden_size = 1024;
  m.num_attention_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 64;
  m.vocab_size = 1000;
  return m;
}

// Toy MoE: 4 layers, the first dense, 8 experts top-2.
inline ModelSpec ToyMoeModel() {
  ModelSpec m = ToyModel();
  m.name = "toy-moe";
  MoeSpec moe;
  moe.num_experts = 8;
  moe.top_k = 2;
  moe.expert_ffn_hidden = 512;
  moe.num_dense_layers = 1;
  m.moe = moe;
  return m;
}

inline HardwareProfile ToyHardware() {
  HardwareProfile hw;
  hw.name = "toy-gpu";
  hw.gpu.name = "toy-gpu";
  hw.gpu.compute_units = 100;
  hw.gpu.peak_clock = Megahertz(2000);
  hw.gpu.sustained_clock = Megahertz(2000);
  // 100 CUs · 2e9 Hz · 5000 FLOP/clock = 1 PFLOP/s bf16.
  hw.gpu.matrix_flops_per_clock_per_cu[DTypeIndex(DType::kBf16)] = 5000;
  hw.gpu.vector_fp32_flops_per_clock_per_cu = 256;
  hw.gpu.hbm_capacity = Gigabytes(80);
  hw.gpu.hbm_bandwidth = TerabytesPerSecond(1);
  hw.gpus_per_node = 8;
  return hw;
}

inline Scenario ToyScenario() {
  Scenario s;
  s.name = "toy";
  s.model = ToyModel();
  s.hw = ToyHardware();
  s.parallel.dp = 8;
  s.num_gpus = 8;
  s.training.seq_len = 512;
  s.training.micro_batch = 1;
  s.training.global_batch = 64;
  return s;
}

// A composed layer with the given forward/backward compute and nothing else.
inline ComposedLayer FixedLayer(Seconds f, Seconds b, double dense_params = 0) {
  ComposedLayer l;
  l.forward_compute = f;
  l.backward_compute = b;
  l.forward_clock_scaled = f;
  l.backward_clock_scaled = b;
  l.dense_parameters = dense_params;
  return l;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_TOY_SCENARIO_H_
