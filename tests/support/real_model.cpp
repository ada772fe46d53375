#include "real_model.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

namespace wt::test {

namespace {

struct Loaded : RealModel {
  Loaded() {
    std::ifstream f(real_model_path());
    if (!f.good()) return;
    if (wt_model_load(real_model_path().c_str(), nullptr, &model) != WT_OK) return;
    std::ifstream lic("/usr/share/common-licenses/GPL-3");
    std::stringstream ss;
    ss << lic.rdbuf();
    std::string s = ss.str();
    if (s.size() < 4000) s = "The quick brown fox jumps over the lazy dog. " + s;
    while (s.size() < 8000) s += " The quick brown fox jumps over the lazy dog.";
    text.resize(s.size() + 16);
    size_t n = 0;
    wt_tokenize_params tp = wt_tokenize_default_params();
    if (wt_tokenize(model, s.data(), s.size(), &tp, text.data(), text.size(), &n) != WT_OK) n = 0;
    text.resize(n);
  }
  ~Loaded() { wt_model_free(model); }
};

}  // namespace

const std::string& real_model_path() {
  static const std::string path = std::string(WT_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  return path;
}

const RealModel& real_model() {
  static Loaded m;
  return m;
}

bool have_real_model() {
  if (real_model().ok()) return true;
  MESSAGE("SKIPPED: " << real_model_path() << " not present (scripts/fetch-model.sh fetches it)");
  return false;
}

}  // namespace wt::test
