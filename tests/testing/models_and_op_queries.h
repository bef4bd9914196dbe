// Shared fixtures for the profiler tests: model specs built in code (no loader dependency) and
// small queries over op lists.
#ifndef PROJECTOR_TESTS_TESTING_MODELS_AND_OP_QUERIES_H_
#define PROJECTOR_TESTS_TESTING_MODELS_AND_OP_QUERIES_H_

#include <cstdint>
#include <string_view>
#include <utility>

#include "core/training_config.h"
#include "models/model_spec.h"
#include "profilers/module_profilers.h"
#include "profilers/op_list.h"
#include "scenario/training_defaults.h"

namespace projector::testing {

// Llama-3.1-8B (Hugging Face config): GQA 32/8 heads of 128, SwiGLU 14336, vocab 128256.
inline ModelSpec Llama31_8B() {
  ModelSpec m;
  m.name = "llama3.1-8b";
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.ffn_hidden_size = 14336;
  m.num_attention_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 128256;
  m.mlp = MlpKind::kSwiGlu;
  m.norm = NormKind::kRmsNorm;
  return m;
}

// A GPT-style MHA model as in Korthikanti et al. 2022: GELU with ffn = 4h, LayerNorm, biases
// on every linear layer and norm (Megatron's add_bias_linear).
inline ModelSpec GptMha() {
  ModelSpec m;
  m.name = "gpt-mha";
  m.num_layers = 24;
  m.hidden_size = 2048;
  m.ffn_hidden_size = 8192;
  m.num_attention_heads = 16;
  m.num_kv_heads = 16;
  m.head_dim = 128;
  m.vocab_size = 51200;
  m.mlp = MlpKind::kGelu;
  m.norm = NormKind::kLayerNorm;
  m.tied_embeddings = true;
  m.linear_bias = true;
  return m;
}

// DeepSeek-V3 (Hugging Face config): MLA with Q LoRA, 256 routed experts top-8 + 1 shared.
inline ModelSpec DeepSeekV3() {
  ModelSpec m;
  m.name = "deepseek-v3";
  m.num_layers = 61;
  m.hidden_size = 7168;
  m.ffn_hidden_size = 18432;
  m.num_attention_heads = 128;
  m.num_kv_heads = 128;
  m.head_dim = 192;
  m.vocab_size = 129280;
  m.mlp = MlpKind::kSwiGlu;
  m.norm = NormKind::kRmsNorm;
  m.moe = MoeSpec{.num_experts = 256,
                  .top_k = 8,
                  .expert_ffn_hidden = 2048,
                  .num_shared_experts = 1,
                  .shared_expert_ffn_hidden = 2048,
                  .num_dense_layers = 3,
                  .layer_pattern = {}};
  m.mla = MlaSpec{.q_lora_rank = 1536,
                  .kv_lora_rank = 512,
                  .qk_nope_head_dim = 128,
                  .qk_rope_head_dim = 64,
                  .v_head_dim = 128};
  return m;
}

// Mixtral-8x7B: GQA 32/8, 8 experts top-2 of 14336, no shared experts.
inline ModelSpec Mixtral8x7B() {
  ModelSpec m;
  m.name = "mixtral-8x7b";
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.ffn_hidden_size = 14336;
  m.num_attention_heads = 32;
  m.num_kv_heads = 8;
  m.head_dim = 128;
  m.vocab_size = 32000;
  m.moe = MoeSpec{.num_experts = 8,
                  .top_k = 2,
                  .expert_ffn_hidden = 14336,
                  .num_shared_experts = 0,
                  .shared_expert_ffn_hidden = 0,
                  .num_dense_layers = 0,
                  .layer_pattern = {}};
  return m;
}

// A model with a layout and run settings; Ctx() views them as a ProfileContext, with the run
// choices scenario/ resolves for them.
struct ProfilerCase {
  explicit ProfilerCase(ModelSpec m) : model(std::move(m)) {}
  ModelSpec model;
  ParallelConfig parallel;
  TrainingConfig training;
  std::string arch = "sm_90";  // the GPU whose "auto" choices apply (Hopper)
  ProfileContext Ctx(Recompute r = Recompute::kNone) const {
    return ProfileContext{.model = model, .parallel = parallel, .training = training,
                          .recompute = r,
                          .run = ResolveRunChoices(model, parallel, training, arch)};
  }
};

inline double D(int64_t v) { return static_cast<double>(v); }

inline int64_t CountOps(const OpList& ops, OpKind kind, OpPhase phase) {
  int64_t n = 0;
  for (const Op& op : ops) n += (op.kind == kind && op.phase == phase) ? 1 : 0;
  return n;
}

inline int64_t CountPhase(const OpList& ops, OpPhase phase) {
  int64_t n = 0;
  for (const Op& op : ops) n += op.phase == phase ? 1 : 0;
  return n;
}

inline double SumFlops(const OpList& ops, OpKind kind, OpPhase phase) {
  double f = 0;
  for (const Op& op : ops) {
    if (op.kind == kind && op.phase == phase) f += op.flops.value();
  }
  return f;
}

inline double SumLayerFlops(const LayerProfile& layer, OpKind kind, OpPhase phase) {
  double f = 0;
  for (const ModuleProfile& m : layer.modules) f += SumFlops(m.ops, kind, phase);
  return f;
}

// The first op named `name` in `phase`, or nullptr.
inline const Op* FindOp(const OpList& ops, std::string_view name, OpPhase phase) {
  for (const Op& op : ops) {
    if (op.name == name && op.phase == phase) return &op;
  }
  return nullptr;
}

}  // namespace projector::testing

#endif  // PROJECTOR_TESTS_TESTING_MODELS_AND_OP_QUERIES_H_
