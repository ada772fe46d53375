// GGUF reader and model loader: the real default model, a tiny generated one, and a set of
// handcrafted broken files, each of which must fail with the right status and a message
// naming what is wrong — never crash, never succeed.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/model/gguf.h"
#include "runtime/model/model.h"
#include "runtime/model/tokenizer.h"
#include "support/gguf_writer.h"

using namespace wt;
using namespace wt::test;

namespace {

// An exact-size heap copy, so ASan sees any read past the end of a (truncated) file.
struct ExactBuffer {
  explicit ExactBuffer(const std::vector<uint8_t>& bytes)
      : size(bytes.size()), data(new uint8_t[bytes.empty() ? 1 : bytes.size()]) {
    if (!bytes.empty()) std::memcpy(data.get(), bytes.data(), bytes.size());
  }
  size_t size;
  std::unique_ptr<uint8_t[]> data;
};

Status parse_bytes(const std::vector<uint8_t>& bytes) {
  ExactBuffer buf(bytes);
  std::shared_ptr<GgufFile> file;
  return GgufFile::parse_memory(buf.data.get(), buf.size, &file);
}

struct Loaded {
  std::unique_ptr<ExactBuffer> buf;  // declared first: outlives the model that points into it
  std::unique_ptr<Model> model;
  Status status;
};

Loaded load_bytes(const std::vector<uint8_t>& bytes, const LoadOptions& options = {}) {
  Loaded out;
  out.buf = std::make_unique<ExactBuffer>(bytes);
  std::shared_ptr<GgufFile> file;
  out.status = GgufFile::parse_memory(out.buf->data.get(), out.buf->size, &file);
  if (out.status.is_ok()) out.status = load_model_from_gguf(file, options, &out.model);
  return out;
}

Status load_status(const GgufWriter& w) { return load_bytes(w.build()).status; }

void expect_error(const Status& st, wt_status code, const std::string& needle) {
  INFO("status: " << wt_status_string(st.code()) << " message: " << st.message());
  CHECK(st.code() == code);
  CHECK(st.message().find(needle) != std::string::npos);
}

// Replaces a kv by a u32 one with the same key.
void set_u32(GgufWriter& w, const std::string& key, uint32_t v) {
  w.remove_kv(key);
  w.add_u32(key, v);
}

std::string temp_path(const std::string& name) { return wt::test::temp_file("gguf_" + name); }

}  // namespace

// ---- valid files ------------------------------------------------------------------------------

TEST_CASE("gguf: real default model loads with the expected hparams") {
  const std::string path = std::string(WT_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path)) {
    MESSAGE("SKIP: " << path << " is missing (scripts/fetch-model fetches it)");
    return;
  }
  std::unique_ptr<Model> m;
  const Status st = load_model(path, LoadOptions{}, &m);
  INFO(st.message());
  REQUIRE(st.is_ok());
  const Hparams& hp = m->hp;
  CHECK(m->arch_name == "llama");
  CHECK(hp.n_layer == 30);
  CHECK(hp.n_embd == 576);
  CHECK(hp.n_ff == 1536);
  CHECK(hp.n_head == 9);
  CHECK(hp.n_head_kv == 3);
  CHECK(hp.head_dim == 64);
  CHECK(hp.n_rot == 64);
  CHECK(hp.n_vocab == 49152);
  CHECK(hp.rope_type == RopeType::norm);
  CHECK(m->tied_output);
  CHECK(m->output.data == m->tok_embd.data);
  CHECK(m->tok_embd.type == DType::q8_0);
  CHECK(m->layers.size() == 30);
  CHECK(m->layers[0].wq.type == DType::q4_1);
  CHECK(m->vocab.model == "gpt2");
  CHECK(m->vocab.merges.size() > 0);
  CHECK(m->vocab.eot >= 0);
  CHECK(m->n_params > 130'000'000);
  CHECK(m->n_params < 140'000'000);
}

TEST_CASE("gguf: tiny llama loads from memory and from a file") {
  const std::vector<uint8_t> bytes = make_tiny_llama().build();
  Loaded l = load_bytes(bytes);
  INFO(l.status.message());
  REQUIRE(l.status.is_ok());
  const Model& m = *l.model;
  CHECK(m.hp.arch == Arch::llama);
  CHECK(m.hp.n_layer == 2);
  CHECK(m.hp.n_embd == 64);
  CHECK(m.hp.n_head == 4);
  CHECK(m.hp.n_head_kv == 2);
  CHECK(m.hp.head_dim == 16);
  CHECK(m.hp.n_rot == 16);
  CHECK(m.hp.n_ff == 128);
  CHECK(m.hp.n_vocab == kTinyVocab);
  CHECK(m.hp.n_ctx_train == 512);
  CHECK(m.hp.rope_scaling == RopeScaling::none);
  CHECK(!m.tied_output);
  CHECK(m.output.data != m.tok_embd.data);
  CHECK(m.layers[1].wk.ne[0] == 64);
  CHECK(m.layers[1].wk.ne[1] == 32);
  CHECK(m.layers[0].bq.empty());
  CHECK(m.rope_freqs.empty());
  CHECK(m.vocab.tokens[32] == "Ġ");
  CHECK(m.vocab.tokens[65] == "A");
  CHECK(m.vocab.bos == 259);
  CHECK(m.vocab.eos == 261);
  CHECK(m.vocab.eot == 261);  // found by name among control tokens
  CHECK(m.vocab.merges.size() == 3);
  CHECK(m.vocab.token_types[260] == TokenType::control);
  const uint64_t per_layer = 64 + 64 * 64 + 2 * 64 * 32 + 64 * 64 + 64 + 3 * 64 * 128;
  CHECK(m.n_params == 2 * 64 * kTinyVocab + 64 + 2 * per_layer);
  CHECK(m.weight_bytes == 4 * m.n_params);

  const std::string path = temp_path("tiny.gguf");
  REQUIRE(write_file(path, bytes));
  std::unique_ptr<Model> from_file;
  const Status st = load_model(path, LoadOptions{}, &from_file);
  std::filesystem::remove(path);
  INFO(st.message());
  REQUIRE(st.is_ok());
  CHECK(from_file->hp.n_vocab == kTinyVocab);
  CHECK(std::memcmp(from_file->layers[1].w_down.data, m.layers[1].w_down.data, 128 * 64 * 4) == 0);
}

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

TEST_CASE("gguf: quantized matrices bind with their block-based sizes") {
  GgufWriter w = make_tiny_llama();
  w.remove_tensor("blk.0.ffn_up.weight");
  w.add_tensor("blk.0.ffn_up.weight", ggml::q8_0, {64, 128}, std::vector<uint8_t>(2 * 34 * 128, 0));
  w.remove_tensor("blk.1.attn_q.weight");
  w.add_tensor("blk.1.attn_q.weight", ggml::q4_1, {64, 64}, std::vector<uint8_t>(2 * 20 * 64, 0));
  Loaded l = load_bytes(w.build());
  INFO(l.status.message());
  REQUIRE(l.status.is_ok());
  CHECK(l.model->layers[0].w_up.type == DType::q8_0);
  CHECK(l.model->layers[0].w_up.nb[1] == 2 * 34);
  CHECK(l.model->layers[1].wq.type == DType::q4_1);

  // Q5_0 and Q5_1 (what a Q4_K_M file of a model whose width is not a multiple of 256
  // stores most matrices as).
  w.remove_tensor("blk.0.attn_q.weight");
  w.add_tensor("blk.0.attn_q.weight", ggml::q5_0, {64, 64}, std::vector<uint8_t>(2 * 22 * 64, 0));
  w.remove_tensor("blk.1.ffn_down.weight");
  w.add_tensor("blk.1.ffn_down.weight", ggml::q5_1, {128, 64}, std::vector<uint8_t>(4 * 24 * 64, 0));
  {
    Loaded l5 = load_bytes(w.build());
    INFO(l5.status.message());
    REQUIRE(l5.status.is_ok());
    CHECK(l5.model->layers[0].wq.type == DType::q5_0);
    CHECK(l5.model->layers[0].wq.nb[1] == 2 * 22);
    CHECK(l5.model->layers[1].w_down.type == DType::q5_1);
    CHECK(l5.model->layers[1].w_down.nb[1] == 4 * 24);
  }

  // A Q4_K row must hold whole 256-element blocks; 64 does not.
  w.remove_tensor("blk.0.ffn_up.weight");
  w.add_tensor("blk.0.ffn_up.weight", ggml::q4_k, {64, 128}, std::vector<uint8_t>(144 * 32, 0));
  expect_error(load_status(w), WT_ERR_FORMAT, "row of 64 elements is not a multiple of the Q4_K block size 256");
}

TEST_CASE("gguf: typed getters convert what fits and refuse what does not") {
  GgufWriter w;
  w.add_u8("a.u8", 200).add_i64("a.i64", 7).add_i32("a.neg", -5).add_u64("a.big", 1ull << 40);
  w.add_f64("a.f64", 0.25).add_f64("a.huge", 1e300).add_bool("a.bool", true).add_string("a.s", "hi");
  w.add_string_array("a.sa", {"x", "", "yz"}).add_f32_array("a.fa", {1.5f, -2.0f});
  const std::vector<uint8_t> bytes = w.build();
  std::shared_ptr<GgufFile> f;
  REQUIRE(GgufFile::parse_memory(bytes.data(), bytes.size(), &f).is_ok());

  uint32_t u = 0;
  CHECK(f->get_u32("a.u8", &u, true).is_ok());
  CHECK(u == 200);
  CHECK(f->get_u32("a.i64", &u, true).is_ok());
  CHECK(u == 7);
  expect_error(f->get_u32("a.neg", &u, true), WT_ERR_FORMAT, "'a.neg' = -5 does not fit u32");
  expect_error(f->get_u32("a.big", &u, true), WT_ERR_FORMAT, "does not fit u32");
  int32_t i = 0;
  CHECK(f->get_i32("a.neg", &i, true).is_ok());
  CHECK(i == -5);
  uint64_t u64 = 0;
  CHECK(f->get_u64("a.big", &u64, true).is_ok());
  CHECK(u64 == (1ull << 40));
  float x = 0;
  CHECK(f->get_f32("a.f64", &x, true).is_ok());
  CHECK(x == 0.25f);
  expect_error(f->get_f32("a.huge", &x, true), WT_ERR_FORMAT, "does not fit f32");
  expect_error(f->get_f32("a.s", &x, true), WT_ERR_FORMAT, "'a.s' has type string, expected f32 or f64");
  bool b = false;
  CHECK(f->get_bool("a.bool", &b, true).is_ok());
  CHECK(b);
  std::string_view s;
  CHECK(f->get_string("a.s", &s, true).is_ok());
  CHECK(s == "hi");
  std::vector<std::string_view> sa;
  CHECK(f->get_string_array("a.sa", &sa, true).is_ok());
  CHECK(sa == std::vector<std::string_view>{"x", "", "yz"});
  GgufArrayView<float> fa;
  CHECK(f->get_array("a.fa", &fa, true).is_ok());
  REQUIRE(fa.size() == 2);
  CHECK(fa[1] == -2.0f);
  GgufArrayView<int32_t> ia;
  expect_error(f->get_array("a.fa", &ia, true), WT_ERR_FORMAT, "has type array of f32, expected array of i32");

  u = 42;  // a missing optional key leaves the default alone
  CHECK(f->get_u32("a.missing", &u, false).is_ok());
  CHECK(u == 42);
  expect_error(f->get_u32("a.missing", &u, true), WT_ERR_FORMAT, "missing required key 'a.missing'");
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

TEST_CASE("gguf: nested arrays parse, and typed getters refuse them") {
  // An array of two arrays of u32.
  std::vector<uint8_t> payload;
  auto put32 = [&](uint32_t v) { payload.insert(payload.end(), (uint8_t*)&v, (uint8_t*)&v + 4); };
  auto put64 = [&](uint64_t v) { payload.insert(payload.end(), (uint8_t*)&v, (uint8_t*)&v + 8); };
  put32(9), put64(2);
  for (int k = 0; k < 2; ++k) put32(4), put64(1), put32(7);
  GgufWriter w = make_tiny_llama();
  w.add_raw("x.nested", 9, payload);
  const std::vector<uint8_t> bytes = w.build();
  std::shared_ptr<GgufFile> f;
  REQUIRE(GgufFile::parse_memory(bytes.data(), bytes.size(), &f).is_ok());
  std::vector<std::string_view> sa;
  expect_error(f->get_string_array("x.nested", &sa, true), WT_ERR_FORMAT, "array of array");
  CHECK(load_bytes(bytes).status.is_ok());
}

// ---- malformed headers ----------------------------------------------------------------------

TEST_CASE("gguf: malformed header") {
  SUBCASE("truncated at several cut points") {
    size_t data_offset = 0;
    const std::vector<uint8_t> full = make_tiny_llama().build(&data_offset);
    const std::pair<size_t, const char*> cuts[] = {
        {0, "magic"},       {3, "magic"},       {6, "version"},      {12, "tensor count"},
        {23, "kv count"},   {40, "cannot fit"}, {data_offset / 2, "past end of file"},
        {data_offset - 1, "past end of file"}, {data_offset, "past end of file"},
        {full.size() - 1, "past end of file"},
    };
    for (const auto& c : cuts) {
      const size_t cut = c.first;
      CAPTURE(cut);
      expect_error(parse_bytes(std::vector<uint8_t>(full.begin(), full.begin() + cut)), WT_ERR_FORMAT, c.second);
    }
  }
  SUBCASE("bad magic") {
    expect_error(parse_bytes(GgufWriter().set_magic(0x46554746).build()), WT_ERR_FORMAT, "bad magic 0x46554746");
  }
  SUBCASE("version 1 is unsupported") {
    expect_error(parse_bytes(GgufWriter().set_version(1).build()), WT_ERR_UNSUPPORTED, "version 1");
  }
  SUBCASE("version 99 is unknown") {
    expect_error(parse_bytes(GgufWriter().set_version(99).build()), WT_ERR_FORMAT, "unknown version 99");
  }
  SUBCASE("version 2 is accepted") {
    CHECK(load_status(make_tiny_llama().set_version(2)).is_ok());
  }
  SUBCASE("huge kv count") {
    expect_error(parse_bytes(make_tiny_llama().override_n_kv(1ull << 62).build()), WT_ERR_FORMAT,
                 "kv count 4611686018427387904 cannot fit");
  }
  SUBCASE("huge tensor count") {
    expect_error(parse_bytes(make_tiny_llama().override_n_tensors(UINT64_MAX).build()), WT_ERR_FORMAT,
                 "tensor count 18446744073709551615 cannot fit");
  }
  SUBCASE("kv count larger than the kvs present") {
    CHECK(parse_bytes(make_tiny_llama().override_n_kv(40).build()).code() == WT_ERR_FORMAT);
  }
}

TEST_CASE("gguf: malformed metadata") {
  SUBCASE("string length past EOF") {
    std::vector<uint8_t> payload(8 + 3, 'a');
    const uint64_t len = 1000;
    std::memcpy(payload.data(), &len, 8);
    expect_error(parse_bytes(GgufWriter().add_raw("general.name", 8, payload).build()), WT_ERR_FORMAT,
                 "key 'general.name': string (1000 bytes at offset");
  }
  SUBCASE("key length past EOF") {
    std::vector<uint8_t> bytes = GgufWriter().add_u32("k", 1).build();
    patch_u64(bytes, 24, 1ull << 40);  // the key length right after the 24-byte header
    expect_error(parse_bytes(bytes), WT_ERR_FORMAT, "key of kv 0 (1099511627776 bytes");
  }
  SUBCASE("array count past EOF") {
    std::vector<uint8_t> payload(12, 0);  // element type u32, count 2^61, no elements
    const uint64_t n = 1ull << 61;
    payload[0] = 4;
    std::memcpy(payload.data() + 4, &n, 8);
    expect_error(parse_bytes(GgufWriter().add_raw("x.arr", 9, payload).build()), WT_ERR_FORMAT,
                 "key 'x.arr': array of 2305843009213693952 u32");
  }
  SUBCASE("string array count past EOF") {
    std::vector<uint8_t> payload(12, 0);
    const uint64_t n = 1ull << 40;
    payload[0] = 8;
    std::memcpy(payload.data() + 4, &n, 8);
    expect_error(parse_bytes(GgufWriter().add_raw("x.arr", 9, payload).build()), WT_ERR_FORMAT,
                 "key 'x.arr': array of 1099511627776 strings");
  }
  SUBCASE("unknown value type") {
    expect_error(parse_bytes(GgufWriter().add_raw("x.y", 13, {0, 0, 0, 0}).build()), WT_ERR_FORMAT,
                 "key 'x.y': unknown value type 13");
  }
  SUBCASE("bool that is neither 0 nor 1") {
    expect_error(parse_bytes(GgufWriter().add_raw("x.b", 7, {2}).build()), WT_ERR_FORMAT,
                 "key 'x.b': bool value 2");
  }
  SUBCASE("arrays nested too deep") {
    std::vector<uint8_t> payload;
    for (int d = 0; d < 6; ++d) {
      const uint32_t t = 9;
      const uint64_t n = 1;
      payload.insert(payload.end(), (const uint8_t*)&t, (const uint8_t*)&t + 4);
      payload.insert(payload.end(), (const uint8_t*)&n, (const uint8_t*)&n + 8);
    }
    payload.resize(payload.size() + 64, 0);
    expect_error(parse_bytes(GgufWriter().add_raw("x.deep", 9, payload).build()), WT_ERR_FORMAT, "nested deeper");
  }
  SUBCASE("duplicate key") {
    GgufWriter w = make_tiny_llama();
    w.add_u32("llama.block_count", 2);
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "duplicate key 'llama.block_count'");
  }
  SUBCASE("general.alignment = 0") {
    GgufWriter w = make_tiny_llama();
    set_u32(w, "general.alignment", 0);
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "general.alignment = 0 is not a nonzero power of two");
  }
  SUBCASE("general.alignment = 3") {
    GgufWriter w = make_tiny_llama();
    set_u32(w, "general.alignment", 3);
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "general.alignment = 3 is not a nonzero power of two");
  }
  SUBCASE("general.alignment = 2^31: a power of two, but too large") {
    GgufWriter w = make_tiny_llama();
    set_u32(w, "general.alignment", 0x80000000u);
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT,
                 "general.alignment = 2147483648 is larger than 1073741824 (2^30), the largest alignment");
  }
  SUBCASE("general.alignment of the wrong type") {
    GgufWriter w = make_tiny_llama();
    w.remove_kv("general.alignment");
    w.add_string("general.alignment", "32");
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "general.alignment of type string");
  }
}

// ---- malformed tensor infos and data ------------------------------------------------------------

TEST_CASE("gguf: malformed tensors") {
  GgufWriter w = make_tiny_llama();
  SUBCASE("tensor offset past EOF") {
    w.find_tensor("blk.1.ffn_down.weight")->offset = uint64_t{1} << 30;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT,
                 "tensor 'blk.1.ffn_down.weight': data [offset 1073741824, 32768 bytes] runs past end of file");
  }
  SUBCASE("tensor offset that overflows") {
    w.find_tensor("output_norm.weight")->offset = UINT64_MAX - 31;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'output_norm.weight': data [offset");
  }
  SUBCASE("overlapping tensors") {
    w.find_tensor("blk.0.attn_k.weight")->offset = 0;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT,
                 "tensor 'token_embd.weight' [offset 0, 67072 bytes] overlaps tensor 'blk.0.attn_k.weight'");
  }
  SUBCASE("offset not aligned") {
    w.find_tensor("output_norm.weight")->offset = 8;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT,
                 "tensor 'output_norm.weight': offset 8 is not a multiple of the alignment 32");
  }
  SUBCASE("unknown tensor type") {
    w.find_tensor("blk.0.ffn_up.weight")->type = 200;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'blk.0.ffn_up.weight': unknown type id 200");
  }
  SUBCASE("a removed ggml type id is unknown") {
    w.find_tensor("blk.0.ffn_up.weight")->type = 4;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "unknown type id 4");
  }
  SUBCASE("a ggml type Whittle lacks is unsupported") {
    w.remove_tensor("output.weight");
    w.add_tensor("output.weight", ggml::iq4_nl, {64, kTinyVocab}, std::vector<uint8_t>(2 * 18 * kTinyVocab, 0));
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "tensor 'output.weight' has type IQ4_NL");
  }
  SUBCASE("n_dims > 4") {
    GgufWriter::TensorEntry* t = w.find_tensor("output_norm.weight");
    t->dims = {64, 1, 1, 1, 1};
    t->n_dims = 5;
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'output_norm.weight': n_dims 5 > 4");
  }
  SUBCASE("dims whose product overflows") {
    w.find_tensor("output_norm.weight")->dims = {1ull << 32, 1ull << 32, 1ull << 32};
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'output_norm.weight': element count");
  }
  SUBCASE("byte size that overflows") {
    w.find_tensor("output_norm.weight")->dims = {1ull << 31, 1ull << 31};
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'output_norm.weight': byte size of");
  }
  SUBCASE("byte size that overflows in the first dimension") {
    // (2^62 + 576) F32 elements are 2^64 + 2304 bytes: wrapped, that is 2304, as many bytes
    // as the file holds for it (issue 29 item 6).
    w.add_tensor("huge.weight", ggml::f32, {(1ull << 62) + 576}, std::vector<uint8_t>(2304, 0));
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "tensor 'huge.weight': byte size of");
  }
  SUBCASE("dimension out of int64 range") {
    w.find_tensor("output_norm.weight")->dims = {UINT64_MAX};
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "dimension 0 = 18446744073709551615 is out of range");
  }
  SUBCASE("row not a multiple of the block size") {
    GgufWriter::TensorEntry* t = w.find_tensor("blk.0.ffn_up.weight");
    t->type = ggml::q8_0;
    t->dims = {40, 128};
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "row of 40 elements is not a multiple of the Q8_0 block size 32");
  }
  SUBCASE("duplicate tensor name") {
    w.add_tensor_f32("output_norm.weight", {64}, std::vector<float>(64, 1.0f));
    expect_error(parse_bytes(w.build()), WT_ERR_FORMAT, "duplicate tensor name 'output_norm.weight'");
  }
}

// ---- model-level validation ---------------------------------------------------------------------

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
    expect_error(load_status(w), WT_ERR_UNSUPPORTED, "unsupported architecture 'lla?ma' (supported: llama, qwen2, qwen3, smollm3, gemma3)");
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
    TinyModelOptions o;
    o.arch = "qwen2";
    GgufWriter q = make_tiny_llama(o);
    q.remove_tensor("blk.1.attn_v.bias");
    expect_error(load_status(q), WT_ERR_FORMAT, "missing required tensor 'blk.1.attn_v.bias'");
  }
  SUBCASE("qwen3 without a head norm") {
    TinyModelOptions o;
    o.arch = "qwen3";
    GgufWriter q = make_tiny_llama(o);
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
    TinyModelOptions o;
    o.spm_vocab = true;
    GgufWriter spm = make_tiny_llama(o);
    spm.remove_kv("tokenizer.ggml.scores");
    expect_error(load_status(spm), WT_ERR_FORMAT, "tokenizer.ggml.scores");
  }
  SUBCASE("a SentencePiece score that is not finite") {
    TinyModelOptions o;
    o.spm_vocab = true;
    GgufWriter spm = make_tiny_llama(o);
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
  TinyModelOptions o;
  o.arch = "gemma3";
  GgufWriter w = make_tiny_llama(o);
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
    LoadOptions opts;
    opts.rope.set = true;
    opts.rope.scaling = wt::RopeScaling::yarn;
    opts.rope.factor = 2.0f;
    expect_error(load_bytes(w.build(), opts).status, WT_ERR_UNSUPPORTED, "sliding-window");
  }
  SUBCASE("post-block norms outside gemma3 are refused as unused") {
    GgufWriter llama = make_tiny_llama();
    llama.add_tensor_f32("blk.0.post_ffw_norm.weight", {64}, std::vector<float>(64, 1.0f));
    expect_error(load_status(llama), WT_ERR_UNSUPPORTED, "'blk.0.post_ffw_norm.weight' is not used");
  }
}

TEST_CASE("gguf: a SentencePiece vocabulary (tokenizer model llama)") {
  TinyModelOptions o;
  o.spm_vocab = true;
  GgufWriter w = make_tiny_llama(o);
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

// ---- robustness -----------------------------------------------------------------------------------

TEST_CASE("gguf: open reports I/O errors") {
  std::unique_ptr<Model> m;
  expect_error(load_model("/nonexistent/whittle/model.gguf", LoadOptions{}, &m), WT_ERR_IO, "cannot open");
  expect_error(load_model(std::filesystem::temp_directory_path().string(), LoadOptions{}, &m), WT_ERR_IO,
               "not a regular file");
  const std::string path = temp_path("empty.gguf");
  REQUIRE(write_file(path, {}));
  expect_error(load_model(path, LoadOptions{}, &m), WT_ERR_FORMAT, "magic");
  std::filesystem::remove(path);
}

TEST_CASE("gguf: truncation at every header offset never succeeds") {
  size_t data_offset = 0;
  const std::vector<uint8_t> full = make_tiny_llama().build(&data_offset);
  size_t failures = 0;
  for (size_t cut = 0; cut <= data_offset; ++cut) {
    const Status st = parse_bytes(std::vector<uint8_t>(full.begin(), full.begin() + cut));
    if (st.is_ok()) {
      FAIL_CHECK("truncated file of " << cut << " bytes parsed");
    } else if (st.code() == WT_ERR_FORMAT) {
      ++failures;
    }
  }
  CHECK(failures == data_offset + 1);
}

TEST_CASE("gguf: random header corruption never crashes") {
  size_t data_offset = 0;
  const std::vector<uint8_t> full = make_tiny_llama().build(&data_offset);
  uint64_t state = 12345;  // printed below so a failure can be replayed
  auto next = [&]() {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  MESSAGE("seed 12345, " << data_offset << " header bytes");
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> bytes = full;
    const int n_flips = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < n_flips; ++k) {
      const size_t at = next() % data_offset;
      bytes[at] = static_cast<uint8_t>(next() % 4 == 0 ? 0xFF : bytes[at] ^ (1u << (next() % 8)));
    }
    Loaded l = load_bytes(bytes);  // any status is fine; ASan/UBSan judge the rest
    if (l.status.is_ok()) CHECK(l.model->hp.n_layer >= 1);
  }
}
