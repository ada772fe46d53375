// GGUF reader and model loader: the real default model, a tiny generated one, and a set of
// handcrafted broken files, each of which must fail with the right status and a message
// naming what is wrong — never crash, never succeed. The architectures' hyperparameters and
// tensors and the vocabularies: test_model_loader.cpp.
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
#include "support/gguf_load.h"
#include "support/gguf_writer.h"

using namespace wt;
using namespace wt::test;

namespace {

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
