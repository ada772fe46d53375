// SentencePiece tokenizer tests (tokenizer.ggml.model "llama"): exact ids against Google's
// sentencepiece on two vocabularies it trained (tests/reference/make_spm_fixture.py: with
// and without the dummy prefix), round trips, and the rules sentencepiece's fixture cannot
// reach: unused pieces split back, no byte tokens, ill-formed UTF-8, the space prefix
// around special tokens. (create's errors: test_tokenizer.cpp.)
#include <doctest/doctest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "runtime/model/tokenizer.h"
#include "support/spm_vocab.h"
#include "support/tokenizer_fixture.h"

namespace {

using wt::Tokenizer;
using wt::TokenType;
using wt::Vocab;
using wt::test::detokenize;
using wt::test::encode;
using wt::test::make_tokenizer;

Vocab fixture_vocab(const std::string& name) {
  Vocab v;
  std::string error;
  REQUIRE_MESSAGE(wt::test::read_spm_vocab(std::string(WT_TEST_DATA_DIR) + "/tokenizer/" + name + ".vocab", &v, &error),
                  error);
  REQUIRE(v.n_vocab() > 1000);
  return v;
}

void check_fixture(const std::string& name) {
  const Vocab v = fixture_vocab(name);
  const auto tok = make_tokenizer(v);
  const auto cases = wt::test::read_tokenizer_cases(name);
  REQUIRE(cases.size() >= 400);
  size_t round_trips = 0;
  for (const auto& c : cases) {
    const std::vector<int32_t> ids = encode(*tok, c.text, false, c.parse_special);
    if (ids != c.ids) {
      FAIL("first mismatch (" << name << ", parse_special " << c.parse_special << ")\n  text: \""
                              << wt::test::escaped(c.text) << "\"\n  want: " << wt::test::ids_string(c.ids)
                              << "\n  got:  " << wt::test::ids_string(ids));
    }
    // Text without special tokens comes back whole, behind the prefix's space.
    if (c.text.find('<') == std::string::npos && !c.text.empty()) {
      CHECK_MESSAGE(detokenize(*tok, ids) == (v.add_space_prefix ? " " : "") + c.text, wt::test::escaped(c.text));
      ++round_trips;
    }
  }
  std::vector<int32_t> ids = encode(*tok, "Hello", /*add_special=*/true);
  CHECK(ids.front() == 1);  // BOS added
  MESSAGE(cases.size() << " cases match sentencepiece for " << name << ", " << round_trips << " round trips");
}

// A vocabulary of its own: <unk>, <s>, </s>, then pieces with scores.
Vocab small_vocab(bool byte_tokens) {
  Vocab v;
  v.model = "llama";
  v.tokens = {"<unk>", "<s>", "</s>"};
  v.token_types = {TokenType::unknown, TokenType::control, TokenType::control};
  v.scores = {0, 0, 0};
  v.unk = 0, v.bos = 1, v.eos = 2;
  if (byte_tokens) {
    for (int b = 0; b < 256; ++b) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "<0x%02X>", b);
      v.tokens.push_back(hex);
      v.token_types.push_back(TokenType::byte);
      v.scores.push_back(0);
    }
  }
  return v;
}

int32_t add_piece(Vocab* v, const std::string& piece, float score, TokenType type = TokenType::normal) {
  v->tokens.push_back(piece);
  v->token_types.push_back(type);
  v->scores.push_back(score);
  return v->n_vocab() - 1;
}

}  // namespace

TEST_CASE("tokenizer: sentencepiece fixture llama (dummy prefix)") { check_fixture("spm-llama"); }
TEST_CASE("tokenizer: sentencepiece fixture gemma (no dummy prefix)") { check_fixture("spm-gemma"); }

TEST_CASE("tokenizer: sentencepiece merges by score, leftmost on ties") {
  Vocab v = small_vocab(true);
  const int32_t a = add_piece(&v, "a", -10), b = add_piece(&v, "b", -11), c = add_piece(&v, "c", -12);
  const int32_t ab = add_piece(&v, "ab", -3), bc = add_piece(&v, "bc", -2), aa = add_piece(&v, "aa", -5);
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "abc") == std::vector<int32_t>{a, bc});  // bc scores higher than ab
  CHECK(encode(*t, "ab") == std::vector<int32_t>{ab});
  CHECK(encode(*t, "aaa") == std::vector<int32_t>{aa, a});  // equal pairs: leftmost first
  CHECK(encode(*t, "cb") == std::vector<int32_t>{c, b});
  // A space is a "▁", which is no piece here: its three bytes' tokens.
  CHECK(encode(*t, "a b") == std::vector<int32_t>{a, 3 + 0xE2, 3 + 0x96, 3 + 0x81, b});
}

TEST_CASE("tokenizer: sentencepiece splits an unused piece back into its parts") {
  Vocab v = small_vocab(true);
  const int32_t a = add_piece(&v, "a", -10), b = add_piece(&v, "b", -11);
  const int32_t ab = add_piece(&v, "ab", -1, TokenType::unused);
  const int32_t abb = add_piece(&v, "abb", -2);
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "ab") == std::vector<int32_t>{a, b});
  CHECK(encode(*t, "abb") == std::vector<int32_t>{abb});  // merged through the unused piece
  CHECK(t->token_bytes(ab) == "ab");
}

TEST_CASE("tokenizer: sentencepiece without byte tokens, and ill-formed UTF-8") {
  Vocab v = small_vocab(false);
  const int32_t a = add_piece(&v, "a", -1);
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "a\xC3\xA9" "a") == std::vector<int32_t>{a, 0, a});  // one <unk> for the character
  CHECK(encode(*t, "a\xC3\xA9\xC3\xA9\xE2\x82\xAC" "a") == std::vector<int32_t>{a, 0, a});  // and one for a run
  CHECK(encode(*t, "\xC3\xA9" "a\xC3\xA9") == std::vector<int32_t>{0, a, 0});
  const auto with_bytes = make_tokenizer(small_vocab(true));
  // An ill-formed byte is a character of its own: its byte token, so the bytes round-trip.
  const std::string bad = "x\xFF\xC3(";
  const std::vector<int32_t> ids = encode(*with_bytes, bad);
  CHECK(ids == std::vector<int32_t>{3 + 'x', 3 + 0xFF, 3 + 0xC3, 3 + '('});
  CHECK(detokenize(*with_bytes, ids) == bad);
}

TEST_CASE("tokenizer: sentencepiece byte tokens are <0x> and two hex digits, nothing else") {
  Vocab v = small_vocab(false);
  // A sign inside sscanf's width, a non-hex digit, a wrong tail: not byte tokens (the first
  // once indexed a 256-entry table at 0xFFFFFFF1).
  for (const char* odd : {"<0x-F>", "<0x-1>", "<0xG1>", "<0x1>>", "<0x1 >", "<0X41>"}) add_piece(&v, odd, 0, TokenType::byte);
  const int32_t lower = add_piece(&v, "<0x0a>", 0, TokenType::byte);
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "\n") == std::vector<int32_t>{lower});
  CHECK(encode(*t, "-") == std::vector<int32_t>{0});  // no byte token for '-': unknown
}

TEST_CASE("tokenizer: sentencepiece space prefix around special tokens") {
  Vocab v = small_vocab(true);
  const int32_t sp = add_piece(&v, "\xE2\x96\x81", -5), hi = add_piece(&v, "\xE2\x96\x81hi", -1);
  add_piece(&v, "h", -6), add_piece(&v, "i", -7), add_piece(&v, "\xE2\x96\x81h", -2);
  const int32_t user = add_piece(&v, "<br>", 0, TokenType::user_defined);
  v.add_space_prefix = true;
  v.add_bos = true;
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "hi") == std::vector<int32_t>{hi});
  CHECK(encode(*t, "hi", true) == std::vector<int32_t>{1, hi});
  CHECK(encode(*t, "") == std::vector<int32_t>{});
  CHECK(encode(*t, "", true) == std::vector<int32_t>{1});
  // Each stretch after a special token gets its own prefix, as in llama.cpp.
  CHECK(encode(*t, "hi</s>hi") == std::vector<int32_t>{hi, 2, hi});
  CHECK(encode(*t, "hi<br>hi", false, false) == std::vector<int32_t>{hi, user, hi});
  CHECK(encode(*t, "</s></s>hi") == std::vector<int32_t>{2, 2, hi});
  CHECK(encode(*t, " hi") == std::vector<int32_t>{sp, hi});
  CHECK(t->token_bytes(hi) == " hi");
  CHECK(t->token_bytes(3 + 0x0A) == "\n");
  CHECK(t->token_bytes(user) == "<br>");
}
