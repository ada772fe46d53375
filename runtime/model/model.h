// A loaded model: hyperparameters, vocabulary and weight views into the mapped GGUF file.
// Immutable after load; shared by contexts on several threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/tensor.h"
#include "base/status.h"
#include "vocab.h"

namespace wt {

class GgufFile;
class ModelDevice;  // runtime/engine/model_device.h

enum class Arch { llama, qwen2, qwen3, smollm3, gemma3, phi3 };
// norm: rotate adjacent pairs (x[2i], x[2i+1]) — GGUF llama and smollm3 (Q/K permuted by
// the converter).
// neox: rotate (x[i], x[i + n_rot/2]) — qwen2, qwen3, gemma3, phi3.
enum class RopeType { norm, neox };
enum class RopeScaling { none, linear, llama3, yarn };

struct Hparams {
  Arch arch = Arch::llama;
  int32_t n_layer = 0;
  int32_t n_embd = 0;
  int32_t n_ff = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t head_dim = 0;     // n_embd / n_head unless the file says otherwise
  int32_t n_rot = 0;        // rope.dimension_count (defaults to head_dim)
  int32_t no_rope_step = 0; // > 0: layers l with (l + 1) % no_rope_step == 0 have no rope (smollm3: 4)
  int32_t n_vocab = 0;
  int32_t n_ctx_train = 0;  // context_length; with YaRN at least factor x its original context
  float rms_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeType rope_type = RopeType::norm;
  RopeScaling rope_scaling = RopeScaling::none;
  float rope_factor = 1.0f;            // linear / llama3 / yarn scaling factor
  float rope_low_freq_factor = 1.0f;   // llama3
  float rope_high_freq_factor = 4.0f;  // llama3
  int32_t rope_orig_ctx = 8192;        // llama3, yarn: original_max_position_embeddings
  float yarn_beta_fast = 32.0f;        // yarn: pairs turning more often than this keep their frequency
  float yarn_beta_slow = 1.0f;         // yarn: pairs turning less often are divided by the factor
  float yarn_attn_factor = 1.0f;       // yarn: the file's extra factor on cos and sin
  // rope.scaling.attn_factor: a factor on cos and sin whatever the scaling (Phi-3's LongRoPE:
  // sqrt(1 + ln(context / original) / ln original)), RopeOp::mscale: so only the rotated dims
  // of q and k carry it.
  float rope_attn_factor = 1.0f;
  // gemma3: sliding-window layers attend their last swa_window keys (their own included);
  // layer l is global when (l + 1) % swa_pattern == 0. Sliding layers rope with base
  // rope_theta_swa and no scaling.
  int32_t swa_window = 0;              // 0: every layer global
  int32_t swa_pattern = 0;
  float rope_theta_swa = 10000.0f;
  float embed_scale = 1.0f;            // the embedding rows times this (gemma3: sqrt(n_embd))
  int32_t attn_scale_dim = 0;          // > 0: softmax scale 1/sqrt(this), not of head_dim (Gemma 3 27B)
  bool gelu = false;                   // the feed-forward gate's activation: gelu (tanh form), not silu
};

// Optional tensors (biases, a separate output matrix) have data == nullptr when absent.
struct LayerWeights {
  Tensor attn_norm;  // [n_embd] f32
  Tensor wq;         // [n_head * head_dim, n_embd]      (rows = outputs, ne0 = input dim)
  Tensor wk;         // [n_head_kv * head_dim, n_embd]
  Tensor wv;         // [n_head_kv * head_dim, n_embd]
  Tensor bq, bk, bv; // [out] f32, qwen2 only
  Tensor q_norm;     // [head_dim] f32, qwen3 only: each query head RMS-normed before rope
  Tensor k_norm;     // [head_dim] f32, qwen3 only: each key head likewise
  Tensor wo;         // [n_head * head_dim, n_embd]
  Tensor attn_post_norm;  // [n_embd] f32, gemma3 only: the attention output RMS-normed before the residual add
  Tensor ffn_norm;   // [n_embd] f32
  Tensor w_gate;     // [n_ff, n_embd]
  Tensor w_up;       // [n_ff, n_embd]
  Tensor w_down;     // [n_embd, n_ff]
  Tensor ffn_post_norm;  // [n_embd] f32, gemma3 only: the feed-forward output likewise
};

struct Model {
  Hparams hp;
  Vocab vocab;
  std::string name;
  std::string arch_name;
  Tensor tok_embd;     // [n_vocab, n_embd]
  Tensor output_norm;  // [n_embd] f32
  Tensor output;       // [n_vocab, n_embd]; aliases tok_embd when tied
  Tensor rope_freqs;   // [n_rot/2] f32 per-frequency divisors (Llama 3.1 GGUFs), optional
  // LongRoPE (Phi-3 128k, Phi-3.5): per-frequency divisors for contexts up to rope_orig_ctx
  // (short) and beyond (long), as llama.cpp picks them by the context's size; copied out of
  // the file (only the host reads them). Both empty, or both n_rot/2.
  std::vector<float> rope_factors_short, rope_factors_long;
  bool tied_output = false;
  std::vector<LayerWeights> layers;
  uint64_t n_params = 0;
  uint64_t weight_bytes = 0;
  std::shared_ptr<GgufFile> file;  // keeps the mapping alive
  // Set when the weights were placed on a device backend (runtime/engine/model_device.h):
  // the weight tensors above then point into that backend's memory, and every context of
  // the model runs on it. Their data are then device addresses the host must never
  // dereference (device-only memory: CUDA's on any GPU, Vulkan's on a discrete one), except rope_freqs, which only the
  // host reads: it points at a host copy the ModelDevice keeps. Null for the CPU: the
  // weights are views into the mapped file.
  std::shared_ptr<ModelDevice> device;
};

// A rope scaling asked for at load, replacing the file's (wt_model_params.rope_scaling).
struct RopeOverride {
  bool set = false;
  RopeScaling scaling = RopeScaling::none;  // none, linear or yarn
  float factor = 1.0f;                      // linear, yarn
  int32_t orig_ctx = 0;                     // yarn: the trained context; 0: the file's context_length
};

// Whether layer l rotates its queries and keys (smollm3 leaves every fourth without rope).
inline bool layer_has_rope(const Hparams& hp, int32_t l) { return hp.no_rope_step <= 0 || (l + 1) % hp.no_rope_step != 0; }
// Whether layer l attends through a sliding window (gemma3: five of every six layers).
inline bool layer_is_swa(const Hparams& hp, int32_t l) {
  return hp.swa_window > 0 && (hp.swa_pattern <= 0 || (l + 1) % hp.swa_pattern != 0);
}

struct LoadOptions {
  bool (*progress)(float, void*) = nullptr;
  void* progress_user = nullptr;
  RopeOverride rope;
};

// Opens, validates and maps a GGUF model. Errors: WT_ERR_IO, WT_ERR_FORMAT (message names
// the field), WT_ERR_UNSUPPORTED, WT_ERR_ABORTED.
Status load_model(const std::string& path, const LoadOptions& options, std::unique_ptr<Model>* out);
// The same over a file already opened or parsed from memory (tests build models in memory).
Status load_model_from_gguf(std::shared_ptr<GgufFile> file, const LoadOptions& options,
                            std::unique_ptr<Model>* out);

}  // namespace wt
