#include "rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace wt {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Llama 3.1: pairs whose wavelength is longer than orig / low_freq_factor are divided by
// the factor, shorter than orig / high_freq_factor kept, and those between blended.
double llama3_divisor(const Hparams& hp, double freq) {
  const double low_wavelen = hp.rope_orig_ctx / hp.rope_low_freq_factor;
  const double high_wavelen = hp.rope_orig_ctx / hp.rope_high_freq_factor;
  const double wavelen = 2.0 * kPi / freq;
  double scaled = freq;
  if (wavelen > low_wavelen) {
    scaled = freq / hp.rope_factor;
  } else if (wavelen >= high_wavelen) {
    const double smooth = (hp.rope_orig_ctx / wavelen - hp.rope_low_freq_factor) /
                          (hp.rope_high_freq_factor - hp.rope_low_freq_factor);
    scaled = (1.0 - smooth) * freq / hp.rope_factor + smooth * freq;
  }
  return freq / scaled;
}

// The pair index (fractional) whose frequency turns `rotations` times over the original
// context: n_rot ln(orig / (2 pi rotations)) / (2 ln theta).
double yarn_pair(const Hparams& hp, double rotations) {
  return hp.n_rot * std::log(hp.rope_orig_ctx / (rotations * 2.0 * kPi)) / (2.0 * std::log(double{hp.rope_theta}));
}

}  // namespace

void rope_divisors(const Hparams& hp, float* out) {
  // YaRN's ramp: 0 up to pair `low` (kept), 1 from `high` (divided by the factor).
  const double low = std::max(std::floor(yarn_pair(hp, hp.yarn_beta_fast)), 0.0);
  double high = std::min(std::ceil(yarn_pair(hp, hp.yarn_beta_slow)), hp.n_rot - 1.0);
  if (high == low) high += 0.001;
  for (int32_t i = 0; i < hp.n_rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(hp.rope_theta), -2.0 * i / hp.n_rot);
    if (hp.rope_scaling == RopeScaling::llama3) {
      out[i] = static_cast<float>(llama3_divisor(hp, freq));
    } else {
      const double ramp = std::clamp((i - low) / (high - low), 0.0, 1.0);
      out[i] = static_cast<float>(1.0 / (ramp / hp.rope_factor + (1.0 - ramp)));
    }
  }
}

Status check_rope_values(float factor, int32_t orig_ctx) {
  if (!(std::isfinite(factor) && factor >= 1.0f && factor <= 1024.0f))
    return error(WT_ERR_INVALID_ARGUMENT, "rope_scaling_factor " + std::to_string(factor) + " must be in [1, 1024]");
  if (orig_ctx < 0) return error(WT_ERR_INVALID_ARGUMENT, "rope_orig_ctx must be >= 0 (0: the file's context_length)");
  return Status::ok();
}

Status rope_override_from(int32_t kind, float factor, int32_t orig_ctx, RopeOverride* out) {
  if (kind < WT_ROPE_SCALING_FILE || kind > WT_ROPE_SCALING_YARN)
    return error(WT_ERR_INVALID_ARGUMENT, "unknown rope_scaling " + std::to_string(kind));
  WT_TRY(check_rope_values(factor, orig_ctx));
  *out = RopeOverride{};
  if (kind == WT_ROPE_SCALING_FILE) return Status::ok();
  out->set = true;
  out->scaling = kind == WT_ROPE_SCALING_NONE     ? RopeScaling::none
                 : kind == WT_ROPE_SCALING_LINEAR ? RopeScaling::linear
                                                  : RopeScaling::yarn;
  out->factor = factor;
  out->orig_ctx = orig_ctx;
  return Status::ok();
}

Status apply_rope_override(const RopeOverride& o, Hparams* hp) {
  if (!o.set) return Status::ok();
  if (o.scaling != RopeScaling::none && o.scaling != RopeScaling::linear && o.scaling != RopeScaling::yarn)
    return error(WT_ERR_INVALID_ARGUMENT, "rope_scaling: only none, linear and yarn can be asked for");
  WT_TRY(check_rope_values(o.factor, o.orig_ctx));
  // Every scaling field as a file of that scaling leaves it (the state fingerprint hashes
  // them): the defaults, then the override's own.
  const Hparams defaults;
  hp->rope_scaling = o.scaling;
  hp->rope_factor = o.scaling == RopeScaling::none ? 1.0f : o.factor;
  hp->rope_low_freq_factor = defaults.rope_low_freq_factor;
  hp->rope_high_freq_factor = defaults.rope_high_freq_factor;
  hp->rope_orig_ctx = o.scaling != RopeScaling::yarn ? defaults.rope_orig_ctx
                      : o.orig_ctx > 0               ? o.orig_ctx
                                                     : hp->n_ctx_train;
  hp->yarn_beta_fast = defaults.yarn_beta_fast;
  hp->yarn_beta_slow = defaults.yarn_beta_slow;
  hp->yarn_attn_factor = defaults.yarn_attn_factor;
  hp->rope_attn_factor = defaults.rope_attn_factor;
  return Status::ok();
}

Status check_rope_scaling(Hparams* hp) {
  // rope.scaling.attn_factor goes on cos and sin (RopeOp::mscale), so only on the dims rope
  // turns, over part of a head too (Phi-4-mini's 96 of 128); the sliding-window layers'
  // rope would carry it as well, which no model asks for.
  if (hp->rope_attn_factor != 1.0f && hp->swa_window > 0)
    return error(WT_ERR_UNSUPPORTED, "model: rope.scaling.attn_factor with sliding-window layers is not supported");
  if (hp->rope_scaling != RopeScaling::yarn) return Status::ok();
  // YaRN's factor on cos and sin is applied to q.k as a whole (attention_scale): exact only
  // when rope turns every dimension of a head.
  if (hp->n_rot != hp->head_dim)
    return error(WT_ERR_UNSUPPORTED, "model: YaRN with rope over " + std::to_string(hp->n_rot) + " of " +
                                         std::to_string(hp->head_dim) + " head dimensions is not supported");
  // The factor would reach the sliding-window layers too, which rope unscaled.
  if (hp->swa_window > 0) return error(WT_ERR_UNSUPPORTED, "model: YaRN with sliding-window layers is not supported");
  const double scaled = std::floor(double{hp->rope_factor} * hp->rope_orig_ctx);
  hp->n_ctx_train = static_cast<int32_t>(std::min<double>(std::max<double>(hp->n_ctx_train, scaled), INT32_MAX));
  return Status::ok();
}

double rope_mscale(const Hparams& hp) {
  if (hp.rope_scaling != RopeScaling::yarn) return 1.0;
  const double m = hp.rope_factor > 1.0f ? 0.1 * std::log(double{hp.rope_factor}) + 1.0 : 1.0;
  return m * hp.yarn_attn_factor;
}

float attention_scale(const Hparams& hp) {
  // Without YaRN the float expression every version used: the same bits.
  const float scale = 1.0f / std::sqrt(static_cast<float>(hp.attn_scale_dim > 0 ? hp.attn_scale_dim : hp.head_dim));
  if (hp.rope_scaling != RopeScaling::yarn) return scale;
  const double m = rope_mscale(hp);
  return static_cast<float>(m * m * scale);
}

}  // namespace wt
