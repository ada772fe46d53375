// Refactors must not change a bit of what the model computes: the default model's logits,
// for full KV, every pruning method at keep 0.2 and the pager, against fingerprints written
// by the code before the refactor (tests/data/logits/, made by tests/tools/
// make_logits_fixture.cpp; tests/README.md says from which commit). Bit identity holds only
// where the same SIMD kernels run, so a machine with other CPU features skips visibly.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/logits_fixture.h"
#include "support/real_model.h"

// Label long (not model): three minutes under ASan, so the ASan stage leaves it to the
// Release stage (bit identity is a property of the optimized build; it held under ASan's
// RelWithDebInfo too when checked by hand); like every long test it is not run under qemu.
TEST_CASE("logits: bit-identical to the fixture of the code before the refactor for every method at keep 0.2" *
          doctest::test_suite("long")) {
  if (!wt::test::have_real_model()) return;
  const std::string path = std::string(WT_TEST_DATA_DIR) + "/logits/smollm2_keep02.txt";
  std::string isa, err;
  std::vector<wt::test::LogitsPrint> want;
  REQUIRE_MESSAGE(wt::test::read_logits_fixture(path, &isa, &want, &err), err);
  if (isa != wt::test::logits_isa()) {
    MESSAGE("SKIPPED: the fixture was made on " << isa << ", this CPU is " << wt::test::logits_isa()
                                                << ": other SIMD kernels, bit identity is not defined");
    return;
  }
  const wt_model* model = wt::test::real_model().model;
  const std::string text = wt::test::logits_prompt_text();
  std::vector<wt_token> tokens(text.size() + 16);
  size_t n = 0;
  wt_tokenize_params tp = wt_tokenize_default_params();
  REQUIRE(wt_tokenize(model, text.data(), text.size(), &tp, tokens.data(), tokens.size(), &n) == WT_OK);
  REQUIRE(n >= static_cast<size_t>(wt::test::kLogitsPromptTokens));
  tokens.resize(wt::test::kLogitsPromptTokens);

  const std::vector<wt::test::LogitsCase> cases = wt::test::logits_cases();
  REQUIRE(cases.size() == want.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    CAPTURE(cases[i].name);
    REQUIRE(want[i].name == cases[i].name);
    wt::test::LogitsPrint got;
    REQUIRE_MESSAGE(wt::test::run_logits_case(model, tokens, cases[i], &got, &err), err);
    CHECK(got.tokens == want[i].tokens);
    REQUIRE(got.hashes.size() == want[i].hashes.size());
    for (size_t s = 0; s < got.hashes.size(); ++s) {
      CAPTURE(s);  // 0: the prefill's last row, then each decode step
      CHECK(got.hashes[s] == want[i].hashes[s]);
    }
  }
}
