#include "support/gguf_writer.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>

namespace wt::test {

namespace {

template <typename T>
void put(std::vector<uint8_t>& out, T v) {
  // resize + memcpy, not insert: GCC 12 at -O3 warns falsely (-Wstringop-overflow) about
  // insert into a vector it has just grown from empty
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &v, sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

void pad_to(std::vector<uint8_t>& out, uint64_t alignment) {
  if (alignment == 0) return;
  while (out.size() % alignment != 0) out.push_back(0);
}

uint64_t align_up(uint64_t n, uint64_t alignment) {
  return alignment == 0 ? n : (n + alignment - 1) / alignment * alignment;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// splitmix64: tiny, and identical on every platform (unlike std:: distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform(float scale) {  // in [-scale, scale)
    const float u = static_cast<float>(next() >> 40) / static_cast<float>(1ull << 24);
    return (2.0f * u - 1.0f) * scale;
  }

 private:
  uint64_t state_;
};

}  // namespace

// ---- metadata ---------------------------------------------------------------------------------

GgufWriter& GgufWriter::add_scalar(const std::string& key, KvType type, const void* v, size_t n) {
  const uint8_t* p = static_cast<const uint8_t*>(v);
  return add_raw(key, static_cast<uint32_t>(type), std::vector<uint8_t>(p, p + n));
}

GgufWriter& GgufWriter::add_u8(const std::string& k, uint8_t v) { return add_scalar(k, KvType::u8, &v, 1); }
GgufWriter& GgufWriter::add_i8(const std::string& k, int8_t v) { return add_scalar(k, KvType::i8, &v, 1); }
GgufWriter& GgufWriter::add_u16(const std::string& k, uint16_t v) { return add_scalar(k, KvType::u16, &v, 2); }
GgufWriter& GgufWriter::add_i16(const std::string& k, int16_t v) { return add_scalar(k, KvType::i16, &v, 2); }
GgufWriter& GgufWriter::add_u32(const std::string& k, uint32_t v) { return add_scalar(k, KvType::u32, &v, 4); }
GgufWriter& GgufWriter::add_i32(const std::string& k, int32_t v) { return add_scalar(k, KvType::i32, &v, 4); }
GgufWriter& GgufWriter::add_u64(const std::string& k, uint64_t v) { return add_scalar(k, KvType::u64, &v, 8); }
GgufWriter& GgufWriter::add_i64(const std::string& k, int64_t v) { return add_scalar(k, KvType::i64, &v, 8); }
GgufWriter& GgufWriter::add_f32(const std::string& k, float v) { return add_scalar(k, KvType::f32, &v, 4); }
GgufWriter& GgufWriter::add_f64(const std::string& k, double v) { return add_scalar(k, KvType::f64, &v, 8); }
GgufWriter& GgufWriter::add_bool(const std::string& k, bool v) {
  const uint8_t b = v ? 1 : 0;
  return add_scalar(k, KvType::boolean, &b, 1);
}

GgufWriter& GgufWriter::add_string(const std::string& key, const std::string& v) {
  std::vector<uint8_t> payload;
  put_string(payload, v);
  return add_raw(key, static_cast<uint32_t>(KvType::string), std::move(payload));
}

GgufWriter& GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  std::vector<uint8_t> payload;
  put<uint32_t>(payload, static_cast<uint32_t>(KvType::string));
  put<uint64_t>(payload, v.size());
  for (const std::string& s : v) put_string(payload, s);
  return add_raw(key, static_cast<uint32_t>(KvType::array), std::move(payload));
}

GgufWriter& GgufWriter::add_i32_array(const std::string& key, const std::vector<int32_t>& v) {
  std::vector<uint8_t> payload;
  put<uint32_t>(payload, static_cast<uint32_t>(KvType::i32));
  put<uint64_t>(payload, v.size());
  for (int32_t x : v) put(payload, x);
  return add_raw(key, static_cast<uint32_t>(KvType::array), std::move(payload));
}

GgufWriter& GgufWriter::add_f32_array(const std::string& key, const std::vector<float>& v) {
  std::vector<uint8_t> payload;
  put<uint32_t>(payload, static_cast<uint32_t>(KvType::f32));
  put<uint64_t>(payload, v.size());
  for (float x : v) put(payload, x);
  return add_raw(key, static_cast<uint32_t>(KvType::array), std::move(payload));
}

GgufWriter& GgufWriter::add_raw(const std::string& key, uint32_t type, std::vector<uint8_t> payload) {
  kvs_.push_back(Kv{key, type, std::move(payload)});
  return *this;
}

size_t GgufWriter::remove_kv(const std::string& key) {
  return std::erase_if(kvs_, [&](const Kv& kv) { return kv.key == key; });
}

GgufWriter::Kv* GgufWriter::find_kv(const std::string& key) {
  for (Kv& kv : kvs_) {
    if (kv.key == key) return &kv;
  }
  return nullptr;
}

// ---- tensors ----------------------------------------------------------------------------------

GgufWriter& GgufWriter::add_tensor(const std::string& name, uint32_t type, std::vector<uint64_t> dims,
                                   std::vector<uint8_t> data) {
  TensorEntry t;
  t.name = name;
  t.type = type;
  t.dims = std::move(dims);
  t.data = std::move(data);
  tensors_.push_back(std::move(t));
  return *this;
}

GgufWriter& GgufWriter::add_tensor_f32(const std::string& name, std::vector<uint64_t> dims,
                                       const std::vector<float>& values) {
  std::vector<uint8_t> data(values.size() * sizeof(float));
  if (!values.empty()) std::memcpy(data.data(), values.data(), data.size());
  return add_tensor(name, ggml::f32, std::move(dims), std::move(data));
}

size_t GgufWriter::remove_tensor(const std::string& name) {
  return std::erase_if(tensors_, [&](const TensorEntry& t) { return t.name == name; });
}

GgufWriter::TensorEntry* GgufWriter::find_tensor(const std::string& name) {
  for (TensorEntry& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// ---- layout -----------------------------------------------------------------------------------

std::vector<uint8_t> GgufWriter::build(size_t* out_data_offset) const {
  // Natural offsets: each tensor's data at the next aligned position. Overrides change only
  // what the header claims, never where the bytes go.
  std::vector<uint64_t> offsets;
  uint64_t next = 0;
  for (const TensorEntry& t : tensors_) {
    next = align_up(next, alignment_);
    offsets.push_back(next);
    next += t.data.size();
  }

  std::vector<uint8_t> out;
  put<uint32_t>(out, magic_);
  put<uint32_t>(out, version_);
  put<uint64_t>(out, n_tensors_.value_or(tensors_.size()));
  put<uint64_t>(out, n_kv_.value_or(kvs_.size()));
  for (const Kv& kv : kvs_) {
    put_string(out, kv.key);
    put<uint32_t>(out, kv.type);
    out.insert(out.end(), kv.payload.begin(), kv.payload.end());
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const TensorEntry& t = tensors_[i];
    put_string(out, t.name);
    put<uint32_t>(out, t.n_dims.value_or(static_cast<uint32_t>(t.dims.size())));
    for (uint64_t d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, t.offset.value_or(offsets[i]));
  }
  pad_to(out, alignment_);
  const size_t data_offset = out.size();
  for (size_t i = 0; i < tensors_.size(); ++i) {
    out.resize(data_offset + offsets[i], 0);
    out.insert(out.end(), tensors_[i].data.begin(), tensors_[i].data.end());
  }
  if (out_data_offset) *out_data_offset = data_offset;
  return out;
}

void patch_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t v) {
  if (offset + 4 <= bytes.size()) std::memcpy(bytes.data() + offset, &v, 4);
}

void patch_u64(std::vector<uint8_t>& bytes, size_t offset, uint64_t v) {
  if (offset + 8 <= bytes.size()) std::memcpy(bytes.data() + offset, &v, 8);
}

size_t find_bytes(const std::vector<uint8_t>& bytes, const std::string& needle) {
  if (needle.empty() || needle.size() > bytes.size()) return SIZE_MAX;
  for (size_t i = 0; i + needle.size() <= bytes.size(); ++i) {
    if (std::memcmp(bytes.data() + i, needle.data(), needle.size()) == 0) return i;
  }
  return SIZE_MAX;
}

bool write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  const bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

std::string temp_file(const std::string& name) {
  const std::string unique = "whittle_test_" + std::to_string(::getpid()) + "_" + name;
  return (std::filesystem::temp_directory_path() / unique).string();
}

TempPath::~TempPath() {
  std::error_code ec;  // a destructor at exit: nothing to report to, nothing to throw
  std::filesystem::remove_all(path_, ec);
}

// ---- the tiny model ---------------------------------------------------------------------------

const std::string& tiny_chat_model_path() {
  static const TempPath file("api_tiny.gguf");
  static const std::string path = [] {
    TinyModelOptions o;
    o.n_layer = 4;
    o.chat_template = "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}";
    return write_file(file.path(), make_tiny_llama(o).build()) ? file.path() : std::string();
  }();
  return path;
}

std::string byte_token(uint8_t b) {
  // GPT-2 keeps printable Latin-1 bytes as themselves and moves the other 68 bytes, in
  // order, to U+0100 onwards so every token is visible text (space becomes 'Ġ').
  auto printable = [](int c) { return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE); };
  uint32_t cp = b;
  if (!printable(b)) {
    uint32_t n = 0;
    for (int c = 0; c < b; ++c) n += printable(c) ? 0 : 1;
    cp = 256 + n;
  }
  std::string s;
  append_utf8(s, cp);
  return s;
}

GgufWriter make_tiny_llama(const TinyModelOptions& o) {
  GgufWriter w;
  const std::string a = o.arch;
  const int32_t head_dim = o.n_embd / o.n_head;
  const uint64_t embd = o.n_embd, ff = o.n_ff, vocab = kTinyVocab;
  const uint64_t q_out = static_cast<uint64_t>(o.n_head) * head_dim;
  const uint64_t kv_out = static_cast<uint64_t>(o.n_head_kv) * head_dim;

  w.add_string("general.architecture", a);
  w.add_string("general.name", "tiny-" + a);
  w.add_u32("general.alignment", 32);
  w.add_u32(a + ".block_count", static_cast<uint32_t>(o.n_layer));
  w.add_u32(a + ".context_length", static_cast<uint32_t>(o.n_ctx_train));
  w.add_u32(a + ".embedding_length", static_cast<uint32_t>(o.n_embd));
  w.add_u32(a + ".feed_forward_length", static_cast<uint32_t>(o.n_ff));
  w.add_u32(a + ".attention.head_count", static_cast<uint32_t>(o.n_head));
  w.add_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(o.n_head_kv));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.add_f32(a + ".rope.freq_base", 10000.0f);
  if (a == "gemma3") w.add_u32(a + ".attention.sliding_window", 16);

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  if (o.spm_vocab) {
    tokens = {"<unk>", "<s>", "</s>"};
    types = {2, 3, 3};
    std::vector<float> scores(3, 0.0f);
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      tokens.push_back(hex), types.push_back(6), scores.push_back(0.0f);
    }
    for (const auto& [piece, score] : {std::pair<const char*, float>{"\xE2\x96\x81", -2.0f}, {"e", -3.0f},
                                       {"\xE2\x96\x81" "e", -1.0f}})
      tokens.push_back(piece), types.push_back(1), scores.push_back(score);
    w.add_string("tokenizer.ggml.model", "llama");
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_f32_array("tokenizer.ggml.scores", scores);
    w.add_u32("tokenizer.ggml.bos_token_id", 1);
    w.add_u32("tokenizer.ggml.eos_token_id", 2);
  } else {
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_token(static_cast<uint8_t>(b)));
    types.assign(256, 1);  // GPT-2 byte tokens are plain (normal) tokens
    for (const char* t : {"Ġt", "he", "Ġthe"}) {
      tokens.push_back(t);
      types.push_back(1);
    }
    for (const char* t : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
      tokens.push_back(t);
      types.push_back(3);
    }
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", o.pre);
    w.add_string_array("tokenizer.ggml.tokens", tokens);
    w.add_i32_array("tokenizer.ggml.token_type", types);
    w.add_string_array("tokenizer.ggml.merges", {"Ġ t", "h e", "Ġt he"});
    w.add_u32("tokenizer.ggml.bos_token_id", 259);
    w.add_u32("tokenizer.ggml.eos_token_id", 261);
    w.add_bool("tokenizer.ggml.add_bos_token", false);
  }
  if (!o.chat_template.empty()) w.add_string("tokenizer.chat_template", o.chat_template);

  Rng rng(o.seed);
  auto matrix = [&](const std::string& name, uint64_t ne0, uint64_t ne1) {
    std::vector<float> v(ne0 * ne1);
    for (float& x : v) x = rng.uniform(o.weight_scale);
    w.add_tensor_f32(name, {ne0, ne1}, v);
  };
  auto vec = [&](const std::string& name, uint64_t n, float base) {
    std::vector<float> v(n);
    for (float& x : v) x = base + rng.uniform(o.weight_scale);
    w.add_tensor_f32(name, {n}, v);
  };

  matrix("token_embd.weight", embd, vocab);
  vec("output_norm.weight", embd, 1.0f);
  if (!o.tied_output) matrix("output.weight", embd, vocab);
  for (int32_t l = 0; l < o.n_layer; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    vec(p + "attn_norm.weight", embd, 1.0f);
    matrix(p + "attn_q.weight", embd, q_out);
    matrix(p + "attn_k.weight", embd, kv_out);
    matrix(p + "attn_v.weight", embd, kv_out);
    if (a == "qwen2") {
      vec(p + "attn_q.bias", q_out, 0.0f);
      vec(p + "attn_k.bias", kv_out, 0.0f);
      vec(p + "attn_v.bias", kv_out, 0.0f);
    }
    if (a == "qwen3" || a == "gemma3") {
      vec(p + "attn_q_norm.weight", head_dim, 1.0f);
      vec(p + "attn_k_norm.weight", head_dim, 1.0f);
    }
    if (a == "gemma3") {
      vec(p + "post_attention_norm.weight", embd, 1.0f);
      vec(p + "post_ffw_norm.weight", embd, 1.0f);
    }
    matrix(p + "attn_output.weight", q_out, embd);
    vec(p + "ffn_norm.weight", embd, 1.0f);
    matrix(p + "ffn_gate.weight", embd, ff);
    matrix(p + "ffn_up.weight", embd, ff);
    matrix(p + "ffn_down.weight", ff, embd);
  }
  return w;
}

}  // namespace wt::test
