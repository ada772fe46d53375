// fuzz_gguf's seeds: tiny valid models in the shapes the loader knows (llama, qwen2 with
// biases, GGUF v2, rope scaling by keys and by tensor, quantized matrices, chat templates,
// nested arrays), the broken files tests/unit/test_gguf.cpp builds (integer overflows in
// counts, sizes and offsets, lengths past EOF, duplicates, bad alignment), and a prefix of the
// real model's header. Files broken in the header are cut at the data section: the bytes
// after it only slow the fuzzer down.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "corpus.h"
#include "fuzz_support.h"

namespace wt::fuzz {

namespace {

using test::GgufWriter;
namespace ggml = test::ggml;

GgufWriter tiny() { return test::make_tiny_llama(seed_model_options()); }

std::vector<uint8_t> header_only(const GgufWriter& w) {
  size_t data_offset = 0;
  std::vector<uint8_t> b = w.build(&data_offset);
  b.resize(data_offset);
  return b;
}

void replace_u32(GgufWriter& w, const std::string& key, uint32_t v) {
  w.remove_kv(key);
  w.add_u32(key, v);
}

std::vector<uint8_t> le64(uint64_t v) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

}  // namespace

Seeds gguf_seeds(const std::string& real_model_path) {
  Seeds s;
  // ---- valid ----
  s["tiny_llama.gguf"] = tiny().build();
  s["tiny_llama_v2.gguf"] = tiny().set_version(2).build();
  {
    test::TinyModelOptions o = seed_model_options();
    o.arch = "qwen2";
    o.pre = "qwen2";
    o.chat_template = "<|im_start|>";
    GgufWriter w = test::make_tiny_llama(o);
    replace_u32(w, "general.alignment", 64);
    w.set_layout_alignment(64);
    s["tiny_qwen2_align64.gguf"] = w.build();
  }
  {
    test::TinyModelOptions o = seed_model_options();
    o.pre = "llama-bpe";
    o.chat_template = "<|start_header_id|>";
    GgufWriter w = test::make_tiny_llama(o);
    w.add_f32("llama.rope.scaling.factor", 8.0f).add_f32("llama.rope.scaling.low_freq_factor", 1.0f);
    w.add_f32("llama.rope.scaling.high_freq_factor", 4.0f).add_u32("llama.rope.scaling.original_context_length", 64);
    s["tiny_llama3_scaling.gguf"] = w.build();
  }
  {
    GgufWriter w = tiny();
    w.add_tensor_f32("rope_freqs.weight", {2}, {1, 4});  // n_rot / 2 = head_dim / 2
    w.add_string("llama.rope.scaling.type", "linear").add_f32("llama.rope.scaling.factor", 2.0f);
    s["tiny_rope_freqs.gguf"] = w.build();
  }
  {
    // Quantized and half-precision matrices (ffn_down's rows of n_ff = 32 are one Q8_0/Q4_x
    // block; n_embd = 8).
    GgufWriter w = tiny();
    w.remove_tensor("blk.0.ffn_down.weight");
    w.add_tensor("blk.0.ffn_down.weight", ggml::q8_0, {32, 8}, std::vector<uint8_t>(8 * 34, 0x11));
    w.remove_tensor("blk.0.ffn_up.weight");
    w.add_tensor("blk.0.ffn_up.weight", ggml::f16, {8, 32}, std::vector<uint8_t>(8 * 32 * 2, 0x3c));
    w.remove_tensor("blk.0.attn_q.weight");
    w.add_tensor("blk.0.attn_q.weight", ggml::bf16, {8, 8}, std::vector<uint8_t>(8 * 8 * 2, 0x3f));
    s["tiny_quant_q8_f16_bf16.gguf"] = w.build();
    w.remove_tensor("blk.0.ffn_down.weight");
    w.add_tensor("blk.0.ffn_down.weight", ggml::q4_1, {32, 8}, std::vector<uint8_t>(8 * 20, 0x22));
    w.remove_tensor("blk.0.ffn_gate.weight");
    w.add_tensor("blk.0.ffn_gate.weight", ggml::f16, {8, 32}, std::vector<uint8_t>(8 * 32 * 2, 0));
    s["tiny_quant_q4.gguf"] = w.build();
  }
  {
    std::vector<uint8_t> payload;  // an array of two arrays of one u32 each
    auto put = [&](const void* p, size_t n) { payload.insert(payload.end(), (const uint8_t*)p, (const uint8_t*)p + n); };
    const uint32_t arr = 9, u32 = 4, seven = 7;
    const uint64_t two = 2, one = 1;
    put(&arr, 4), put(&two, 8);
    for (int k = 0; k < 2; ++k) put(&u32, 4), put(&one, 8), put(&seven, 4);
    GgufWriter w = tiny();
    w.add_raw("x.nested", 9, payload);
    w.add_i64("llama.vocab_size", test::kTinyVocab).add_f64("x.f64", 0.25).add_i8("x.i8", -3).add_u16("x.u16", 9);
    s["tiny_nested_and_scalars.gguf"] = w.build();
  }
  s["metadata_only.gguf"] = GgufWriter().add_string("general.architecture", "llama").add_u32("k", 1).build();

  // ---- broken (tests/unit/test_gguf.cpp) ----
  {
    size_t data_offset = 0;
    const std::vector<uint8_t> full = tiny().build(&data_offset);
    s["bad_truncated_header.gguf"] = std::vector<uint8_t>(full.begin(), full.begin() + data_offset / 2);
    s["bad_truncated_data.gguf"] = std::vector<uint8_t>(full.begin(), full.end() - 1);
  }
  s["bad_magic.gguf"] = GgufWriter().set_magic(0x46554746).build();
  s["bad_version1.gguf"] = GgufWriter().set_version(1).build();
  s["bad_big_endian.gguf"] = GgufWriter().set_version(0x03000000).build();
  s["bad_huge_kv_count.gguf"] = header_only(tiny().override_n_kv(1ull << 62));
  s["bad_huge_tensor_count.gguf"] = header_only(tiny().override_n_tensors(UINT64_MAX));
  s["bad_kv_count_too_large.gguf"] = header_only(tiny().override_n_kv(40));
  {
    std::vector<uint8_t> payload = le64(1000);
    payload.insert(payload.end(), {'a', 'b', 'c'});
    s["bad_string_past_eof.gguf"] = GgufWriter().add_raw("general.name", 8, payload).build();
  }
  {
    std::vector<uint8_t> payload = {4, 0, 0, 0};  // u32 elements, 2^61 of them
    const std::vector<uint8_t> n = le64(1ull << 61);
    payload.insert(payload.end(), n.begin(), n.end());
    s["bad_array_count.gguf"] = GgufWriter().add_raw("x.arr", 9, payload).build();
    payload[0] = 8;  // strings
    s["bad_string_array_count.gguf"] = GgufWriter().add_raw("x.arr", 9, payload).build();
  }
  s["bad_value_type.gguf"] = GgufWriter().add_raw("x.y", 13, {0, 0, 0, 0}).build();
  s["bad_bool.gguf"] = GgufWriter().add_raw("x.b", 7, {2}).build();
  {
    GgufWriter w = tiny();
    w.add_u32("llama.block_count", 1);
    s["bad_duplicate_key.gguf"] = header_only(w);
  }
  {
    GgufWriter w = tiny();
    replace_u32(w, "general.alignment", 3);
    s["bad_alignment.gguf"] = header_only(w);
  }
  {
    GgufWriter w = tiny();
    w.find_tensor("blk.0.ffn_down.weight")->offset = uint64_t{1} << 30;
    s["bad_tensor_offset_past_eof.gguf"] = w.build();
  }
  {
    GgufWriter w = tiny();
    w.find_tensor("output_norm.weight")->offset = UINT64_MAX - 31;
    s["bad_tensor_offset_overflow.gguf"] = w.build();
  }
  {
    GgufWriter w = tiny();
    w.find_tensor("blk.0.attn_k.weight")->offset = 0;
    s["bad_tensor_overlap.gguf"] = w.build();
  }
  {
    GgufWriter w = tiny();
    w.find_tensor("output_norm.weight")->dims = {1ull << 32, 1ull << 32, 1ull << 32};
    s["bad_dims_overflow.gguf"] = header_only(w);
    w.find_tensor("output_norm.weight")->dims = {1ull << 31, 1ull << 31};
    s["bad_bytes_overflow.gguf"] = header_only(w);
    GgufWriter::TensorEntry* t = w.find_tensor("output_norm.weight");
    t->dims = {8, 1, 1, 1, 1};
    t->n_dims = 5;
    s["bad_n_dims.gguf"] = header_only(w);
  }
  {
    GgufWriter w = tiny();
    w.find_tensor("blk.0.ffn_up.weight")->type = 200;
    s["bad_tensor_type.gguf"] = header_only(w);
  }
  {
    GgufWriter w = tiny();
    w.remove_kv("tokenizer.ggml.token_type");
    w.add_i32_array("tokenizer.ggml.token_type", std::vector<int32_t>(test::kTinyVocab - 1, 1));
    w.add_f32_array("tokenizer.ggml.scores", std::vector<float>(10, 0.0f));
    replace_u32(w, "tokenizer.ggml.eos_token_id", test::kTinyVocab);
    s["bad_vocab_arrays.gguf"] = w.build();  // the loader's checks: the data must be there
  }
  {
    GgufWriter w = tiny();
    w.remove_kv("tokenizer.ggml.merges");
    w.add_string_array("tokenizer.ggml.merges", {"Ġ t", "h e", "Ġthe x", "q q"});
    s["bad_merges.gguf"] = w.build();
  }

  // ---- the real model's header, cut short (its vocabulary alone is over a megabyte) ----
  std::ifstream in(real_model_path, std::ios::binary);
  if (in) {
    std::vector<uint8_t> prefix(8192);
    in.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
    prefix.resize(static_cast<size_t>(in.gcount()));
    s["real_model_header_prefix.gguf"] = prefix;
  } else {
    std::fprintf(stderr, "make_corpus: %s is missing: no real-model seed\n", real_model_path.c_str());
  }
  return s;
}

}  // namespace wt::fuzz
