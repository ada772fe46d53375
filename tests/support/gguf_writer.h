// A small GGUF writer for tests. It writes valid files and, on request, broken ones: every
// count, offset and type can be overridden, and the bytes can be patched or cut afterwards.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace wt::test {

// Metadata value type ids, as in the file.
enum class KvType : uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

// Tensor type ids used by the tests (ggml numbering).
namespace ggml {
constexpr uint32_t f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8, q2_k = 10, q4_k = 12, q5_k = 13, q6_k = 14,
                   iq4_nl = 20, bf16 = 30;
}

class GgufWriter {
 public:
  struct Kv {
    std::string key;
    uint32_t type = 0;
    std::vector<uint8_t> payload;  // the value bytes after the type id
  };
  struct TensorEntry {
    std::string name;
    uint32_t type = ggml::f32;
    std::vector<uint64_t> dims;     // ne[0] first
    std::vector<uint8_t> data;      // written in the data section in add order
    std::optional<uint64_t> offset; // overrides the offset written in the tensor info
    std::optional<uint32_t> n_dims; // overrides the n_dims written (dims are still all written)
  };

  // ---- metadata (each call appends; duplicates are allowed so tests can make them) ----
  GgufWriter& add_u8(const std::string& key, uint8_t v);
  GgufWriter& add_i8(const std::string& key, int8_t v);
  GgufWriter& add_u16(const std::string& key, uint16_t v);
  GgufWriter& add_i16(const std::string& key, int16_t v);
  GgufWriter& add_u32(const std::string& key, uint32_t v);
  GgufWriter& add_i32(const std::string& key, int32_t v);
  GgufWriter& add_u64(const std::string& key, uint64_t v);
  GgufWriter& add_i64(const std::string& key, int64_t v);
  GgufWriter& add_f32(const std::string& key, float v);
  GgufWriter& add_f64(const std::string& key, double v);
  GgufWriter& add_bool(const std::string& key, bool v);
  GgufWriter& add_string(const std::string& key, const std::string& v);
  GgufWriter& add_string_array(const std::string& key, const std::vector<std::string>& v);
  GgufWriter& add_i32_array(const std::string& key, const std::vector<int32_t>& v);
  GgufWriter& add_f32_array(const std::string& key, const std::vector<float>& v);
  // Any value: `payload` is written verbatim after the type id (malformed values, nested
  // arrays, unknown type ids).
  GgufWriter& add_raw(const std::string& key, uint32_t type, std::vector<uint8_t> payload);
  // Removes every kv with this key; returns how many were removed.
  size_t remove_kv(const std::string& key);
  // The first kv with this key, to edit in place; nullptr when absent.
  Kv* find_kv(const std::string& key);

  // ---- tensors -------------------------------------------------------------------------
  GgufWriter& add_tensor(const std::string& name, uint32_t type, std::vector<uint64_t> dims,
                         std::vector<uint8_t> data);
  GgufWriter& add_tensor_f32(const std::string& name, std::vector<uint64_t> dims,
                             const std::vector<float>& values);
  size_t remove_tensor(const std::string& name);
  TensorEntry* find_tensor(const std::string& name);
  std::vector<TensorEntry>& tensors() { return tensors_; }

  // ---- layout and corruption knobs ----------------------------------------------------
  // Alignment used to lay out the data (does not add general.alignment; add that kv too).
  GgufWriter& set_layout_alignment(uint32_t a) { alignment_ = a; return *this; }
  GgufWriter& set_magic(uint32_t m) { magic_ = m; return *this; }
  GgufWriter& set_version(uint32_t v) { version_ = v; return *this; }
  GgufWriter& override_n_kv(uint64_t n) { n_kv_ = n; return *this; }
  GgufWriter& override_n_tensors(uint64_t n) { n_tensors_ = n; return *this; }

  // The file's bytes. *out_data_offset receives where the data section starts.
  std::vector<uint8_t> build(size_t* out_data_offset = nullptr) const;

 private:
  GgufWriter& add_scalar(const std::string& key, KvType type, const void* v, size_t n);

  std::vector<Kv> kvs_;
  std::vector<TensorEntry> tensors_;
  uint32_t alignment_ = 32;
  uint32_t magic_ = 0x46554747;  // "GGUF"
  uint32_t version_ = 3;
  std::optional<uint64_t> n_kv_, n_tensors_;
};

// Byte surgery on built files.
void patch_u32(std::vector<uint8_t>& bytes, size_t offset, uint32_t v);
void patch_u64(std::vector<uint8_t>& bytes, size_t offset, uint64_t v);
// Offset of the first occurrence of `needle` in bytes (SIZE_MAX when absent), for patching
// a field next to a known key or name.
size_t find_bytes(const std::vector<uint8_t>& bytes, const std::string& needle);
bool write_file(const std::string& path, const std::vector<uint8_t>& bytes);
// A path in the temp directory that no other test process uses: ctest runs test cases of
// one binary as parallel processes, and a file rewritten under another's mmap is a SIGBUS.
std::string temp_file(const std::string& name);

// A file (or folder) at temp_file(name), removed with everything in it when the object
// dies: a static one at exit, so a test process leaves nothing behind in the temp folder.
class TempPath {
 public:
  explicit TempPath(const std::string& name) : path_(temp_file(name)) {}
  ~TempPath();
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A complete, valid tiny model with random f32 weights from a seeded generator.
struct TinyModelOptions {
  std::string arch = "llama";  // "llama", "qwen2" (adds q/k/v biases), "qwen3" (adds q/k head norms)
                               // or "gemma3" (those norms, the post-block norms, a window of 16)
  int32_t n_layer = 2;
  int32_t n_embd = 64;
  int32_t n_head = 4;
  int32_t n_head_kv = 2;
  int32_t n_ff = 128;
  int32_t n_ctx_train = 512;
  bool tied_output = false;  // true: no output.weight (the loader aliases token_embd)
  uint64_t seed = 1;
  float weight_scale = 0.1f; // matrices ~ U(-scale, scale); norms ~ 1 + U(-scale, scale)
  std::string pre = "smollm";
  std::string chat_template;  // tokenizer.chat_template; omitted when empty
  bool spm_vocab = false;     // the SentencePiece vocabulary below instead of the gpt2 one
};

// Vocabulary: the 256 GPT-2 byte-level tokens (ids 0..255, byte b -> its printable
// stand-in), then merged tokens "Ġt", "he", "Ġthe" (merges "Ġ t", "h e", "Ġt he"), then the
// control tokens <|endoftext|> (bos), <|im_start|>, <|im_end|> (eos).
// spm_vocab (tokenizer.ggml.model "llama", no add_bos/add_space_prefix keys): <unk>, <s>
// (bos), </s> (eos), the 256 byte tokens <0x00>..<0xFF> (ids 3..258), then pieces "▁", "e"
// and "▁e" (scores -2, -3, -1), the same count.
constexpr int32_t kTinyVocab = 256 + 3 + 3;
GgufWriter make_tiny_llama(const TinyModelOptions& options = {});
// The fuzz harnesses' model (fuzz/, and the regression tests of what they found): 8 layers,
// 2 query heads on 1 KV head, a tied output; n_embd 32, or 64 where q8_0 KV needs head_dim 32.
inline TinyModelOptions fuzz_model_options(int32_t n_embd = 32) {
  TinyModelOptions o;
  o.n_layer = 8;
  o.n_embd = n_embd;
  o.n_head = 2;
  o.n_head_kv = 1;
  o.n_ff = 32;
  o.n_ctx_train = 256;
  o.tied_output = true;
  return o;
}
// The API tests' model (test_api_misuse, test_alloc_failure): make_tiny_llama with 4 layers
// (SlimInfer's three pruning layers must increase) and a ChatML template, written once per
// process to a file removed at exit. "" when it cannot be written.
const std::string& tiny_chat_model_path();
// The byte-level token text of byte b (GPT-2's bytes_to_unicode, as UTF-8).
std::string byte_token(uint8_t b);

}  // namespace wt::test
