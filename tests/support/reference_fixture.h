// Reads the logits fixtures written by tests/reference/reference_forward.py (format in
// tests/reference/README.md).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wt::test {

struct ReferenceRow {
  int32_t argmax = -1;
  float margin = 0;                             // top1 - top2 logit
  std::vector<std::pair<int32_t, float>> top;   // descending
  std::vector<float> sub;                       // logits of ReferenceCase::subset ids
};

struct ReferenceCase {
  std::string name;
  std::string model;  // file name as written in the fixture
  std::vector<int32_t> tokens;
  int32_t n_vocab = 0;
  std::vector<int32_t> subset;
  std::vector<ReferenceRow> rows;
};

// Returns false with a message in *error when the file is missing or malformed.
bool read_reference_case(const std::string& path, ReferenceCase* out, std::string* error);

// The .ref files of a directory, sorted.
std::vector<std::string> list_reference_files(const std::string& dir);

}  // namespace wt::test
