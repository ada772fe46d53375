// Loading GGUF bytes the tests build (support/gguf_writer.h) the way wt_model_load reads a
// file, and checking the status of what must be refused. Shared by test_gguf.cpp (the
// reader) and test_model_loader.cpp (architectures and vocabularies).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "support/gguf_writer.h"

namespace wt::test {

// An exact-size heap copy, so ASan sees any read past the end of a (truncated) file.
struct ExactBuffer {
  explicit ExactBuffer(const std::vector<uint8_t>& bytes);
  size_t size;
  std::unique_ptr<uint8_t[]> data;
};

// GgufFile::parse_memory over an exact copy of the bytes.
Status parse_bytes(const std::vector<uint8_t>& bytes);

struct Loaded {
  std::unique_ptr<ExactBuffer> buf;  // declared first: outlives the model that points into it
  std::unique_ptr<Model> model;
  Status status;
};

// Parses and loads the bytes as load_model does a file.
Loaded load_bytes(const std::vector<uint8_t>& bytes, const LoadOptions& options = {});
Status load_status(const GgufWriter& w);

// Checks st has code and a message containing needle (both shown when it does not).
void expect_error(const Status& st, wt_status code, const std::string& needle);

// Replaces a kv by a u32 one with the same key.
void set_u32(GgufWriter& w, const std::string& key, uint32_t v);

}  // namespace wt::test
