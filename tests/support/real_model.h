// The real default model (models/) and a long English prompt for the pruning tests, loaded
// once per test binary; tests skip visibly when the model is missing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "whittle.h"

namespace wt::test {

struct RealModel {
  wt_model* model = nullptr;
  std::vector<wt_token> text;  // real English (a Debian license text), tokenized

  bool ok() const { return model && text.size() >= 1024; }
  // The first n tokens of the text.
  std::vector<wt_token> prompt(size_t n) const { return {text.begin(), text.begin() + static_cast<long>(n)}; }
};

const std::string& real_model_path();
const RealModel& real_model();
// false, with a "SKIPPED" message naming the missing file, when the model is absent.
bool have_real_model();

}  // namespace wt::test
