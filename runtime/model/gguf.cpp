// GGUF reader. Layout (little-endian): magic "GGUF", u32 version, u64 n_tensors, u64 n_kv,
// n_kv × (string key, u32 type, value), n_tensors × (string name, u32 n_dims, u64 ne[n_dims],
// u32 type, u64 offset), padding to general.alignment, then the tensor data section.
// A string is u64 length + bytes; an array is u32 element type + u64 count + elements.
#include "gguf.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <limits>
#include <system_error>

namespace wt {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kDefaultAlignment = 32;
constexpr int kMaxArrayDepth = 4;
// The smallest possible encodings. A count that could not fit even at this size is
// rejected before anything is allocated for it.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;              // key len, key, type, u8
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8;  // name len, name, n_dims, type, offset
// Vectors grow as entries are actually parsed, so memory stays proportional to bytes read.
constexpr size_t kMaxReserve = 4096;

struct GgmlTypeInfo {
  uint32_t id;
  const char* name;
  uint32_t block_elems;
  uint32_t block_bytes;
};

// Every ggml type a GGUF may hold, so the reader can size and bounds-check tensors of types
// Whittle cannot compute with (ids 4, 5, 31-33 and 36-38 were removed from ggml).
constexpr GgmlTypeInfo kGgmlTypes[] = {
    {0, "F32", 1, 4},        {1, "F16", 1, 2},        {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},     {6, "Q5_0", 32, 22},     {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},     {9, "Q8_1", 32, 36},     {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},  {12, "Q4_K", 256, 144},  {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},  {15, "Q8_K", 256, 292},  {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74}, {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},  {21, "IQ3_S", 256, 110}, {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},       {25, "I16", 1, 2},
    {26, "I32", 1, 4},       {27, "I64", 1, 8},       {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},  {30, "BF16", 1, 2},      {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},  {39, "MXFP4", 32, 17},
};

const GgmlTypeInfo* ggml_type_info(uint32_t id) {
  for (const GgmlTypeInfo& t : kGgmlTypes) {
    if (t.id == id) return &t;
  }
  return nullptr;
}

std::string str(uint64_t v) { return std::to_string(v); }

Status format_error(std::string message) { return error(WT_ERR_FORMAT, "gguf: " + message); }

size_t scalar_bytes(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::boolean: return 1;
    case GgufType::u16: case GgufType::i16: return 2;
    case GgufType::u32: case GgufType::i32: case GgufType::f32: return 4;
    case GgufType::u64: case GgufType::i64: case GgufType::f64: return 8;
    case GgufType::string: case GgufType::array: return 0;
  }
  return 0;
}

bool is_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::f64); }

bool is_integer(GgufType t) {
  switch (t) {
    case GgufType::u8: case GgufType::i8: case GgufType::u16: case GgufType::i16:
    case GgufType::u32: case GgufType::i32: case GgufType::u64: case GgufType::i64:
      return true;
    default:
      return false;
  }
}

// A bounds-checked read position over the file.
struct Cursor {
  const uint8_t* data;
  size_t size;
  size_t pos = 0;

  size_t left() const { return size - pos; }
  bool take(uint64_t n, const uint8_t** out) {
    if (n > left()) return false;
    *out = data + pos;
    pos += static_cast<size_t>(n);
    return true;
  }
  template <typename T>
  bool read(T* v) {
    const uint8_t* p = nullptr;
    if (!take(sizeof(T), &p)) return false;
    std::memcpy(v, p, sizeof(T));
    return true;
  }

  Status past_end(const std::string& what, uint64_t need) const {
    return format_error(what + " (" + str(need) + " bytes at offset " + str(pos) +
                        ") runs past end of file (size " + str(size) + ")");
  }
  template <typename T>
  Status read_or_fail(T* v, const std::string& what) {
    return read(v) ? Status::ok() : past_end(what, sizeof(T));
  }
  Status read_string(std::string_view* out, const std::string& what) {
    uint64_t len = 0;
    WT_TRY(read_or_fail(&len, what + " length"));
    const uint8_t* p = nullptr;
    if (!take(len, &p)) return past_end(what, len);
    *out = std::string_view(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    return Status::ok();
  }
};

Status check_bools(const uint8_t* p, uint64_t n, const std::string& what) {
  for (uint64_t i = 0; i < n; ++i) {
    if (p[i] > 1) return format_error(what + ": bool value " + str(p[i]) + " is not 0 or 1");
  }
  return Status::ok();
}

// Parses one value of `type` at the cursor. For arrays, fills the element type and count.
Status parse_value(Cursor& c, const std::string& what, GgufType type, int depth, GgufKv* kv) {
  const uint8_t* p = nullptr;
  if (type == GgufType::string) {
    std::string_view s;
    WT_TRY(c.read_string(&s, what + ": string"));
    kv->value = reinterpret_cast<const uint8_t*>(s.data());
    kv->value_bytes = s.size();
    return Status::ok();
  }
  if (type != GgufType::array) {
    const size_t n = scalar_bytes(type);
    if (!c.take(n, &p)) return c.past_end(what + ": " + gguf_type_name(type) + " value", n);
    if (type == GgufType::boolean) WT_TRY(check_bools(p, 1, what));
    kv->value = p;
    kv->value_bytes = n;
    return Status::ok();
  }

  uint32_t elem_raw = 0;
  uint64_t count = 0;
  WT_TRY(c.read_or_fail(&elem_raw, what + ": array element type"));
  if (!is_value_type(elem_raw)) return format_error(what + ": unknown array element type " + str(elem_raw));
  WT_TRY(c.read_or_fail(&count, what + ": array length"));
  const GgufType elem = static_cast<GgufType>(elem_raw);
  kv->elem_type = elem;
  kv->n_elems = count;
  kv->value = c.data + c.pos;
  if (elem == GgufType::string || elem == GgufType::array) {
    // Each element takes at least 8 (string) or 12 (array) bytes: reject impossible
    // counts up front instead of looping over them.
    const uint64_t min_elem = elem == GgufType::string ? 8 : 12;
    if (count > c.left() / min_elem) {
      return format_error(what + ": array of " + str(count) + " " + gguf_type_name(elem) +
                          "s runs past end of file (size " + str(c.size) + ")");
    }
    if (elem == GgufType::array && depth >= kMaxArrayDepth) {
      return format_error(what + ": arrays nested deeper than " + str(kMaxArrayDepth));
    }
    for (uint64_t i = 0; i < count; ++i) {
      // Vocabularies hold ~10^5 strings: build the element's name only on failure.
      if (elem == GgufType::string) {
        uint64_t len = 0;
        if (!c.read(&len)) return c.past_end(what + "[" + str(i) + "]: string length", 8);
        if (!c.take(len, &p)) return c.past_end(what + "[" + str(i) + "]: string", len);
        continue;
      }
      GgufKv inner;
      WT_TRY(parse_value(c, what + "[" + str(i) + "]", elem, depth + 1, &inner));
    }
  } else {
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(scalar_bytes(elem)), &bytes) ||
        !c.take(bytes, &p)) {
      return c.past_end(what + ": array of " + str(count) + " " + gguf_type_name(elem), bytes);
    }
    if (elem == GgufType::boolean) WT_TRY(check_bools(p, count, what));
  }
  kv->value_bytes = c.pos - (kv->value - c.data);
  return Status::ok();
}

std::string shape_string(const GgufTensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

}  // namespace

// Names from a malformed file may hold any bytes; keep messages printable and short.
std::string gguf_quoted(std::string_view s) {
  constexpr size_t kMaxShown = 96;
  std::string out = "'";
  for (size_t i = 0; i < s.size() && i < kMaxShown; ++i) {
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    out += (ch < 0x20 || ch == 0x7f) ? '?' : static_cast<char>(ch);
  }
  if (s.size() > kMaxShown) out += "...";
  return out + "'";
}


const char* gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::u8: return "u8";
    case GgufType::i8: return "i8";
    case GgufType::u16: return "u16";
    case GgufType::i16: return "i16";
    case GgufType::u32: return "u32";
    case GgufType::i32: return "i32";
    case GgufType::f32: return "f32";
    case GgufType::boolean: return "bool";
    case GgufType::string: return "string";
    case GgufType::array: return "array";
    case GgufType::u64: return "u64";
    case GgufType::i64: return "i64";
    case GgufType::f64: return "f64";
  }
  return "unknown";
}

const char* ggml_type_name(uint32_t type) {
  const GgmlTypeInfo* info = ggml_type_info(type);
  return info ? info->name : nullptr;
}

// ---- opening ------------------------------------------------------------------------------

GgufFile::~GgufFile() {
  if (map_) munmap(map_, map_bytes_);
}

void GgufFile::release_tensor_pages() const {
  if (!map_ || data_offset_ >= map_bytes_) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t begin = (data_offset_ + page - 1) / page * page;  // whole pages of tensor data only
  if (begin >= map_bytes_) return;
  // Advice only: if the kernel refuses, the pages simply stay cached.
  (void)madvise(static_cast<char*>(map_) + begin, map_bytes_ - begin, MADV_DONTNEED);
}

Status GgufFile::open(const std::string& path, std::shared_ptr<GgufFile>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return error(WT_ERR_IO, "cannot open '" + path + "': " + std::generic_category().message(errno));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return error(WT_ERR_IO, "'" + path + "' is not a regular file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // The owner of the mapping exists before the mapping does: were it made after, a failed
  // allocation of it would leave the mapping behind.
  std::shared_ptr<GgufFile> file;
  try {
    file.reset(new GgufFile());
  } catch (...) {
    ::close(fd);
    throw;
  }
  void* map = nullptr;
  if (size > 0) {
    map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return error(WT_ERR_IO, "cannot map '" + path + "': " + std::generic_category().message(err));
    }
  }
  ::close(fd);  // the mapping keeps the file alive

  file->map_ = map;
  file->map_bytes_ = size;
  file->data_ = static_cast<const uint8_t*>(map);
  file->size_ = size;
  WT_TRY(file->parse());
  *out = std::move(file);
  return Status::ok();
}

Status GgufFile::parse_memory(const uint8_t* data, size_t size, std::shared_ptr<GgufFile>* out) {
  if (!data && size > 0) return error(WT_ERR_INVALID_ARGUMENT, "gguf: null data");
  std::shared_ptr<GgufFile> file(new GgufFile());
  file->data_ = data;
  file->size_ = size;
  WT_TRY(file->parse());
  *out = std::move(file);
  return Status::ok();
}

// ---- parsing ------------------------------------------------------------------------------

Status GgufFile::parse() {
  static const uint8_t kEmpty = 0;
  Cursor c{data_ ? data_ : &kEmpty, size_};

  uint32_t magic = 0;
  WT_TRY(c.read_or_fail(&magic, "magic"));
  if (magic != kMagic) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "0x%08x", magic);
    return format_error(std::string("bad magic ") + hex + " (expected \"GGUF\"): not a GGUF file");
  }
  WT_TRY(c.read_or_fail(&version_, "version"));
  if (version_ == 1) {
    return error(WT_ERR_UNSUPPORTED, "gguf: version 1 files are not supported (convert the model again)");
  }
  const uint32_t swapped = __builtin_bswap32(version_);
  if (swapped == 2 || swapped == 3) {
    return error(WT_ERR_UNSUPPORTED, "gguf: big-endian files are not supported");
  }
  if (version_ != 2 && version_ != 3) {
    return format_error("unknown version " + str(version_) + " (expected 2 or 3)");
  }

  uint64_t n_tensors = 0, n_kv = 0;
  WT_TRY(c.read_or_fail(&n_tensors, "tensor count"));
  WT_TRY(c.read_or_fail(&n_kv, "kv count"));
  if (n_kv > c.left() / kMinKvBytes) {
    return format_error("kv count " + str(n_kv) + " cannot fit in a file of " + str(size_) + " bytes");
  }
  if (n_tensors > c.left() / kMinTensorInfoBytes ||
      n_kv * kMinKvBytes + n_tensors * kMinTensorInfoBytes > c.left()) {
    return format_error("tensor count " + str(n_tensors) + " cannot fit in a file of " + str(size_) +
                        " bytes");
  }

  kvs_.reserve(std::min<uint64_t>(n_kv, kMaxReserve));
  for (uint64_t i = 0; i < n_kv; ++i) {
    GgufKv kv;
    WT_TRY(c.read_string(&kv.key, "key of kv " + str(i)));
    if (kv.key.empty()) return format_error("kv " + str(i) + " has an empty key");
    const std::string what = "key " + gguf_quoted(kv.key);
    uint32_t type = 0;
    WT_TRY(c.read_or_fail(&type, what + ": value type"));
    if (!is_value_type(type)) return format_error(what + ": unknown value type " + str(type));
    kv.type = static_cast<GgufType>(type);
    WT_TRY(parse_value(c, what, kv.type, 0, &kv));
    if (!kv_index_.emplace(kv.key, kvs_.size()).second) {
      return format_error("duplicate key " + gguf_quoted(kv.key));
    }
    kvs_.push_back(kv);
  }

  alignment_ = kDefaultAlignment;
  if (const GgufKv* kv = find_kv("general.alignment")) {
    int64_t a = 0;
    const bool is_int = get_i64("general.alignment", &a, true).is_ok();
    if (!is_int || a <= 0 || (a & (a - 1)) != 0) {
      const std::string shown = is_int ? " = " + std::to_string(a) : std::string(" of type ") + gguf_type_name(kv->type);
      return format_error("general.alignment" + shown + " is not a nonzero power of two");
    }
    if (a > INT32_MAX)
      return format_error("general.alignment = " + std::to_string(a) +
                          " is larger than 1073741824 (2^30), the largest alignment this reader takes");
    alignment_ = static_cast<uint32_t>(a);
  }

  tensors_.reserve(std::min<uint64_t>(n_tensors, kMaxReserve));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensorInfo t;
    WT_TRY(c.read_string(&t.name, "name of tensor " + str(i)));
    if (t.name.empty()) return format_error("tensor " + str(i) + " has an empty name");
    const std::string what = "tensor " + gguf_quoted(t.name);
    if (!tensor_index_.emplace(t.name, tensors_.size()).second) {
      return format_error("duplicate tensor name " + gguf_quoted(t.name));
    }
    uint32_t n_dims = 0;
    WT_TRY(c.read_or_fail(&n_dims, what + ": n_dims"));
    if (n_dims > 4) return format_error(what + ": n_dims " + str(n_dims) + " > 4");
    t.n_dims = static_cast<int32_t>(n_dims);
    int64_t n_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne = 0;
      WT_TRY(c.read_or_fail(&ne, what + ": dimension " + str(d)));
      if (ne > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return format_error(what + ": dimension " + str(d) + " = " + str(ne) + " is out of range");
      }
      t.ne[d] = static_cast<int64_t>(ne);
      if (__builtin_mul_overflow(n_elems, t.ne[d], &n_elems)) {
        return format_error(what + ": element count of its dimensions overflows");
      }
    }
    uint32_t type = 0;
    WT_TRY(c.read_or_fail(&type, what + ": type"));
    const GgmlTypeInfo* info = ggml_type_info(type);
    if (!info) return format_error(what + ": unknown type id " + str(type));
    t.type = type;
    if (t.ne[0] % info->block_elems != 0) {
      return format_error(what + ": row of " + std::to_string(t.ne[0]) + " elements is not a multiple of the " +
                          info->name + " block size " + str(info->block_elems));
    }
    uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.ne[0] / info->block_elems), uint64_t{info->block_bytes},
                               &bytes)) {
      return format_error(what + ": byte size of " + shape_string(t) + " overflows");
    }
    for (int d = 1; d < 4; ++d) {
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(t.ne[d]), &bytes)) {
        return format_error(what + ": byte size of " + shape_string(t) + " overflows");
      }
    }
    t.n_bytes = static_cast<size_t>(bytes);
    WT_TRY(c.read_or_fail(&t.offset, what + ": offset"));
    if (t.offset % alignment_ != 0) {
      return format_error(what + ": offset " + str(t.offset) + " is not a multiple of the alignment " +
                          str(alignment_));
    }
    tensors_.push_back(t);
  }

  // The data section starts at the first aligned offset after the header.
  uint64_t data_offset = 0;
  if (__builtin_add_overflow(static_cast<uint64_t>(c.pos), alignment_ - 1, &data_offset)) {
    return format_error("data section offset overflows");
  }
  data_offset_ = static_cast<size_t>(data_offset / alignment_ * alignment_);
  return check_tensor_data();
}

Status GgufFile::check_tensor_data() {
  if (!tensors_.empty() && data_offset_ > size_) {
    return format_error("data section starts at " + str(data_offset_) + ", past end of file (size " +
                        str(size_) + ")");
  }
  for (GgufTensorInfo& t : tensors_) {
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(static_cast<uint64_t>(data_offset_), t.offset, &begin) ||
        __builtin_add_overflow(begin, static_cast<uint64_t>(t.n_bytes), &end) || end > size_) {
      return format_error("tensor " + gguf_quoted(t.name) + ": data [offset " + str(t.offset) + ", " + str(t.n_bytes) +
                          " bytes] runs past end of file (data section at " + str(data_offset_) +
                          ", file size " + str(size_) + ")");
    }
    t.data = data_ + begin;
  }
  // Sorted by offset, each tensor must end before the next begins (stable, so a message
  // about two tensors at one offset names them in file order).
  std::vector<const GgufTensorInfo*> order;
  order.reserve(tensors_.size());
  for (const GgufTensorInfo& t : tensors_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensorInfo& a = *order[i - 1];
    const GgufTensorInfo& b = *order[i];
    if (a.offset + a.n_bytes > b.offset) {
      return format_error("tensor " + gguf_quoted(a.name) + " [offset " + str(a.offset) + ", " + str(a.n_bytes) +
                          " bytes] overlaps tensor " + gguf_quoted(b.name) + " [offset " + str(b.offset) + "]");
    }
  }
  return Status::ok();
}

// ---- metadata getters -----------------------------------------------------------------------

const GgufKv* GgufFile::find_kv(std::string_view key) const {
  const auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

namespace {

Status missing_key(std::string_view key) { return format_error("missing required key " + gguf_quoted(key)); }

Status wrong_type(const GgufKv& kv, const char* expected) {
  std::string found = gguf_type_name(kv.type);
  if (kv.type == GgufType::array) found = std::string("array of ") + gguf_type_name(kv.elem_type);
  return format_error("key " + gguf_quoted(kv.key) + " has type " + found + ", expected " + expected);
}

// Any integer value as sign and magnitude, so every target range can be checked exactly.
void read_integer(const GgufKv& kv, bool* negative, uint64_t* magnitude) {
  int64_t s = 0;
  uint64_t u = 0;
  bool is_signed = true;
  switch (kv.type) {
    case GgufType::u8: { uint8_t v; std::memcpy(&v, kv.value, 1); u = v; is_signed = false; break; }
    case GgufType::u16: { uint16_t v; std::memcpy(&v, kv.value, 2); u = v; is_signed = false; break; }
    case GgufType::u32: { uint32_t v; std::memcpy(&v, kv.value, 4); u = v; is_signed = false; break; }
    case GgufType::u64: { std::memcpy(&u, kv.value, 8); is_signed = false; break; }
    case GgufType::i8: { int8_t v; std::memcpy(&v, kv.value, 1); s = v; break; }
    case GgufType::i16: { int16_t v; std::memcpy(&v, kv.value, 2); s = v; break; }
    case GgufType::i32: { int32_t v; std::memcpy(&v, kv.value, 4); s = v; break; }
    case GgufType::i64: { std::memcpy(&s, kv.value, 8); break; }
    default: break;
  }
  if (is_signed) {
    *negative = s < 0;
    // Negating INT64_MIN overflows; go through unsigned arithmetic instead.
    *magnitude = s < 0 ? 0 - static_cast<uint64_t>(s) : static_cast<uint64_t>(s);
  } else {
    *negative = false;
    *magnitude = u;
  }
}

// Fetches an integer key and checks it lies in [-max_negative, max_positive].
Status get_integer(const GgufFile& f, std::string_view key, bool required, const char* target,
                   uint64_t max_negative, uint64_t max_positive, bool* found, bool* negative,
                   uint64_t* magnitude) {
  *found = false;
  const GgufKv* kv = f.find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (!is_integer(kv->type)) return wrong_type(*kv, "an integer");
  read_integer(*kv, negative, magnitude);
  if ((*negative && *magnitude > max_negative) || (!*negative && *magnitude > max_positive)) {
    return format_error("key " + gguf_quoted(key) + " = " + (*negative ? "-" : "") + str(*magnitude) +
                        " does not fit " + target);
  }
  *found = true;
  return Status::ok();
}

}  // namespace

Status GgufFile::get_u32(std::string_view key, uint32_t* out, bool required) const {
  bool found = false, neg = false;
  uint64_t mag = 0;
  WT_TRY(get_integer(*this, key, required, "u32", 0, UINT32_MAX, &found, &neg, &mag));
  if (found) *out = static_cast<uint32_t>(mag);
  return Status::ok();
}

Status GgufFile::get_i32(std::string_view key, int32_t* out, bool required) const {
  bool found = false, neg = false;
  uint64_t mag = 0;
  WT_TRY(get_integer(*this, key, required, "i32", uint64_t{1} << 31, INT32_MAX, &found, &neg, &mag));
  if (found) *out = neg ? static_cast<int32_t>(-static_cast<int64_t>(mag)) : static_cast<int32_t>(mag);
  return Status::ok();
}

Status GgufFile::get_u64(std::string_view key, uint64_t* out, bool required) const {
  bool found = false, neg = false;
  uint64_t mag = 0;
  WT_TRY(get_integer(*this, key, required, "u64", 0, UINT64_MAX, &found, &neg, &mag));
  if (found) *out = mag;
  return Status::ok();
}

Status GgufFile::get_i64(std::string_view key, int64_t* out, bool required) const {
  bool found = false, neg = false;
  uint64_t mag = 0;
  WT_TRY(get_integer(*this, key, required, "i64", uint64_t{1} << 63, INT64_MAX, &found, &neg, &mag));
  if (found) *out = neg ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  return Status::ok();
}

Status GgufFile::get_f32(std::string_view key, float* out, bool required) const {
  const GgufKv* kv = find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (kv->type == GgufType::f32) {
    std::memcpy(out, kv->value, 4);
    return Status::ok();
  }
  if (kv->type != GgufType::f64) return wrong_type(*kv, "f32 or f64");
  double v = 0;
  std::memcpy(&v, kv->value, 8);
  if (!std::isfinite(v) || std::fabs(v) > FLT_MAX) {
    return format_error("key " + gguf_quoted(key) + " = " + std::to_string(v) + " does not fit f32");
  }
  *out = static_cast<float>(v);
  return Status::ok();
}

Status GgufFile::get_bool(std::string_view key, bool* out, bool required) const {
  const GgufKv* kv = find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (kv->type != GgufType::boolean) return wrong_type(*kv, "bool");
  *out = kv->value[0] != 0;
  return Status::ok();
}

Status GgufFile::get_string(std::string_view key, std::string_view* out, bool required) const {
  const GgufKv* kv = find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (kv->type != GgufType::string) return wrong_type(*kv, "string");
  *out = std::string_view(reinterpret_cast<const char*>(kv->value), kv->value_bytes);
  return Status::ok();
}

Status GgufFile::get_string_array(std::string_view key, std::vector<std::string_view>* out,
                                  bool required) const {
  const GgufKv* kv = find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (kv->type != GgufType::array || kv->elem_type != GgufType::string) {
    return wrong_type(*kv, "array of string");
  }
  // Validated by parse(): every length fits, so this walk needs no checks.
  out->clear();
  out->reserve(static_cast<size_t>(kv->n_elems));
  const uint8_t* p = kv->value;
  for (uint64_t i = 0; i < kv->n_elems; ++i) {
    uint64_t len = 0;
    std::memcpy(&len, p, 8);
    out->emplace_back(reinterpret_cast<const char*>(p + 8), static_cast<size_t>(len));
    p += 8 + len;
  }
  return Status::ok();
}

Status GgufFile::get_array_raw(std::string_view key, GgufType want, bool required,
                               const uint8_t** data, size_t* n, bool* found) const {
  *found = false;
  const GgufKv* kv = find_kv(key);
  if (!kv) return required ? missing_key(key) : Status::ok();
  if (kv->type != GgufType::array || kv->elem_type != want) {
    return wrong_type(*kv, (std::string("array of ") + gguf_type_name(want)).c_str());
  }
  *data = kv->value;
  *n = static_cast<size_t>(kv->n_elems);
  *found = true;
  return Status::ok();
}

// ---- tensors --------------------------------------------------------------------------------

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

Status GgufFile::get_tensor(std::string_view name, Tensor* out, size_t* out_bytes) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (!t) return format_error("tensor " + gguf_quoted(name) + " not found");
  if (!dtype_traits(t->type)) {
    return error(WT_ERR_UNSUPPORTED, "gguf: tensor " + gguf_quoted(name) + " has type " + ggml_type_name(t->type) +
                                         ", which Whittle does not support");
  }
  *out = make_tensor(const_cast<uint8_t*>(t->data), static_cast<DType>(t->type), t->n_dims, t->ne);
  if (out_bytes) *out_bytes = t->n_bytes;
  return Status::ok();
}

}  // namespace wt
