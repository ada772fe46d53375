#include "dtype.h"

namespace wt {

namespace {

constexpr DTypeTraits kTraits[] = {
    {DType::f32, "F32", 1, 4},
    {DType::f16, "F16", 1, 2},
    {DType::bf16, "BF16", 1, 2},
    {DType::q4_0, "Q4_0", 32, 18},   // f16 d, 16 bytes of nibbles
    {DType::q4_1, "Q4_1", 32, 20},   // f16 d, f16 m, 16 bytes of nibbles
    {DType::q5_0, "Q5_0", 32, 22},   // f16 d, u32 high bits, 16 bytes of nibbles
    {DType::q5_1, "Q5_1", 32, 24},   // f16 d, f16 m, u32 high bits, 16 bytes of nibbles
    {DType::q8_0, "Q8_0", 32, 34},   // f16 d, 32 int8
    {DType::q4_k, "Q4_K", 256, 144}, // f16 d, f16 dmin, 12 scale bytes, 128 nibble bytes
    {DType::q5_k, "Q5_K", 256, 176}, // as Q4_K + 32 bytes of high bits
    {DType::q6_k, "Q6_K", 256, 210}, // 128 low, 64 high, 16 int8 scales, f16 d
};

}  // namespace

const DTypeTraits* dtype_traits(uint32_t ggml_type) {
  for (const DTypeTraits& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == ggml_type) return &t;
  }
  return nullptr;
}

const char* dtype_name(DType t) {
  const DTypeTraits* tr = dtype_traits(static_cast<uint32_t>(t));
  return tr ? tr->name : "unknown";
}

bool dtype_row_bytes(DType t, int64_t n, size_t* out_bytes) {
  const DTypeTraits* tr = dtype_traits(static_cast<uint32_t>(t));
  if (!tr || n < 0 || n % tr->block_elems != 0) return false;
  const uint64_t blocks = static_cast<uint64_t>(n / tr->block_elems);
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(blocks, static_cast<uint64_t>(tr->block_bytes), &bytes)) return false;
  if (bytes > SIZE_MAX) return false;
  *out_bytes = static_cast<size_t>(bytes);
  return true;
}

}  // namespace wt
