// Prints the token ids Whittle's tokenizer gives a text file, space-separated on one line
// (C API only). tests/reference/make_qwen2_fixtures.py runs it to tokenize the prompts and
// the perplexity text of tests/data/reference_qwen2/ (the NumPy side has no tokenizer of
// its own); tests/unit/test_qwen2_reference.cpp checks that the ids still match.
//   tokenize_text MODEL.gguf TEXT_FILE [--parse-special]
// BOS/EOS are added as the model's flags ask (wt_tokenize_params::add_special);
// --parse-special turns "<|im_start|>"-style text into its special token.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "whittle.h"

int main(int argc, char** argv) {
  const bool special = argc == 4 && std::strcmp(argv[3], "--parse-special") == 0;
  if (argc != 3 && !special) {
    std::fprintf(stderr, "usage: tokenize_text MODEL.gguf TEXT_FILE [--parse-special]\n");
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", argv[2]);
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  wt_model* model = nullptr;
  if (wt_model_load(argv[1], nullptr, &model) != WT_OK) {
    std::fprintf(stderr, "load: %s\n", wt_last_error());
    return 1;
  }
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.add_special = true;
  tp.parse_special = special;
  std::vector<wt_token> ids(text.size() + 16);
  size_t n = 0;
  if (wt_tokenize(model, text.data(), text.size(), &tp, ids.data(), ids.size(), &n) != WT_OK) {
    std::fprintf(stderr, "tokenize: %s\n", wt_last_error());
    wt_model_free(model);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) std::printf("%s%d", i ? " " : "", ids[i]);
  std::printf("\n");
  wt_model_free(model);
  return 0;
}
