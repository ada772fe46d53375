// wt::load_model: hyperparameters, vocabulary and weight views from a validated GGUF file.
// Every tensor the graph reads is checked for presence, exact shape and type here, so the
// engine never meets a surprise; a tensor the graph would not read is refused too, because
// ignoring it (an extra bias, say) would silently compute the wrong model.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "gguf.h"
#include "model.h"
#include "rope_scaling.h"

namespace wt {

namespace {

Status model_error(wt_status code, const std::string& message) { return error(code, "model: " + message); }

// Rows [row0, row0 + rows) of a fused matrix (rows are outputs, each whole blocks) as a
// matrix of its own: rows_view, and the strides past its rows those of its own size, as a
// bound tensor's are.
Tensor row_slice(const Tensor& t, int64_t row0, int64_t rows) {
  Tensor v = rows_view(t, row0, rows);
  for (int i = 2; i < 4; ++i) v.nb[i] = t.nb[1] * static_cast<size_t>(rows);
  return v;
}

std::string shape_string(int n_dims, const int64_t* ne) {
  std::string s = "[";
  for (int i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

// Sanity caps that keep every product of hyperparameters far inside int32.
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxEmbd = 1 << 16;
constexpr int64_t kMaxFf = 1 << 20;
constexpr int64_t kMaxHeads = 1 << 12;
constexpr int64_t kMaxHeadDim = 1 << 12;

class Loader {
 public:
  Loader(const GgufFile& file, Model& model) : f_(file), m_(model), used_(file.tensors().size(), false) {}

  Status load(const LoadOptions& options) {
    WT_TRY(load_hparams());
    WT_TRY(load_rope_scaling());
    WT_TRY(apply_rope_override(options.rope, &m_.hp));
    WT_TRY(check_rope_scaling(&m_.hp));
    WT_TRY(load_vocab());
    WT_TRY(load_weights(options));
    return Status::ok();
  }

 private:
  std::string key(const char* suffix) const { return m_.arch_name + "." + suffix; }

  // An integer hparam in [lo, hi]; a missing optional key leaves *out unchanged.
  Status get_int(const std::string& k, int32_t* out, bool required, int64_t lo, int64_t hi) {
    const GgufKv* kv = f_.find_kv(k);
    if (kv && kv->type == GgufType::array) {
      return model_error(WT_ERR_UNSUPPORTED, k + ": per-layer values are not supported");
    }
    int64_t v = 0;
    if (!kv) return required ? f_.get_i64(k, &v, true) : Status::ok();
    WT_TRY(f_.get_i64(k, &v, true));
    if (v < lo || v > hi) {
      return model_error(WT_ERR_FORMAT, k + " = " + std::to_string(v) + " is out of range [" +
                                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
    }
    *out = static_cast<int32_t>(v);
    return Status::ok();
  }

  // A float hparam that must be finite and positive.
  Status get_positive_f32(const std::string& k, float* out, bool required) {
    float v = *out;
    WT_TRY(f_.get_f32(k, &v, required));
    if (!std::isfinite(v) || v <= 0.0f) {
      return model_error(WT_ERR_FORMAT, k + " = " + std::to_string(v) + " must be finite and > 0");
    }
    *out = v;
    return Status::ok();
  }

  Status load_hparams() {
    std::string_view arch;
    WT_TRY(f_.get_string("general.architecture", &arch, true));
    Hparams& hp = m_.hp;
    if (arch == "llama") {
      hp.arch = Arch::llama;
      hp.rope_type = RopeType::norm;
    } else if (arch == "qwen2") {
      hp.arch = Arch::qwen2;
      hp.rope_type = RopeType::neox;
    } else if (arch == "qwen3") {
      hp.arch = Arch::qwen3;
      hp.rope_type = RopeType::neox;
    } else if (arch == "smollm3") {  // llama without rope in every fourth layer (as llama.cpp: a fixed step)
      hp.arch = Arch::smollm3;
      hp.rope_type = RopeType::norm;
      hp.no_rope_step = 4;
    } else if (arch == "gemma3") {
      hp.arch = Arch::gemma3;
      hp.rope_type = RopeType::neox;
      hp.gelu = true;
    } else if (arch == "phi3") {  // llama with fused q/k/v and gate/up matrices, neox rope, LongRoPE
      hp.arch = Arch::phi3;
      hp.rope_type = RopeType::neox;
    } else {
      return model_error(WT_ERR_UNSUPPORTED, "unsupported architecture " + gguf_quoted(arch) +
                                                 " (supported: llama, qwen2, qwen3, smollm3, gemma3, phi3)");
    }
    m_.arch_name = std::string(arch);
    std::string_view name;
    WT_TRY(f_.get_string("general.name", &name, false));
    m_.name = std::string(name);

    WT_TRY(get_int(key("block_count"), &hp.n_layer, true, 1, kMaxLayers));
    WT_TRY(get_int(key("embedding_length"), &hp.n_embd, true, 1, kMaxEmbd));
    WT_TRY(get_int(key("feed_forward_length"), &hp.n_ff, true, 1, kMaxFf));
    WT_TRY(get_int(key("attention.head_count"), &hp.n_head, true, 1, kMaxHeads));
    hp.n_head_kv = hp.n_head;
    WT_TRY(get_int(key("attention.head_count_kv"), &hp.n_head_kv, false, 1, kMaxHeads));
    if (hp.n_head % hp.n_head_kv != 0) {
      return model_error(WT_ERR_FORMAT, "head count inconsistent: " + key("attention.head_count") + " = " +
                                            std::to_string(hp.n_head) + " is not a multiple of " +
                                            key("attention.head_count_kv") + " = " + std::to_string(hp.n_head_kv));
    }
    if (f_.has_key(key("attention.key_length"))) {
      WT_TRY(get_int(key("attention.key_length"), &hp.head_dim, true, 1, kMaxHeadDim));
    } else if (hp.n_embd % hp.n_head != 0) {
      return model_error(WT_ERR_FORMAT, "head count inconsistent: " + key("embedding_length") + " = " +
                                            std::to_string(hp.n_embd) + " is not a multiple of " +
                                            key("attention.head_count") + " = " + std::to_string(hp.n_head) +
                                            " and " + key("attention.key_length") + " is absent");
    } else {
      hp.head_dim = hp.n_embd / hp.n_head;
    }
    int32_t value_length = hp.head_dim;
    WT_TRY(get_int(key("attention.value_length"), &value_length, false, 1, kMaxHeadDim));
    if (value_length != hp.head_dim) {
      return model_error(WT_ERR_UNSUPPORTED, key("attention.value_length") + " = " + std::to_string(value_length) +
                                                 " differs from the key length " + std::to_string(hp.head_dim));
    }
    hp.n_rot = hp.head_dim;
    WT_TRY(get_int(key("rope.dimension_count"), &hp.n_rot, false, 2, hp.head_dim));
    if (hp.n_rot % 2 != 0) {
      return model_error(WT_ERR_FORMAT, key("rope.dimension_count") + " = " + std::to_string(hp.n_rot) + " is odd");
    }
    WT_TRY(get_int(key("context_length"), &hp.n_ctx_train, true, 1, INT32_MAX));
    WT_TRY(get_positive_f32(key("attention.layer_norm_rms_epsilon"), &hp.rms_eps, true));
    hp.rope_theta = 10000.0f;
    WT_TRY(get_positive_f32(key("rope.freq_base"), &hp.rope_theta, false));
    if (hp.arch == Arch::gemma3) WT_TRY(load_gemma3());
    return Status::ok();
  }

  // Gemma 3 as HF's Gemma3TextModel computes it and llama.cpp reads its GGUF: the window
  // from the file, every sixth layer global (llama.cpp's fixed pattern; a file that names
  // another is read), local layers on rope base 10000 unscaled, embeddings times
  // sqrt(n_embd), and query_pre_attn_scalar, which GGUF does not carry, as llama.cpp takes
  // it: n_embd / n_head for the 27B (62 layers), head_dim otherwise.
  Status load_gemma3() {
    Hparams& hp = m_.hp;
    WT_TRY(get_int(key("attention.sliding_window"), &hp.swa_window, true, 1, INT32_MAX));
    hp.swa_pattern = 6;
    if (f_.has_key(key("attention.sliding_window_pattern")))
      WT_TRY(get_int(key("attention.sliding_window_pattern"), &hp.swa_pattern, true, 1, kMaxLayers));
    hp.rope_theta_swa = 10000.0f;
    WT_TRY(get_positive_f32(key("rope.freq_base_swa"), &hp.rope_theta_swa, false));
    hp.embed_scale = std::sqrt(static_cast<float>(hp.n_embd));
    if (hp.n_layer == 62) hp.attn_scale_dim = hp.n_embd / hp.n_head;
    if (f_.has_key(key("final_logit_softcapping")) || f_.has_key(key("attn_logit_softcapping")))
      return model_error(WT_ERR_UNSUPPORTED, "logit soft-capping (Gemma 2's) is not supported");
    return Status::ok();
  }

  // Llama 3.1 GGUFs usually carry a rope_freqs.weight tensor instead of these keys (bound
  // in load_weights); files that spell the scaling out are read here.
  Status load_rope_scaling() {
    Hparams& hp = m_.hp;
    const bool has_type = f_.has_key(key("rope.scaling.type"));
    const bool has_factor = f_.has_key(key("rope.scaling.factor"));
    const bool has_llama3_keys =
        f_.has_key(key("rope.scaling.low_freq_factor")) && f_.has_key(key("rope.scaling.high_freq_factor"));
    hp.rope_scaling = RopeScaling::none;
    if (has_type) {
      std::string_view type;
      WT_TRY(f_.get_string(key("rope.scaling.type"), &type, true));
      if (type == "linear") {
        hp.rope_scaling = RopeScaling::linear;
      } else if (type == "llama3") {
        hp.rope_scaling = RopeScaling::llama3;
      } else if (type == "yarn") {
        hp.rope_scaling = RopeScaling::yarn;
      } else if (type != "none") {
        return model_error(WT_ERR_UNSUPPORTED, "rope scaling type '" + std::string(type) + "' is not supported");
      }
    } else if (has_factor) {
      hp.rope_scaling = has_llama3_keys ? RopeScaling::llama3 : RopeScaling::linear;
    } else if (f_.has_key(key("rope.scale_linear"))) {  // the older spelling
      hp.rope_scaling = RopeScaling::linear;
      return get_positive_f32(key("rope.scale_linear"), &hp.rope_factor, true);
    }
    // Phi-3's converter writes no scaling type for LongRoPE, only these two and the factor
    // tensors (bound in load_weights); llama.cpp applies the attention factor whatever the type.
    WT_TRY(get_positive_f32(key("rope.scaling.attn_factor"), &hp.rope_attn_factor, false));
    if (hp.rope_scaling == RopeScaling::none) return Status::ok();

    WT_TRY(get_positive_f32(key("rope.scaling.factor"), &hp.rope_factor, true));
    if (hp.rope_scaling == RopeScaling::linear) return Status::ok();
    if (hp.rope_scaling == RopeScaling::yarn) return load_yarn();
    WT_TRY(get_positive_f32(key("rope.scaling.low_freq_factor"), &hp.rope_low_freq_factor, false));
    WT_TRY(get_positive_f32(key("rope.scaling.high_freq_factor"), &hp.rope_high_freq_factor, false));
    WT_TRY(get_int(key("rope.scaling.original_context_length"), &hp.rope_orig_ctx, false, 1, INT32_MAX));
    if (hp.rope_high_freq_factor <= hp.rope_low_freq_factor) {
      return model_error(WT_ERR_FORMAT, key("rope.scaling.high_freq_factor") + " must exceed " +
                                            key("rope.scaling.low_freq_factor"));
    }
    return Status::ok();
  }

  // YaRN as llama.cpp's converter writes it: the original context (default: the file's
  // context_length), the ramp's betas (default 32 and 1) and an extra attention factor
  // (default 1). The variants Whittle does not compute are refused, not ignored.
  Status load_yarn() {
    Hparams& hp = m_.hp;
    hp.rope_orig_ctx = hp.n_ctx_train;
    WT_TRY(get_int(key("rope.scaling.original_context_length"), &hp.rope_orig_ctx, false, 1, INT32_MAX));
    WT_TRY(get_positive_f32(key("rope.scaling.yarn_beta_fast"), &hp.yarn_beta_fast, false));
    WT_TRY(get_positive_f32(key("rope.scaling.yarn_beta_slow"), &hp.yarn_beta_slow, false));
    WT_TRY(get_positive_f32(key("rope.scaling.yarn_attn_factor"), &hp.yarn_attn_factor, false));
    float ext = 1.0f;
    WT_TRY(f_.get_f32(key("rope.scaling.yarn_ext_factor"), &ext, false));
    if (ext != 1.0f)
      return model_error(WT_ERR_UNSUPPORTED, key("rope.scaling.yarn_ext_factor") + " = " + std::to_string(ext) +
                                                 ": only YaRN's full ramp (1) is supported");
    if (f_.has_key(key("rope.scaling.yarn_log_multiplier")))
      return model_error(WT_ERR_UNSUPPORTED, key("rope.scaling.yarn_log_multiplier") + ": DeepSeek's YaRN is not supported");
    if (hp.yarn_beta_slow >= hp.yarn_beta_fast)
      return model_error(WT_ERR_FORMAT, key("rope.scaling.yarn_beta_fast") + " must exceed " +
                                            key("rope.scaling.yarn_beta_slow"));
    return Status::ok();
  }

  Status load_vocab() {
    Vocab& v = m_.vocab;
    std::string_view s;
    WT_TRY(f_.get_string("tokenizer.ggml.model", &s, true));
    if (s != "gpt2" && s != "llama") {
      return model_error(WT_ERR_UNSUPPORTED, "tokenizer '" + std::string(s) +
                                                 "' is not supported (only gpt2, byte-level BPE, and llama, "
                                                 "SentencePiece BPE)");
    }
    v.model = std::string(s);
    const bool spm = v.model == "llama";
    s = "default";
    WT_TRY(f_.get_string("tokenizer.ggml.pre", &s, false));
    v.pre = std::string(s);

    std::vector<std::string_view> strings;
    WT_TRY(f_.get_string_array("tokenizer.ggml.tokens", &strings, true));
    if (strings.empty() || strings.size() > INT32_MAX) {
      return model_error(WT_ERR_FORMAT, "tokenizer.ggml.tokens has " + std::to_string(strings.size()) + " entries");
    }
    const size_t n_vocab = strings.size();
    v.tokens.assign(strings.begin(), strings.end());

    v.token_types.assign(n_vocab, TokenType::normal);
    if (f_.has_key("tokenizer.ggml.token_type")) {
      GgufArrayView<int32_t> types;
      WT_TRY(f_.get_array("tokenizer.ggml.token_type", &types, true));
      if (types.size() != n_vocab) {
        return model_error(WT_ERR_FORMAT, "vocab/token_type length mismatch: tokenizer.ggml.token_type has " +
                                              std::to_string(types.size()) + " entries, tokens has " +
                                              std::to_string(n_vocab));
      }
      for (size_t i = 0; i < n_vocab; ++i) {
        const int32_t t = types[i];
        if (t < 0 || t > static_cast<int32_t>(TokenType::byte)) {
          return model_error(WT_ERR_FORMAT, "tokenizer.ggml.token_type[" + std::to_string(i) + "] = " +
                                                std::to_string(t) + " is not a token type");
        }
        v.token_types[i] = static_cast<TokenType>(t);
      }
    }
    // SentencePiece merges by score, so it needs them; byte-level BPE by the merge list.
    if (spm || f_.has_key("tokenizer.ggml.scores")) {
      GgufArrayView<float> scores;
      WT_TRY(f_.get_array("tokenizer.ggml.scores", &scores, spm));
      if (scores.size() != n_vocab) {
        return model_error(WT_ERR_FORMAT, "vocab/score length mismatch: tokenizer.ggml.scores has " +
                                              std::to_string(scores.size()) + " entries, tokens has " +
                                              std::to_string(n_vocab));
      }
      if (spm) {  // merge priorities: a NaN would break the heap's order
        v.scores.resize(n_vocab);
        for (size_t i = 0; i < n_vocab; ++i) {
          v.scores[i] = scores[i];
          if (!std::isfinite(v.scores[i]))
            return model_error(WT_ERR_FORMAT, "tokenizer.ggml.scores[" + std::to_string(i) + "] is not finite");
        }
      }
    }
    if (!spm) {
      WT_TRY(f_.get_string_array("tokenizer.ggml.merges", &strings, true));
      v.merges.assign(strings.begin(), strings.end());
    }

    const struct {
      const char* key;
      int32_t* id;
    } specials[] = {
        {"tokenizer.ggml.bos_token_id", &v.bos},     {"tokenizer.ggml.eos_token_id", &v.eos},
        {"tokenizer.ggml.unknown_token_id", &v.unk}, {"tokenizer.ggml.padding_token_id", &v.pad},
        {"tokenizer.ggml.eot_token_id", &v.eot},     {"tokenizer.ggml.eom_token_id", &v.eom},
    };
    // SentencePiece files that omit them: llama.cpp's ids, <unk> 0, <s> 1, </s> 2.
    if (spm && n_vocab > 2) v.unk = 0, v.bos = 1, v.eos = 2;
    for (const auto& sp : specials) {
      int64_t id = -1;
      if (!f_.has_key(sp.key)) continue;
      WT_TRY(f_.get_i64(sp.key, &id, true));
      if (id < 0 || id >= static_cast<int64_t>(n_vocab)) {
        return model_error(WT_ERR_FORMAT, std::string(sp.key) + " = " + std::to_string(id) +
                                              " is out of range (n_vocab " + std::to_string(n_vocab) + ")");
      }
      *sp.id = static_cast<int32_t>(id);
    }
    // SentencePiece files that omit the keys want BOS and the space prefix (llama.cpp's
    // defaults for this tokenizer model; Gemma's files set add_space_prefix false).
    v.add_bos = spm;
    v.add_space_prefix = spm;
    WT_TRY(f_.get_bool("tokenizer.ggml.add_bos_token", &v.add_bos, false));
    WT_TRY(f_.get_bool("tokenizer.ggml.add_eos_token", &v.add_eos, false));
    if (spm) WT_TRY(f_.get_bool("tokenizer.ggml.add_space_prefix", &v.add_space_prefix, false));
    s = "";
    WT_TRY(f_.get_string("tokenizer.chat_template", &s, false));
    v.chat_template = std::string(s);

    // Files often omit the end-of-turn id; chat models mark it as a control token (or, in
    // some converted files, a user-defined one). Phi-3 ends turns with <|end|> and has an
    // <|endoftext|> too (its EOS), so <|end|> is looked for first.
    for (const char* text : {"<|im_end|>", "<|eot_id|>", "<|end|>", "<|endoftext|>", "<end_of_turn>"}) {
      for (size_t i = 0; i < n_vocab && v.eot < 0; ++i) {
        const bool special = v.token_types[i] == TokenType::control || v.token_types[i] == TokenType::user_defined;
        if (special && v.tokens[i] == text) v.eot = static_cast<int32_t>(i);
      }
    }
    // Llama 3.1 ends a turn of tool calls with <|eom_id|> (end of message): a generation ends
    // there too, as llama.cpp's does.
    for (size_t i = 0; i < n_vocab && v.eom < 0; ++i) {
      const bool special = v.token_types[i] == TokenType::control || v.token_types[i] == TokenType::user_defined;
      if (special && v.tokens[i] == "<|eom_id|>") v.eom = static_cast<int32_t>(i);
    }

    m_.hp.n_vocab = static_cast<int32_t>(n_vocab);
    int64_t file_vocab = -1;
    WT_TRY(f_.get_i64(key("vocab_size"), &file_vocab, false));
    if (file_vocab >= 0 && file_vocab != static_cast<int64_t>(n_vocab)) {
      return model_error(WT_ERR_FORMAT, key("vocab_size") + " = " + std::to_string(file_vocab) +
                                            " but tokenizer.ggml.tokens has " + std::to_string(n_vocab) + " entries");
    }
    return Status::ok();
  }

  enum class Kind { f32_only, matrix };

  // Binds one tensor after checking presence, exact shape (missing trailing dims are 1)
  // and type; an absent optional tensor leaves *out empty.
  Status bind(const std::string& name, std::initializer_list<int64_t> shape, Kind kind, bool required,
              Tensor* out) {
    const GgufTensorInfo* info = f_.find_tensor(name);
    if (!info) {
      return required ? model_error(WT_ERR_FORMAT, "missing required tensor '" + name + "'") : Status::ok();
    }
    int64_t want[4] = {1, 1, 1, 1};
    int n = 0;
    for (int64_t d : shape) want[n++] = d;
    for (int i = 0; i < 4; ++i) {
      if (info->ne[i] != want[i]) {
        return model_error(WT_ERR_FORMAT, "tensor '" + name + "' has shape " + shape_string(info->n_dims, info->ne) +
                                              ", expected " + shape_string(n, want));
      }
    }
    if (kind == Kind::f32_only && info->type != static_cast<uint32_t>(DType::f32)) {
      const char* type = ggml_type_name(info->type);
      return model_error(WT_ERR_FORMAT, "tensor '" + name + "' has type " + (type ? type : "?") + ", expected F32");
    }
    size_t bytes = 0;
    WT_TRY(f_.get_tensor(name, out, &bytes));
    // Kernels read f32 and f16 fields in place; that needs at least 4-byte alignment.
    if (reinterpret_cast<uintptr_t>(out->data) % 4 != 0) {
      return model_error(WT_ERR_FORMAT, "tensor '" + name + "' data is not 4-byte aligned");
    }
    used_[static_cast<size_t>(info - f_.tensors().data())] = true;
    m_.n_params += static_cast<uint64_t>(out->n_elems());
    m_.weight_bytes += bytes;
    return Status::ok();
  }

  Status load_weights(const LoadOptions& options) {
    const Hparams& hp = m_.hp;
    const int64_t embd = hp.n_embd, ff = hp.n_ff, vocab = hp.n_vocab;
    const int64_t q_out = static_cast<int64_t>(hp.n_head) * hp.head_dim;
    const int64_t kv_out = static_cast<int64_t>(hp.n_head_kv) * hp.head_dim;
    const bool biases_required = hp.arch == Arch::qwen2;
    // Bound only where the graph reads them: elsewhere unused, so refused.
    const bool qk_norm = hp.arch == Arch::qwen3 || hp.arch == Arch::gemma3;
    const bool post_norms = hp.arch == Arch::gemma3;

    WT_TRY(bind("token_embd.weight", {embd, vocab}, Kind::matrix, true, &m_.tok_embd));
    WT_TRY(bind("output_norm.weight", {embd}, Kind::f32_only, true, &m_.output_norm));
    WT_TRY(bind("output.weight", {embd, vocab}, Kind::matrix, false, &m_.output));
    if (m_.output.empty()) {
      m_.output = m_.tok_embd;
      m_.tied_output = true;
    }
    WT_TRY(bind("rope_freqs.weight", {hp.n_rot / 2}, Kind::f32_only, false, &m_.rope_freqs));
    if (!m_.rope_freqs.empty() && options.rope.set)
      return error(WT_ERR_UNSUPPORTED, "rope_scaling: the file's rope_freqs.weight (Llama 3.1's scaling) cannot be replaced");
    if (!m_.rope_freqs.empty() && hp.rope_scaling == RopeScaling::yarn)
      return model_error(WT_ERR_UNSUPPORTED, "YaRN with a rope_freqs.weight tensor is not supported");
    if (!m_.rope_freqs.empty()) {
      const float* freqs = static_cast<const float*>(m_.rope_freqs.data);
      for (int32_t i = 0; i < hp.n_rot / 2; ++i) {
        if (!std::isfinite(freqs[i]) || freqs[i] <= 0.0f) {
          return model_error(WT_ERR_FORMAT, "rope_freqs.weight[" + std::to_string(i) + "] = " +
                                                std::to_string(freqs[i]) + " must be finite and > 0");
        }
      }
    }

    WT_TRY(load_rope_factors(options.rope.set));

    m_.layers.assign(static_cast<size_t>(hp.n_layer), LayerWeights{});
    for (int32_t l = 0; l < hp.n_layer; ++l) {
      LayerWeights& w = m_.layers[static_cast<size_t>(l)];
      const std::string p = "blk." + std::to_string(l) + ".";
      WT_TRY(bind(p + "attn_norm.weight", {embd}, Kind::f32_only, true, &w.attn_norm));
      // phi3: one matrix of q, k and v rows (llama.cpp reads separate ones too), whose row
      // ranges are the three matrices: views, no copy.
      Tensor qkv;
      if (hp.arch == Arch::phi3) WT_TRY(bind(p + "attn_qkv.weight", {embd, q_out + 2 * kv_out}, Kind::matrix, false, &qkv));
      if (!qkv.empty()) {
        w.wq = row_slice(qkv, 0, q_out), w.wk = row_slice(qkv, q_out, kv_out), w.wv = row_slice(qkv, q_out + kv_out, kv_out);
      } else {
        WT_TRY(bind(p + "attn_q.weight", {embd, q_out}, Kind::matrix, true, &w.wq));
        WT_TRY(bind(p + "attn_k.weight", {embd, kv_out}, Kind::matrix, true, &w.wk));
        WT_TRY(bind(p + "attn_v.weight", {embd, kv_out}, Kind::matrix, true, &w.wv));
      }
      WT_TRY(bind(p + "attn_q.bias", {q_out}, Kind::f32_only, biases_required, &w.bq));
      WT_TRY(bind(p + "attn_k.bias", {kv_out}, Kind::f32_only, biases_required, &w.bk));
      WT_TRY(bind(p + "attn_v.bias", {kv_out}, Kind::f32_only, biases_required, &w.bv));
      if (qk_norm) {
        WT_TRY(bind(p + "attn_q_norm.weight", {hp.head_dim}, Kind::f32_only, true, &w.q_norm));
        WT_TRY(bind(p + "attn_k_norm.weight", {hp.head_dim}, Kind::f32_only, true, &w.k_norm));
      }
      WT_TRY(bind(p + "attn_output.weight", {q_out, embd}, Kind::matrix, true, &w.wo));
      WT_TRY(bind(p + "ffn_norm.weight", {embd}, Kind::f32_only, true, &w.ffn_norm));
      if (hp.arch == Arch::phi3) {  // gate rows, then up rows, in one matrix (HF's gate_up_proj)
        Tensor gate_up;
        WT_TRY(bind(p + "ffn_up.weight", {embd, 2 * ff}, Kind::matrix, true, &gate_up));
        w.w_gate = row_slice(gate_up, 0, ff), w.w_up = row_slice(gate_up, ff, ff);
      } else {
        WT_TRY(bind(p + "ffn_gate.weight", {embd, ff}, Kind::matrix, true, &w.w_gate));
        WT_TRY(bind(p + "ffn_up.weight", {embd, ff}, Kind::matrix, true, &w.w_up));
      }
      WT_TRY(bind(p + "ffn_down.weight", {ff, embd}, Kind::matrix, true, &w.w_down));
      if (post_norms) {
        WT_TRY(bind(p + "post_attention_norm.weight", {embd}, Kind::f32_only, true, &w.attn_post_norm));
        WT_TRY(bind(p + "post_ffw_norm.weight", {embd}, Kind::f32_only, true, &w.ffn_post_norm));
      }
      if (options.progress &&
          !options.progress(static_cast<float>(l + 1) / static_cast<float>(hp.n_layer), options.progress_user)) {
        return model_error(WT_ERR_ABORTED, "load aborted by the progress callback");
      }
    }

    for (size_t i = 0; i < used_.size(); ++i) {
      if (!used_[i]) {
        return model_error(WT_ERR_UNSUPPORTED, "tensor '" + std::string(f_.tensors()[i].name) +
                                                   "' is not used by Whittle's " + m_.arch_name +
                                                   " graph; running without it would be wrong");
      }
    }
    return Status::ok();
  }

  // LongRoPE's two factor tensors (Phi-3 128k, Phi-3.5): both or neither; finite, > 0.
  Status load_rope_factors(bool overridden) {
    const int32_t half = m_.hp.n_rot / 2;
    Tensor t[2];
    WT_TRY(bind("rope_factors_short.weight", {half}, Kind::f32_only, false, &t[0]));
    WT_TRY(bind("rope_factors_long.weight", {half}, Kind::f32_only, false, &t[1]));
    if (t[0].empty() && t[1].empty()) return Status::ok();
    if (overridden) return error(WT_ERR_UNSUPPORTED, "rope_scaling: the file's LongRoPE factors cannot be replaced");
    if (t[0].empty() || t[1].empty())
      return model_error(WT_ERR_FORMAT, "LongRoPE needs both rope_factors_short.weight and rope_factors_long.weight");
    if (!m_.rope_freqs.empty() || m_.hp.rope_scaling != RopeScaling::none)
      return model_error(WT_ERR_UNSUPPORTED, "LongRoPE factors beside another rope scaling are not supported");
    // Short factors up to the original context, long ones beyond (llama.cpp's n_ctx_orig_yarn,
    // whose default is the trained context).
    m_.hp.rope_orig_ctx = m_.hp.n_ctx_train;
    WT_TRY(get_int(key("rope.scaling.original_context_length"), &m_.hp.rope_orig_ctx, false, 1, INT32_MAX));
    std::vector<float>* out[2] = {&m_.rope_factors_short, &m_.rope_factors_long};
    for (int k = 0; k < 2; ++k) {
      const float* f = static_cast<const float*>(t[k].data);
      out[k]->assign(f, f + half);
      for (int32_t i = 0; i < half; ++i)
        if (!std::isfinite(f[i]) || f[i] <= 0.0f)
          return model_error(WT_ERR_FORMAT, std::string(k ? "rope_factors_long" : "rope_factors_short") + ".weight[" +
                                                std::to_string(i) + "] = " + std::to_string(f[i]) +
                                                " must be finite and > 0");
    }
    return Status::ok();
  }

  const GgufFile& f_;
  Model& m_;
  std::vector<bool> used_;  // per tensor of the file: bound by the graph
};

}  // namespace

Status load_model_from_gguf(std::shared_ptr<GgufFile> file, const LoadOptions& options,
                            std::unique_ptr<Model>* out) {
  if (!file || !out) return error(WT_ERR_INVALID_ARGUMENT, "model: null file or output");
  auto model = std::make_unique<Model>();
  WT_TRY(Loader(*file, *model).load(options));
  model->file = std::move(file);
  *out = std::move(model);
  return Status::ok();
}

Status load_model(const std::string& path, const LoadOptions& options, std::unique_ptr<Model>* out) {
  std::shared_ptr<GgufFile> file;
  WT_TRY(GgufFile::open(path, &file));
  return load_model_from_gguf(std::move(file), options, out);
}

}  // namespace wt
