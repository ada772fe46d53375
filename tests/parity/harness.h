// Runs one parity case on a backend: tensors placed in the backend's memory (at offsets
// that exercise unaligned bindings), filled with the same seeded bytes on every backend,
// the op launched, the results read back as floats or ints.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "parity_cases.h"

namespace wt::parity {

// The bytes of every tensor of a case, generated once from a seed.
struct CaseData {
  std::vector<uint8_t> bytes[4];  // dst, src0, src1, src2 (empty when unused)
};
CaseData make_data(const Case& c, uint32_t seed);

struct Outputs {
  std::vector<float> values;   // the compared tensors, concatenated (rows only, no padding)
  std::vector<int32_t> ints;   // out_i
};

// Runs c on backend b; the status of the first failing step (alloc, launch, synchronize).
Status run_case(Backend& b, const Case& c, const CaseData& data, size_t pad_bytes, Outputs* out);

struct Error {
  double nmse = 0.0;
  double max_abs = 0.0;
  size_t n_int_mismatch = 0;
  bool size_mismatch = false;
};
Error compare(const Outputs& got, const Outputs& ref);

// Non-CPU backends compiled into this build, with a way to make each.
struct BackendMaker {
  const char* name;
  Status (*create)(const BackendOptions&, std::unique_ptr<Backend>*);
};
std::vector<BackendMaker> compiled_backends();
// Set by a test that found no device to run on; main() then exits with ctest's skip code.
extern bool g_skipped;
// Set when a backend really ran a case: a process that ran something never exits "skipped".
extern bool g_ran;
// WT_PARITY_VALIDATION=1 runs Vulkan under its validation layer (the ctest "validation" label).
bool validation_requested();

}  // namespace wt::parity
