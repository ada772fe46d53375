// What a model's rope scaling asks of the engine beyond RopeOp's base and position scale:
// per-pair frequency divisors (llama3, yarn) and the factor YaRN puts on every q.k.
#pragma once

#include "model.h"

namespace wt {

// Whether the scaling divides the rotary frequencies pair by pair (a rope_freqs.weight
// tensor does too; the engine reads that one from the model).
inline bool has_rope_divisors(const Hparams& hp) {
  return hp.rope_scaling == RopeScaling::llama3 || hp.rope_scaling == RopeScaling::yarn;
}

// out[i] (i < n_rot / 2): the divisor of pair i's frequency, for a scaling with
// has_rope_divisors (Llama 3.1's wavelength bands; YaRN's ramp between the frequency as it
// is, for pairs that turn more than beta_fast times over the original context, and the
// frequency / factor, for pairs that turn fewer than beta_slow times).
void rope_divisors(const Hparams& hp, float* out);

// LongRoPE's divisors for a context of n_ctx tokens: the long factors beyond the original
// context, else the short ones (llama.cpp's choice, by the context's size; HF's Phi-3 code
// picks by the sequence's length instead). Null for a model without them.
inline const std::vector<float>* longrope_factors(const Model& m, int32_t n_ctx) {
  if (m.rope_factors_long.empty()) return nullptr;
  return n_ctx > m.hp.rope_orig_ctx ? &m.rope_factors_long : &m.rope_factors_short;
}

// YaRN's factor on cos and sin, so on every q.k twice over: (0.1 ln factor + 1) times the
// file's yarn_attn_factor (1 without YaRN). rope.scaling.attn_factor (LongRoPE's) is rope's
// own (RopeOp::mscale), on the rotated dims only.
double rope_mscale(const Hparams& hp);

// WT_ERR_INVALID_ARGUMENT unless factor is in [1, 1024] and orig_ctx >= 0 (the ranges of
// wt_model_params.rope_scaling_factor and rope_orig_ctx, checked whatever the kind).
Status check_rope_values(float factor, int32_t orig_ctx);

// wt_model_params' rope fields (the kind as a raw value) as the loader's override: none for
// WT_ROPE_SCALING_FILE. Every field is checked whatever the kind (check_rope_values), and an
// unknown kind is WT_ERR_INVALID_ARGUMENT. The C API and whittle-plan read them this way.
Status rope_override_from(int32_t kind, float factor, int32_t orig_ctx, RopeOverride* out);

// wt_model_params' rope scaling (o.set) over the file's in *hp: its kind and factor, YaRN's
// original context (0: the file's context_length), llama.cpp's betas and no extra attention
// factor. WT_ERR_INVALID_ARGUMENT: a kind other than none, linear and yarn, a factor outside
// [1, 1024], a negative context.
Status apply_rope_override(const RopeOverride& o, Hparams* hp);

// After the file's scaling and any override: YaRN needs rope over every head dimension and
// no sliding-window layers, rope.scaling.attn_factor no sliding-window layers
// (WT_ERR_UNSUPPORTED otherwise), and YaRN's model is one of factor x original context
// (n_ctx_train becomes at least that).
Status check_rope_scaling(Hparams* hp);

// The softmax scale of q.k every attention and scoring op takes: 1 / sqrt(head_dim), times
// rope_mscale squared (exact because YaRN is refused unless rope turns every dimension).
float attention_scale(const Hparams& hp);

}  // namespace wt
