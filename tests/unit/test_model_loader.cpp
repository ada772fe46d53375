// The model loader over generated GGUF files: each architecture's hyperparameters and tensors
// (qwen2, qwen3, gemma3, phi3, rope scaling), what it refuses (a status and a message naming the
// key or tensor), and the vocabularies (gpt2 and SentencePiece). The GGUF reader itself:
// test_gguf.cpp.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/model/rope_scaling.h"
#include "runtime/model/tokenizer.h"
#include "support/gguf_load.h"
#include "support/gguf_writer.h"

using namespace wt;
using namespace wt::test;

namespace {

// The tiny model of another architecture (gguf_writer.h).
TinyModelOptions arch_options(const char* arch) {
  TinyModelOptions o;
  o.arch = arch;
  return o;
}

// A rope scaling asked for at load (wt_model_params.rope_scaling).
LoadOptions rope_override(wt::RopeScaling scaling, float factor) {
  LoadOptions opts;
  opts.rope.set = true;
  opts.rope.scaling = scaling;
  opts.rope.factor = factor;
  return opts;
}

// The tiny model with the SentencePiece vocabulary (gguf_writer.h).
TinyModelOptions spm_options() {
  TinyModelOptions o;
  o.spm_vocab = true;
  return o;
}

// The tiny model as a phi3 file has it: each layer's q, k, v rows as one attn_qkv and its
// gate then up rows as one ffn_up (the f32 rows of make_tiny_llama's matrices, concatenated).
GgufWriter phi3_writer(bool fused_qkv = true) {
  GgufWriter w = make_tiny_llama(arch_options("phi3"));
  const auto fuse = [&](const std::string& p, std::initializer_list<const char*> parts, const char* name) {
    std::vector<uint8_t> data;
    uint64_t rows = 0, cols = 0;
    for (const char* part : parts) {
      const GgufWriter::TensorEntry* t = w.find_tensor(p + part + ".weight");
      REQUIRE(t);
      data.insert(data.end(), t->data.begin(), t->data.end());
      cols = t->dims[0], rows += t->dims[1];
    }
    for (const char* part : parts) w.remove_tensor(p + part + ".weight");
    w.add_tensor(p + name + ".weight", ggml::f32, {cols, rows}, data);
  };
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    if (fused_qkv) fuse(p, {"attn_q", "attn_k", "attn_v"}, "attn_qkv");
    fuse(p, {"ffn_gate", "ffn_up"}, "ffn_up");
  }
  return w;
}

}  // namespace

TEST_CASE("gguf: tiny qwen2 with biases, tied output and 64-byte alignment loads") {
  TinyModelOptions o;
  o.arch = "qwen2";
  o.tied_output = true;
  GgufWriter w = make_tiny_llama(o);
  set_u32(w, "general.alignment", 64);
  w.set_layout_alignment(64);
  Loaded l = load_bytes(w.build());
  INFO(l.status.message());
  REQUIRE(l.status.is_ok());
  CHECK(l.model->hp.arch == Arch::qwen2);
  CHECK(l.model->hp.rope_type == RopeType::neox);
  CHECK(l.model->tied_output);
  CHECK(l.model->output.data == l.model->tok_embd.data);
  CHECK(l.model->layers[1].bv.ne[0] == 32);
  // Tensor offsets are 64-aligned within the data section (the buffer itself need not be).
  CHECK((reinterpret_cast<uintptr_t>(l.model->layers[1].w_up.data) -
         reinterpret_cast<uintptr_t>(l.model->tok_embd.data)) % 64 == 0);
}

TEST_CASE("gguf: tiny qwen3 binds its per-head query and key norms") {
  TinyModelOptions o;
  o.arch = "qwen3";
  Loaded l = load_bytes(make_tiny_llama(o).build());
  INFO(l.status.message());
  REQUIRE(l.status.is_ok());
  CHECK(l.model->hp.arch == Arch::qwen3);
  CHECK(l.model->hp.rope_type == RopeType::neox);
  CHECK(l.model->layers[1].q_norm.ne[0] == 16);  // head_dim, not n_embd
  CHECK(l.model->layers[1].k_norm.ne[0] == 16);
  CHECK(l.model->layers[1].bq.empty());
}

TEST_CASE("gguf: rope scaling from keys and from a rope_freqs tensor") {
  SUBCASE("llama3 keys") {
    GgufWriter w = make_tiny_llama();
    w.add_f32("llama.rope.scaling.factor", 8.0f).add_f32("llama.rope.scaling.low_freq_factor", 1.0f);
    w.add_f32("llama.rope.scaling.high_freq_factor", 4.0f).add_u32("llama.rope.scaling.original_context_length", 8192);
    Loaded l = load_bytes(w.build());
    REQUIRE(l.status.is_ok());
    CHECK(l.model->hp.rope_scaling == RopeScaling::llama3);
    CHECK(l.model->hp.rope_factor == 8.0f);
    CHECK(l.model->hp.rope_orig_ctx == 8192);
  }
  SUBCASE("linear type") {
    GgufWriter w = make_tiny_llama();
    w.add_string("llama.rope.scaling.type", "linear").add_f32("llama.rope.scaling.factor", 2.0f);
    Loaded l = load_bytes(w.build());
    REQUIRE(l.status.is_ok());
    CHECK(l.model->hp.rope_scaling == RopeScaling::linear);
    CHECK(l.model->hp.rope_factor == 2.0f);
  }
  SUBCASE("yarn keys") {
    GgufWriter w = make_tiny_llama();  // context_length 512
    w.add_string("llama.rope.scaling.type", "yarn").add_f32("llama.rope.scaling.factor", 4.0f);
    SUBCASE("defaults: the file's context is the original one, betas 32 and 1") {
      Loaded l = load_bytes(w.build());
      REQUIRE_MESSAGE(l.status.is_ok(), l.status.message());
      const Hparams& hp = l.model->hp;
      CHECK(hp.rope_scaling == RopeScaling::yarn);
      CHECK(hp.rope_factor == 4.0f);
      CHECK(hp.rope_orig_ctx == 512);
      CHECK(hp.n_ctx_train == 2048);  // factor x the original context
      CHECK(hp.yarn_beta_fast == 32.0f);
      CHECK(hp.yarn_beta_slow == 1.0f);
      CHECK(hp.yarn_attn_factor == 1.0f);
    }
    SUBCASE("every key") {
      w.add_u32("llama.rope.scaling.original_context_length", 256).add_f32("llama.rope.scaling.yarn_beta_fast", 16.0f);
      w.add_f32("llama.rope.scaling.yarn_beta_slow", 2.0f).add_f32("llama.rope.scaling.yarn_attn_factor", 1.5f);
      w.add_f32("llama.rope.scaling.yarn_ext_factor", 1.0f);
      Loaded l = load_bytes(w.build());
      REQUIRE_MESSAGE(l.status.is_ok(), l.status.message());
      const Hparams& hp = l.model->hp;
      CHECK(hp.rope_orig_ctx == 256);
      CHECK(hp.n_ctx_train == 1024);
      CHECK(hp.yarn_beta_fast == 16.0f);
      CHECK(hp.yarn_beta_slow == 2.0f);
      CHECK(hp.yarn_attn_factor == 1.5f);
    }
    SUBCASE("a partial ramp") {
      w.add_f32("llama.rope.scaling.yarn_ext_factor", 0.5f);
      expect_error(load_status(w), WT_ERR_UNSUPPORTED, "yarn_ext_factor = 0.5");
    }
    SUBCASE("DeepSeek's variant") {
      w.add_f32("llama.rope.scaling.yarn_log_multiplier", 0.1f);
      expect_error(load_status(w), WT_ERR_UNSUPPORTED, "DeepSeek's YaRN");
    }
    SUBCASE("betas the wrong way round") {
      w.add_f32("llama.rope.scaling.yarn_beta_fast", 1.0f).add_f32("llama.rope.scaling.yarn_beta_slow", 32.0f);
      expect_error(load_status(w), WT_ERR_FORMAT, "yarn_beta_fast must exceed");
    }
    SUBCASE("rope over part of a head") {
      w.add_u32("llama.rope.dimension_count", 8);
      expect_error(load_status(w), WT_ERR_UNSUPPORTED, "YaRN with rope over 8 of 16 head dimensions");
    }
    SUBCASE("a rope_freqs tensor too") {
      w.add_tensor_f32("rope_freqs.weight", {8}, std::vector<float>(8, 1.0f));
      expect_error(load_status(w), WT_ERR_UNSUPPORTED, "YaRN with a rope_freqs.weight tensor");
    }
  }
  SUBCASE("a scaling asked for at load replaces the file's") {
    GgufWriter w = make_tiny_llama();
    w.add_string("llama.rope.scaling.type", "linear").add_f32("llama.rope.scaling.factor", 2.0f);
    LoadOptions o;
    o.rope = RopeOverride{.set = true, .scaling = RopeScaling::yarn, .factor = 8.0f, .orig_ctx = 0};
    Loaded l = load_bytes(w.build(), o);
    REQUIRE_MESSAGE(l.status.is_ok(), l.status.message());
    CHECK(l.model->hp.rope_scaling == RopeScaling::yarn);
    CHECK(l.model->hp.rope_factor == 8.0f);
    CHECK(l.model->hp.rope_orig_ctx == 512);
    CHECK(l.model->hp.n_ctx_train == 4096);
    o.rope = RopeOverride{.set = true, .scaling = RopeScaling::none};
    Loaded none = load_bytes(w.build(), o);
    REQUIRE(none.status.is_ok());
    // Every scaling field as a file without scaling leaves it (states carry over).
    Loaded plain = load_bytes(make_tiny_llama().build());
    REQUIRE(plain.status.is_ok());
    const Hparams &a = none.model->hp, &b = plain.model->hp;
    CHECK(a.rope_scaling == b.rope_scaling);
    CHECK(a.rope_factor == b.rope_factor);
    CHECK(a.rope_low_freq_factor == b.rope_low_freq_factor);
    CHECK(a.rope_high_freq_factor == b.rope_high_freq_factor);
    CHECK(a.rope_orig_ctx == b.rope_orig_ctx);
    CHECK(a.yarn_beta_fast == b.yarn_beta_fast);
    CHECK(a.yarn_beta_slow == b.yarn_beta_slow);
    CHECK(a.yarn_attn_factor == b.yarn_attn_factor);
    CHECK(a.n_ctx_train == b.n_ctx_train);
    o.rope = RopeOverride{.set = true, .scaling = RopeScaling::yarn, .factor = 0.5f};
    expect_error(load_bytes(w.build(), o).status, WT_ERR_INVALID_ARGUMENT, "rope_scaling_factor 0.5");
    o.rope = RopeOverride{.set = true, .scaling = RopeScaling::linear, .factor = 2.0f, .orig_ctx = -1};
    expect_error(load_bytes(w.build(), o).status, WT_ERR_INVALID_ARGUMENT, "rope_orig_ctx must be >= 0");
    GgufWriter f = make_tiny_llama();
    f.add_tensor_f32("rope_freqs.weight", {8}, std::vector<float>(8, 1.0f));
    o.rope = RopeOverride{.set = true, .scaling = RopeScaling::none};
    expect_error(load_bytes(f.build(), o).status, WT_ERR_UNSUPPORTED, "rope_freqs.weight");
  }
  SUBCASE("rope_freqs tensor") {
    GgufWriter w = make_tiny_llama();
    w.add_tensor_f32("rope_freqs.weight", {8}, {1, 1, 1, 2, 4, 8, 8, 8});
    Loaded l = load_bytes(w.build());
    REQUIRE(l.status.is_ok());
    REQUIRE(!l.model->rope_freqs.empty());
    CHECK(static_cast<const float*>(l.model->rope_freqs.data)[4] == 4.0f);
  }
  SUBCASE("rope_freqs with the wrong length") {
    GgufWriter w = make_tiny_llama();
    w.add_tensor_f32("rope_freqs.weight", {16}, std::vector<float>(16, 1.0f));
    expect_error(load_status(w), WT_ERR_FORMAT, "tensor 'rope_freqs.weight' has shape [16], expected [8]");
  }
}

TEST_CASE("gguf: model validation") {
  GgufWriter w = make_tiny_llama();
  SUBCASE("unsupported architecture") {
    w.remove_kv("general.architecture");
    w.add_string("general.architecture", "gpt2");
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "unsupported architecture 'gpt2'");
  }
  SUBCASE("an architecture name with a NUL is shown whole, the NUL as '?'") {
    w.remove_kv("general.architecture");
    w.add_string("general.architecture", std::string("lla\0ma", 6));
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "unsupported architecture 'lla?ma' (supported: llama, qwen2, qwen3, smollm3, gemma3, phi3)");
  }
  SUBCASE("missing required key") {
    w.remove_kv("llama.block_count");
    expect_error(load_status(w), WT_ERR_FORMAT, "missing required key 'llama.block_count'");
  }
  SUBCASE("layer count out of range") {
    set_u32(w, "llama.block_count", 0);
    expect_error(load_status(w), WT_ERR_FORMAT, "llama.block_count = 0 is out of range [1, 1024]");
  }
  SUBCASE("head count inconsistent") {
    set_u32(w, "llama.attention.head_count_kv", 3);
    expect_error(load_status(w), WT_ERR_FORMAT, "head count inconsistent");
  }
  SUBCASE("n_embd not a multiple of n_head") {
    set_u32(w, "llama.attention.head_count", 5);
    set_u32(w, "llama.attention.head_count_kv", 5);
    expect_error(load_status(w), WT_ERR_FORMAT, "llama.embedding_length = 64 is not a multiple of");
  }
  SUBCASE("missing required tensor") {
    w.remove_tensor("blk.1.ffn_down.weight");
    expect_error(load_status(w), WT_ERR_FORMAT, "missing required tensor 'blk.1.ffn_down.weight'");
  }
  SUBCASE("wrong tensor shape") {
    w.remove_tensor("blk.0.attn_k.weight");
    w.add_tensor_f32("blk.0.attn_k.weight", {64, 64}, std::vector<float>(64 * 64, 0.0f));
    expect_error(load_status(w), WT_ERR_FORMAT, "tensor 'blk.0.attn_k.weight' has shape [64, 64], expected [64, 32]");
  }
  SUBCASE("norm that is not F32") {
    w.remove_tensor("output_norm.weight");
    w.add_tensor("output_norm.weight", ggml::f16, {64}, std::vector<uint8_t>(128, 0));
    expect_error(load_status(w), WT_ERR_FORMAT, "tensor 'output_norm.weight' has type F16, expected F32");
  }
  SUBCASE("a tensor the graph would ignore") {
    w.add_tensor_f32("blk.0.attn_output.bias", {64}, std::vector<float>(64, 0.0f));
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "tensor 'blk.0.attn_output.bias' is not used");
  }
  SUBCASE("qwen2 without its biases") {
    GgufWriter q = make_tiny_llama(arch_options("qwen2"));
    q.remove_tensor("blk.1.attn_v.bias");
    expect_error(load_status(q), WT_ERR_FORMAT, "missing required tensor 'blk.1.attn_v.bias'");
  }
  SUBCASE("qwen3 without a head norm") {
    GgufWriter q = make_tiny_llama(arch_options("qwen3"));
    q.remove_tensor("blk.1.attn_k_norm.weight");
    expect_error(load_status(q), WT_ERR_FORMAT, "missing required tensor 'blk.1.attn_k_norm.weight'");
  }
  SUBCASE("a head norm outside qwen3") {
    w.add_tensor_f32("blk.0.attn_q_norm.weight", {16}, std::vector<float>(16, 1.0f));
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "tensor 'blk.0.attn_q_norm.weight' is not used");
  }
  SUBCASE("progress callback aborts") {
    LoadOptions opts;
    opts.progress = [](float, void*) { return false; };
    expect_error(load_bytes(w.build(), opts).status, WT_ERR_ABORTED, "aborted");
  }
}

TEST_CASE("gguf: Phi-3's end of turn, <|end|>, before its <|endoftext|>, also as a user-defined token") {
  GgufWriter w = make_tiny_llama();
  std::vector<std::string> tokens;
  for (int b = 0; b < kTinyVocab; ++b) tokens.push_back(std::to_string(b));  // any distinct texts
  tokens[259] = "<|endoftext|>", tokens[261] = "<|end|>";
  std::vector<int32_t> types(kTinyVocab, 1);
  types[259] = 3;
  for (const int32_t end_type : {3, 4}) {  // control, user-defined
    CAPTURE(end_type);
    types[261] = end_type;
    w.remove_kv("tokenizer.ggml.tokens"), w.remove_kv("tokenizer.ggml.token_type");
    w.add_string_array("tokenizer.ggml.tokens", tokens).add_i32_array("tokenizer.ggml.token_type", types);
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK(r.model->vocab.eot == 261);
  }
  types[261] = 1;  // a normal token of that text is no end of turn
  w.remove_kv("tokenizer.ggml.tokens"), w.remove_kv("tokenizer.ggml.token_type");
  w.add_string_array("tokenizer.ggml.tokens", tokens).add_i32_array("tokenizer.ggml.token_type", types);
  Loaded r = load_bytes(w.build());
  REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
  CHECK(r.model->vocab.eot == 259);
}

TEST_CASE("gguf: vocabulary validation") {
  GgufWriter w = make_tiny_llama();
  SUBCASE("vocab/score length mismatch") {
    w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(10, 0.0f));
    expect_error(load_status(w), WT_ERR_FORMAT, "vocab/score length mismatch");
  }
  SUBCASE("token_type length mismatch") {
    w.remove_kv("tokenizer.ggml.token_type");
    w.add_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(kTinyVocab - 1, 1));
    expect_error(load_status(w), WT_ERR_FORMAT, "vocab/token_type length mismatch");
  }
  SUBCASE("special token id >= n_vocab") {
    set_u32(w, "tokenizer.ggml.eos_token_id", kTinyVocab);
    expect_error(load_status(w), WT_ERR_FORMAT, "tokenizer.ggml.eos_token_id = 262 is out of range");
  }
  SUBCASE("unsupported tokenizer model") {
    w.remove_kv("tokenizer.ggml.model");
    w.add_string("tokenizer.ggml.model", "t5");
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "tokenizer 't5' is not supported");
  }
  SUBCASE("a SentencePiece vocabulary without scores") {
    GgufWriter spm = make_tiny_llama(spm_options());
    spm.remove_kv("tokenizer.ggml.scores");
    expect_error(load_status(spm), WT_ERR_FORMAT, "tokenizer.ggml.scores");
  }
  SUBCASE("a SentencePiece score that is not finite") {
    GgufWriter spm = make_tiny_llama(spm_options());
    spm.remove_kv("tokenizer.ggml.scores");
    std::vector<float> scores(kTinyVocab, 0.0f);
    scores[260] = std::nanf("");
    spm.add_f32_array("tokenizer.ggml.scores", scores);
    expect_error(load_status(spm), WT_ERR_FORMAT, "tokenizer.ggml.scores[260] is not finite");
  }
  SUBCASE("vocab_size disagrees with the token list") {
    w.add_u32("llama.vocab_size", 300);
    expect_error(load_status(w), WT_ERR_FORMAT, "llama.vocab_size = 300");
  }
  SUBCASE("token list of the wrong type") {
    w.remove_kv("tokenizer.ggml.tokens");
    w.add_i32_array("tokenizer.ggml.tokens", {1, 2, 3});
    expect_error(load_status(w), WT_ERR_FORMAT, "'tokenizer.ggml.tokens' has type array of i32");
  }
}

TEST_CASE("gguf: gemma3's hyperparameters, and what is refused") {
  GgufWriter w = make_tiny_llama(arch_options("gemma3"));
  SUBCASE("loads: window, pattern, rope bases, embedding scale, gelu") {
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    const wt::Hparams& hp = r.model->hp;
    CHECK(hp.arch == wt::Arch::gemma3);
    CHECK(hp.swa_window == 16);
    CHECK(hp.swa_pattern == 6);
    CHECK(hp.rope_theta_swa == 10000.0f);
    CHECK(hp.embed_scale == doctest::Approx(8.0));  // sqrt(64)
    CHECK(hp.gelu);
    CHECK(hp.attn_scale_dim == 0);
    CHECK(wt::layer_is_swa(hp, 0));
    CHECK_FALSE(wt::layer_is_swa(hp, 5));
    CHECK_FALSE(r.model->layers[1].ffn_post_norm.empty());
  }
  SUBCASE("a pattern from the file") {
    w.add_u32("gemma3.attention.sliding_window_pattern", 2);
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK_FALSE(wt::layer_is_swa(r.model->hp, 1));
  }
  SUBCASE("no window") {
    w.remove_kv("gemma3.attention.sliding_window");
    expect_error(load_status(w), WT_ERR_FORMAT, "gemma3.attention.sliding_window");
  }
  SUBCASE("a missing post-block norm") {
    w.remove_tensor("blk.1.post_ffw_norm.weight");
    expect_error(load_status(w), WT_ERR_FORMAT, "blk.1.post_ffw_norm.weight");
  }
  SUBCASE("Gemma 2's soft-capping") {
    w.add_f32("gemma3.final_logit_softcapping", 30.0f);
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "soft-capping");
  }
  SUBCASE("YaRN asked for at load") {
    expect_error(load_bytes(w.build(), rope_override(wt::RopeScaling::yarn, 2.0f)).status, WT_ERR_UNSUPPORTED,
                 "sliding-window");
  }
  SUBCASE("post-block norms outside gemma3 are refused as unused") {
    GgufWriter llama = make_tiny_llama();
    llama.add_tensor_f32("blk.0.post_ffw_norm.weight", {64}, std::vector<float>(64, 1.0f));
    expect_error(load_status(llama), WT_ERR_UNSUPPORTED, "'blk.0.post_ffw_norm.weight' is not used");
  }
}

TEST_CASE("gguf: phi3's fused matrices are row views, and its LongRoPE factors") {
  GgufWriter w = phi3_writer();
  const size_t row = 64 * sizeof(float);  // the tiny model's rows: 64 f32 inputs
  SUBCASE("q, k, v and gate, up are row ranges of the fused matrices") {
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK(r.model->hp.arch == wt::Arch::phi3);
    CHECK(r.model->hp.rope_type == wt::RopeType::neox);
    const wt::LayerWeights& lw = r.model->layers[1];
    CHECK(lw.wq.ne[1] == 64);
    CHECK(lw.wk.ne[1] == 32);
    CHECK(lw.wv.ne[1] == 32);
    CHECK(static_cast<char*>(lw.wk.data) == static_cast<char*>(lw.wq.data) + 64 * row);
    CHECK(static_cast<char*>(lw.wv.data) == static_cast<char*>(lw.wk.data) + 32 * row);
    CHECK(lw.w_gate.ne[1] == 128);
    CHECK(static_cast<char*>(lw.w_up.data) == static_cast<char*>(lw.w_gate.data) + 128 * row);
    CHECK(lw.wv.nb[2] == 32 * row);
    CHECK(r.model->rope_factors_long.empty());
  }
  SUBCASE("separate q, k and v matrices load too (llama.cpp reads both)") {
    Loaded r = load_bytes(phi3_writer(false).build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK(r.model->layers[0].wk.ne[1] == 32);
    CHECK(r.model->layers[0].w_up.ne[1] == 128);
  }
  SUBCASE("a fused matrix of the wrong size") {
    w.find_tensor("blk.1.attn_qkv.weight")->dims[1] = 127;
    expect_error(load_status(w), WT_ERR_FORMAT, "'blk.1.attn_qkv.weight' has shape [64, 127], expected [64, 128]");
  }
  SUBCASE("an unfused gate beside the fused up is refused as unused") {
    w.add_tensor_f32("blk.0.ffn_gate.weight", {64, 128}, std::vector<float>(64 * 128, 0.0f));
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "'blk.0.ffn_gate.weight' is not used");
  }
  SUBCASE("LongRoPE: the factors by the context's size, the attention factor on cos and sin") {
    w.add_u32("phi3.rope.scaling.original_context_length", 128);
    w.add_f32("phi3.rope.scaling.attn_factor", 1.25f);
    w.add_tensor_f32("rope_factors_short.weight", {8}, std::vector<float>(8, 1.5f));
    w.add_tensor_f32("rope_factors_long.weight", {8}, std::vector<float>(8, 4.0f));
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK(r.model->hp.rope_orig_ctx == 128);
    CHECK(wt::longrope_factors(*r.model, 128) == &r.model->rope_factors_short);
    CHECK(wt::longrope_factors(*r.model, 129) == &r.model->rope_factors_long);
    CHECK(r.model->rope_factors_long[7] == 4.0f);
    // rope's own factor (RopeOp::mscale), not the softmax scale's: the rotated dims only
    CHECK(r.model->hp.rope_attn_factor == 1.25f);
    CHECK(wt::attention_scale(r.model->hp) == 1.0f / 4.0f);  // heads of 16
    SUBCASE("without the original context: the trained one") {
      GgufWriter v = phi3_writer();
      v.add_tensor_f32("rope_factors_short.weight", {8}, std::vector<float>(8, 1.5f));
      v.add_tensor_f32("rope_factors_long.weight", {8}, std::vector<float>(8, 4.0f));
      Loaded d = load_bytes(v.build());
      REQUIRE_MESSAGE(d.status.is_ok(), d.status.message());
      CHECK(d.model->hp.rope_orig_ctx == 512);
    }
  }
  SUBCASE("LongRoPE refusals, and what loads beside them") {
    w.add_tensor_f32("rope_factors_long.weight", {8}, std::vector<float>(8, 4.0f));
    SUBCASE("one of the two") { expect_error(load_status(w), WT_ERR_FORMAT, "rope_factors_short.weight"); }
    SUBCASE("a factor that is not > 0") {
      std::vector<float> bad(8, 1.0f);
      bad[3] = 0.0f;
      w.add_tensor_f32("rope_factors_short.weight", {8}, bad);
      expect_error(load_status(w), WT_ERR_FORMAT, "rope_factors_short.weight[3]");
    }
    SUBCASE("a rope scaling asked for at load") {
      w.add_tensor_f32("rope_factors_short.weight", {8}, std::vector<float>(8, 1.0f));
      expect_error(load_bytes(w.build(), rope_override(wt::RopeScaling::linear, 2.0f)).status, WT_ERR_UNSUPPORTED,
                   "LongRoPE");
    }
    SUBCASE("the attention factor with rope over part of a head (Phi-4-mini's)") {
      GgufWriter partial = phi3_writer();
      partial.add_tensor_f32("rope_factors_short.weight", {4}, std::vector<float>(4, 1.0f));
      partial.add_tensor_f32("rope_factors_long.weight", {4}, std::vector<float>(4, 4.0f));
      partial.add_f32("phi3.rope.scaling.attn_factor", 1.2f);
      partial.add_u32("phi3.rope.dimension_count", 8);
      Loaded r = load_bytes(partial.build());
      REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
      CHECK(r.model->rope_factors_long.size() == 4);
      CHECK(r.model->hp.n_rot == 8);
      CHECK(r.model->hp.rope_attn_factor == 1.2f);
    }
    SUBCASE("an original context without factors is not read (the other scalings' states keep their fingerprint)") {
      GgufWriter plain = make_tiny_llama();
      plain.add_u32("llama.rope.scaling.original_context_length", 64);
      Loaded r = load_bytes(plain.build());
      REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
      CHECK(r.model->hp.rope_orig_ctx == wt::Hparams{}.rope_orig_ctx);
    }
  }
}

TEST_CASE("gguf: a SentencePiece vocabulary (tokenizer model llama)") {
  GgufWriter w = make_tiny_llama(spm_options());
  SUBCASE("llama.cpp's defaults: BOS and the space prefix") {
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    const wt::Vocab& v = r.model->vocab;
    std::unique_ptr<wt::Tokenizer> tok;
    REQUIRE(wt::Tokenizer::create(v, &tok).is_ok());
    CHECK(v.model == "llama");
    CHECK(v.add_bos);
    CHECK(v.add_space_prefix);
    CHECK(v.scores.size() == static_cast<size_t>(kTinyVocab));
    CHECK(v.scores[kTinyVocab - 1] == -1.0f);
    CHECK(v.merges.empty());
    std::vector<int32_t> ids;
    REQUIRE(tok->encode("e e", true, true, &ids).is_ok());
    CHECK(ids == std::vector<int32_t>{1, kTinyVocab - 1, kTinyVocab - 1});  // <s> "▁e" "▁e"
    CHECK(tok->token_bytes(kTinyVocab - 1) == " e");
  }
  SUBCASE("the file's keys win (Gemma's files: no space prefix)") {
    w.add_bool("tokenizer.ggml.add_space_prefix", false);
    w.add_bool("tokenizer.ggml.add_bos_token", false);
    Loaded r = load_bytes(w.build());
    REQUIRE_MESSAGE(r.status.is_ok(), r.status.message());
    CHECK_FALSE(r.model->vocab.add_space_prefix);
    std::unique_ptr<wt::Tokenizer> tok;
    REQUIRE(wt::Tokenizer::create(r.model->vocab, &tok).is_ok());
    std::vector<int32_t> ids;
    REQUIRE(tok->encode("e e", true, true, &ids).is_ok());
    CHECK(ids == std::vector<int32_t>{kTinyVocab - 2, kTinyVocab - 1});  // "e" "▁e"
  }
}
