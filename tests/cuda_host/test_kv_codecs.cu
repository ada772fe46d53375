// The CUDA kernels' KV cache codecs (kernels/cuda/kv_store.cuh, kv_read.cuh) run on the host:
// they are __host__ __device__, so nvcc builds them into this test and a machine without a
// GPU checks that a cache the CUDA kernels write holds the bytes the CPU backend writes
// (kv_store_row: f16 nearest even, q8_0 as ggml quantizes), and that what the kernels read
// back is the CPU's dequantized value, element by element and 4 at a time. The parity suite
// (tests/parity) checks the kernels that use them, on a GPU.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/kv_rows.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/kv_read.cuh"
#include "kernels/cuda/kv_store.cuh"

namespace {

using wt::DType;
using namespace wt::cuda;

size_t row_bytes(DType t, int64_t d) {
  size_t b = 0;
  REQUIRE(wt::dtype_row_bytes(t, d, &b));
  return b;
}

// Rows that reach the corners: a zero block, a block whose scaled values land on .5
// (ties round away from zero), large and tiny magnitudes, negatives, f16 subnormals.
std::vector<float> test_row(int64_t d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> x(static_cast<size_t>(d));
  for (float& v : x) v = normal(rng);
  for (int64_t i = 0; i < 32 && i < d; ++i) x[static_cast<size_t>(i)] = 0.0f;  // a zero block
  if (d >= 64) {
    // Block 1: max 127, so d = 1 and x / d is x: halves tie.
    for (int64_t i = 32; i < 64; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i - 48) + 0.5f;
    x[63] = 127.0f;
  }
  if (d >= 96) {
    x[64] = 6.0e-8f;  // below f16's smallest normal
    x[65] = -3.0e4f;
    x[66] = 1.0e-3f;
  }
  return x;
}

template <KvStore S>
std::vector<uint8_t> store_row(const std::vector<float>* src_f32, const std::vector<uint8_t>* src_bytes, DType t,
                               int64_t d) {
  std::vector<uint8_t> out(row_bytes(t, d), 0xA5);
  const char* src = src_f32 ? reinterpret_cast<const char*>(src_f32->data())
                            : src_bytes ? reinterpret_cast<const char*>(src_bytes->data()) : nullptr;
  const KvStore s = src_bytes ? KvStore::bytes : kv_store_of(t, DType::f32);
  REQUIRE(s == S);
  const int64_t units = kv_store_units(S, t, d);
  for (int64_t u = 0; u < units; ++u) kv_store_unit<S>(src, reinterpret_cast<char*>(out.data()), u);
  return out;
}

std::vector<uint8_t> cpu_row(const std::vector<float>& x, DType t) {
  std::vector<uint8_t> out(row_bytes(t, static_cast<int64_t>(x.size())));
  wt::cpu::kv_store_row(t, x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

template <typename Kv>
void check_reads(const std::vector<uint8_t>& row, DType t, int64_t d) {
  std::vector<float> want(static_cast<size_t>(d));
  wt::cpu::dequantize(t, row.data(), want.data(), d);
  const char* r = reinterpret_cast<const char*>(row.data());
  for (int64_t i = 0; i < d; ++i) CHECK(Kv::at(r, static_cast<int>(i)) == want[static_cast<size_t>(i)]);
  for (int64_t i = 0; i + 4 <= d; i += 4) {
    const float4 g = Kv::load4(r, static_cast<int>(i));
    CHECK(g.x == want[static_cast<size_t>(i)]);
    CHECK(g.y == want[static_cast<size_t>(i + 1)]);
    CHECK(g.z == want[static_cast<size_t>(i + 2)]);
    CHECK(g.w == want[static_cast<size_t>(i + 3)]);
  }
}

}  // namespace

TEST_CASE("cuda kv codecs: rows stored as f16 and q8_0 are the CPU's bytes and read back as the CPU's values") {
  for (int64_t d : {32, 64, 96, 128, 192}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      CAPTURE(d);
      CAPTURE(seed);
      const std::vector<float> x = test_row(d, seed);

      const std::vector<uint8_t> f16 = store_row<KvStore::f16>(&x, nullptr, DType::f16, d);
      CHECK(f16 == cpu_row(x, DType::f16));
      check_reads<KvF16>(f16, DType::f16, d);

      const std::vector<uint8_t> q8 = store_row<KvStore::q8_0>(&x, nullptr, DType::q8_0, d);
      CHECK(q8 == cpu_row(x, DType::q8_0));
      check_reads<KvQ8>(q8, DType::q8_0, d);

      const std::vector<uint8_t> f32 = store_row<KvStore::f32>(&x, nullptr, DType::f32, d);
      CHECK(f32 == cpu_row(x, DType::f32));
      check_reads<KvF32>(f32, DType::f32, d);

      // A cache's rows into one of its type: the bytes (the pager's staging of a pruned prompt).
      CHECK(store_row<KvStore::bytes>(nullptr, &f16, DType::f16, d) == f16);
      CHECK(store_row<KvStore::bytes>(nullptr, &q8, DType::q8_0, d) == q8);
    }
  }
}

TEST_CASE("cuda kv codecs: an absent source row stores zeros of every type") {
  const int64_t d = 64;
  const std::vector<float> zeros(static_cast<size_t>(d), 0.0f);
  CHECK(store_row<KvStore::f16>(nullptr, nullptr, DType::f16, d) == cpu_row(zeros, DType::f16));
  CHECK(store_row<KvStore::q8_0>(nullptr, nullptr, DType::q8_0, d) == cpu_row(zeros, DType::q8_0));
  CHECK(store_row<KvStore::f32>(nullptr, nullptr, DType::f32, d) == cpu_row(zeros, DType::f32));
}

TEST_CASE("cuda kv codecs: which stores a pair of types takes and which rows are read 4 at a time") {
  CHECK(kv_store_of(DType::f32, DType::f32) == KvStore::f32);
  CHECK(kv_store_of(DType::f16, DType::f32) == KvStore::f16);
  CHECK(kv_store_of(DType::q8_0, DType::f32) == KvStore::q8_0);
  CHECK(kv_store_of(DType::f16, DType::f16) == KvStore::bytes);
  CHECK(kv_store_of(DType::q8_0, DType::q8_0) == KvStore::bytes);
  CHECK(kv_store_units(KvStore::q8_0, DType::f32, 96) == 3);
  CHECK(kv_store_units(KvStore::bytes, DType::q8_0, 96) == 51);  // 102 bytes
  CHECK(kv_store_units(KvStore::bytes, DType::f16, 96) == 96);

  alignas(16) static char base[1024];
  CHECK(kv_rows_vec4(DType::f32, 64, RowView{base, 256, 768}));
  CHECK_FALSE(kv_rows_vec4(DType::f32, 64, RowView{base + 8, 256, 768}));   // 8-byte aligned
  CHECK(kv_rows_vec4(DType::f16, 64, RowView{base + 8, 128, 384}));         // enough for f16
  CHECK_FALSE(kv_rows_vec4(DType::f16, 66, RowView{base, 132, 396}));       // groups straddle rows
  CHECK_FALSE(kv_rows_vec4(DType::q8_0, 64, RowView{base, 68, 204}));       // a value at a time
}
