// Writes tests/data/logits/smollm2_keep02.txt: the logits fingerprints of
// tests/support/logits_fixture.h, from whatever library it is linked with. Made from the
// code before a refactor, the fixture lets test_logits_fixture.cpp prove that the
// refactored code computes bit-identical logits (tests/README.md says how it was made).
//   make_logits_fixture MODEL.gguf OUT.txt
#include <cstdio>
#include <string>
#include <vector>

#include "support/logits_fixture.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_logits_fixture MODEL.gguf OUT.txt\n");
    return 2;
  }
  wt_model* model = nullptr;
  if (wt_model_load(argv[1], nullptr, &model) != WT_OK) {
    std::fprintf(stderr, "load: %s\n", wt_last_error());
    return 1;
  }
  const std::string text = wt::test::logits_prompt_text();
  std::vector<wt_token> tokens(text.size() + 16);
  size_t n = 0;
  wt_tokenize_params tp = wt_tokenize_default_params();
  if (wt_tokenize(model, text.data(), text.size(), &tp, tokens.data(), tokens.size(), &n) != WT_OK ||
      n < static_cast<size_t>(wt::test::kLogitsPromptTokens)) {
    std::fprintf(stderr, "tokenize: %s (%zu tokens)\n", wt_last_error(), n);
    return 1;
  }
  tokens.resize(wt::test::kLogitsPromptTokens);
  std::vector<wt::test::LogitsPrint> prints;
  for (const wt::test::LogitsCase& c : wt::test::logits_cases()) {
    wt::test::LogitsPrint p;
    std::string err;
    if (!wt::test::run_logits_case(model, tokens, c, &p, &err)) {
      std::fprintf(stderr, "%s\n", err.c_str());
      return 1;
    }
    std::fprintf(stderr, "%s: %zu hashes\n", c.name.c_str(), p.hashes.size());
    prints.push_back(p);
  }
  std::string err;
  if (!wt::test::write_logits_fixture(argv[2], wt::test::logits_isa(), prints, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  wt_model_free(model);
  return 0;
}
