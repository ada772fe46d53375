// GGUF v2/v3 reader. The file is mapped read-only and validated completely on open: every
// count, length, offset and size is checked against the bytes that exist, so later
// accessors can hand out views into the mapping without further checks.
//
// Errors: WT_ERR_IO (cannot open/map), WT_ERR_FORMAT (malformed; the message names the
// key, tensor or field), WT_ERR_UNSUPPORTED (valid GGUF this build cannot use: version 1,
// big-endian files, a tensor type Whittle lacks when that tensor is requested).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "kernels/tensor.h"
#include "base/status.h"

namespace wt {

// Metadata value types, numbered as in the file.
enum class GgufType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

const char* gguf_type_name(GgufType t);
// A name from a file, for a message: quoted, control bytes (NUL too) shown as '?', at most
// 96 bytes (a malformed file's names may hold any bytes, and a NUL would end the C string
// wt_last_error returns).
std::string gguf_quoted(std::string_view s);
// Name of a ggml tensor type id ("Q5_0"), or nullptr when the id is no ggml type. Covers
// types Whittle cannot compute with, so the reader can size them and name them in errors.
const char* ggml_type_name(uint32_t type);

// A numeric array inside the mapping. GGUF does not align metadata, so elements are copied
// out one by one rather than handed out as a T*.
template <typename T>
class GgufArrayView {
 public:
  GgufArrayView() = default;
  GgufArrayView(const uint8_t* data, size_t n) : data_(data), n_(n) {}
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  T operator[](size_t i) const {
    T v;
    std::memcpy(&v, data_ + i * sizeof(T), sizeof(T));
    return v;
  }

 private:
  const uint8_t* data_ = nullptr;
  size_t n_ = 0;
};

struct GgufKv {
  std::string_view key;
  GgufType type = GgufType::u8;
  GgufType elem_type = GgufType::u8;  // arrays only
  uint64_t n_elems = 1;               // arrays: element count
  const uint8_t* value = nullptr;     // scalar bytes; string bytes; first array element
  size_t value_bytes = 0;             // bytes from `value` to the end of the value
};

struct GgufTensorInfo {
  std::string_view name;
  uint32_t type = 0;  // raw ggml type id; may be one Whittle lacks (see GgufFile::get_tensor)
  int32_t n_dims = 0;
  int64_t ne[4] = {1, 1, 1, 1};
  uint64_t offset = 0;  // from the start of the data section
  size_t n_bytes = 0;
  const uint8_t* data = nullptr;
};

class GgufFile {
 public:
  // Maps `path` read-only and validates it. The mapping lives as long as the GgufFile.
  static Status open(const std::string& path, std::shared_ptr<GgufFile>* out);
  // Validates bytes the caller keeps alive for the GgufFile's lifetime (no copy).
  static Status parse_memory(const uint8_t* data, size_t size, std::shared_ptr<GgufFile>* out);

  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  size_t data_offset() const { return data_offset_; }  // start of the tensor data section
  size_t file_bytes() const { return size_; }
  // Drops the resident pages of the tensor data section once the weights were copied
  // elsewhere (a device backend), so the model is not held twice in memory. The mapping
  // stays valid: a later read faults the pages back in from the file. No-op for bytes from
  // parse_memory.
  void release_tensor_pages() const;

  // ---- metadata -------------------------------------------------------------------------
  // Every getter: a missing key is WT_ERR_FORMAT when `required`, otherwise WT_OK with *out
  // left unchanged (so callers preset the default). A wrong type or a value that does not
  // fit the target is WT_ERR_FORMAT naming the key.
  const std::vector<GgufKv>& kvs() const { return kvs_; }
  const GgufKv* find_kv(std::string_view key) const;
  bool has_key(std::string_view key) const { return find_kv(key) != nullptr; }

  // Integers accept any integer value type whose value fits the target.
  Status get_u32(std::string_view key, uint32_t* out, bool required) const;
  Status get_i32(std::string_view key, int32_t* out, bool required) const;
  Status get_u64(std::string_view key, uint64_t* out, bool required) const;
  Status get_i64(std::string_view key, int64_t* out, bool required) const;
  // Accepts f32 and f64 (an f64 must be finite and fit a float).
  Status get_f32(std::string_view key, float* out, bool required) const;
  Status get_bool(std::string_view key, bool* out, bool required) const;
  // Views into the mapping.
  Status get_string(std::string_view key, std::string_view* out, bool required) const;
  Status get_string_array(std::string_view key, std::vector<std::string_view>* out,
                          bool required) const;
  // T is one of uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, uint64_t, int64_t,
  // float, double; the array's element type must be exactly T's.
  template <typename T>
  Status get_array(std::string_view key, GgufArrayView<T>* out, bool required) const {
    const uint8_t* data = nullptr;
    size_t n = 0;
    bool found = false;
    WT_TRY(get_array_raw(key, array_type_of<T>(), required, &data, &n, &found));
    if (found) *out = GgufArrayView<T>(data, n);
    return Status::ok();
  }

  // ---- tensors --------------------------------------------------------------------------
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // A view of a tensor's data in the mapping. WT_ERR_FORMAT when absent, WT_ERR_UNSUPPORTED
  // when its type is a ggml type Whittle lacks (both name the tensor). The view's data is
  // read-only memory even though Tensor::data is not const.
  Status get_tensor(std::string_view name, Tensor* out, size_t* out_bytes) const;

 private:
  GgufFile() = default;
  Status parse();
  Status check_tensor_data();
  Status get_array_raw(std::string_view key, GgufType want, bool required, const uint8_t** data,
                       size_t* n, bool* found) const;

  template <typename T>
  static constexpr GgufType array_type_of() {
    if constexpr (std::is_same_v<T, uint8_t>) return GgufType::u8;
    else if constexpr (std::is_same_v<T, int8_t>) return GgufType::i8;
    else if constexpr (std::is_same_v<T, uint16_t>) return GgufType::u16;
    else if constexpr (std::is_same_v<T, int16_t>) return GgufType::i16;
    else if constexpr (std::is_same_v<T, uint32_t>) return GgufType::u32;
    else if constexpr (std::is_same_v<T, int32_t>) return GgufType::i32;
    else if constexpr (std::is_same_v<T, uint64_t>) return GgufType::u64;
    else if constexpr (std::is_same_v<T, int64_t>) return GgufType::i64;
    else if constexpr (std::is_same_v<T, float>) return GgufType::f32;
    else if constexpr (std::is_same_v<T, double>) return GgufType::f64;
    else static_assert(sizeof(T) == 0, "GgufArrayView: unsupported element type");
  }

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;

  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  size_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace wt
