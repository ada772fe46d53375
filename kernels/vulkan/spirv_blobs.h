// The SPIR-V of every kernel variant, compiled by glslc at build time and embedded as byte
// arrays by embed_spirv.cmake (the generated spirv_blobs.cpp lives in the build tree).
#pragma once

#include <cstddef>

namespace wt::vk::spirv {

struct Blob {
  const char* name;           // kernel variant, e.g. "matmul_q4_0"
  const unsigned char* data;  // 4-byte aligned, as vkCreateShaderModule reads words
  size_t size_bytes;
};

extern const Blob kBlobs[];
extern const size_t kBlobCount;

}  // namespace wt::vk::spirv
