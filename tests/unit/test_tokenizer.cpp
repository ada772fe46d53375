// Tokenizer tests: exact ids against HF tokenizers (fixtures from
// tests/reference/make_tokenizer_fixture.py), round trips, the streaming detokenizer, the
// pre-tokenizer scanners, and create's errors. Tests that need the default model skip
// with a message when it is absent; the rest use a small vocabulary built here.
#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/model/model.h"
#include "runtime/model/pretokenizer.h"
#include "runtime/model/tokenizer.h"
#include "runtime/model/utf8_stream.h"
#include "support/tokenizer_fixture.h"

namespace {

using wt::Tokenizer;
using wt::Vocab;
using wt::test::detokenize;
using wt::test::encode;
using wt::test::make_tokenizer;

const char* const k_model_path = WT_MODELS_DIR "/SmolLM2-135M-Instruct.Q4_1.gguf";

// The default model's vocabulary, loaded once; nullptr (after a visible message) when the
// model file is not there.
const Vocab* smollm_vocab() {
  static std::unique_ptr<Vocab> vocab;
  static bool tried = false;
  if (!tried) {
    tried = true;
    if (std::FILE* f = std::fopen(k_model_path, "rb")) {
      std::fclose(f);
      std::unique_ptr<wt::Model> model;
      const wt::Status st = wt::load_model(k_model_path, {}, &model);
      REQUIRE_MESSAGE(st.is_ok(), st.message());
      vocab = std::make_unique<Vocab>(model->vocab);
    }
  }
  if (!vocab) {
    MESSAGE("SKIPPED: model " << std::string(k_model_path)
                              << " not present (scripts/fetch-model.sh fetches it)");
  }
  return vocab.get();
}

void check_fixture(const std::string& pre) {
  const Vocab* base = smollm_vocab();
  if (!base) return;
  Vocab vocab = *base;
  vocab.pre = pre;  // same vocabulary, another family's pre-tokenizer (see the script)
  const auto tok = make_tokenizer(vocab);
  const std::vector<wt::test::TokenizerCase> cases = wt::test::read_tokenizer_cases(pre);
  REQUIRE(cases.size() >= 250);
  std::vector<int32_t> ids;
  for (const wt::test::TokenizerCase& c : cases) {
    REQUIRE(tok->encode(c.text, /*add_special=*/false, c.parse_special, &ids).is_ok());
    if (ids != c.ids) {
      FAIL("first mismatch (pre " << pre << ", parse_special " << c.parse_special << ")\n  text: \""
                                  << wt::test::escaped(c.text) << "\"\n  want: " << wt::test::ids_string(c.ids)
                                  << "\n  got:  " << wt::test::ids_string(ids));
    }
  }
  MESSAGE(cases.size() << " cases match HF tokenizers for pre-tokenizer " << pre);
}

// A vocabulary of the 256 byte-level characters plus what a test adds: enough to check
// merges, special tokens and errors without a model file.
Vocab byte_vocab() {
  Vocab v;
  v.model = "gpt2";
  v.pre = "gpt2";
  int32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    std::string ch;
    wt::utf8_append(printable ? b : next++, &ch);
    v.tokens.push_back(ch);
  }
  v.token_types.assign(v.tokens.size(), wt::TokenType::normal);
  return v;
}

int32_t add_token(Vocab* v, const std::string& text, wt::TokenType type = wt::TokenType::normal) {
  v->tokens.push_back(text);
  v->token_types.push_back(type);
  return v->n_vocab() - 1;
}

std::vector<std::string> split(wt::PretokenizerKind kind, const std::string& text) {
  std::vector<std::string_view> words;
  wt::pretokenize(kind, text, &words);
  return std::vector<std::string>(words.begin(), words.end());
}

std::string stream_all(const std::vector<std::string>& pieces, bool flush) {
  wt::Utf8Stream s;
  std::string out;
  for (const std::string& p : pieces) s.push(p, &out);
  if (flush) s.flush(&out);
  return out;
}

}  // namespace

TEST_CASE("tokenizer: HF fixture smollm") { check_fixture("smollm"); }
TEST_CASE("tokenizer: HF fixture gpt2") { check_fixture("gpt2"); }
TEST_CASE("tokenizer: HF fixture llama-bpe") { check_fixture("llama-bpe"); }
TEST_CASE("tokenizer: HF fixture qwen2") { check_fixture("qwen2"); }
TEST_CASE("tokenizer: HF fixture gpt-4o") { check_fixture("gpt-4o"); }

TEST_CASE("tokenizer: the regex pre-tokenizers split every fixture text as Oniguruma does") {
  for (const std::string pre : {"llama-bpe", "qwen2", "gpt-4o"}) {
    CAPTURE(pre);
    wt::PretokenizerKind kind;
    REQUIRE(wt::pretokenizer_from_name(pre, &kind).is_ok());
    std::ifstream f(std::string(WT_TEST_DATA_DIR) + "/tokenizer/" + pre + ".splits");
    REQUIRE(f.good());
    int n = 0;
    for (std::string line; std::getline(f, line);) {
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.find('\t');
      REQUIRE(tab != std::string::npos);
      const std::string text = wt::test::from_hex(line.substr(0, tab));
      std::vector<std::string> want;
      std::istringstream words(line.substr(tab + 1));
      for (std::string w; words >> w;) want.push_back(wt::test::from_hex(w));
      const std::vector<std::string> got = split(kind, text);
      if (got != want) FAIL("split differs for \"" << wt::test::escaped(text) << "\"");
      ++n;
    }
    CHECK(n >= 380);  // the fixture's distinct texts
  }
}

TEST_CASE("tokenizer: round trip on the model") {
  const Vocab* vocab = smollm_vocab();
  if (!vocab) return;
  const auto tok = make_tokenizer(*vocab);
  // Every fixture text with valid UTF-8, less those with bytes SmolLM2 has no token for
  // (04 06 13 14 16 1d and lead bytes f1 f2, which encode drops).
  int n = 0;
  for (const wt::test::TokenizerCase& c : wt::test::read_tokenizer_cases("smollm")) {
    const std::string lacking("\x04\x06\x13\x14\x16\x1d\xf1\xf2", 8);
    if (c.text.find_first_of(lacking) != std::string::npos) continue;
    CHECK_MESSAGE(detokenize(*tok, encode(*tok, c.text, false, c.parse_special)) == c.text, wt::test::escaped(c.text));
    ++n;
  }
  CHECK(n > 300);
  // Ill-formed UTF-8 is encoded byte by byte and comes back unchanged.
  const char bad_bytes[] = "caf\xc3 \x80\x80x \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98 end\xe2";
  const std::string bad(bad_bytes, sizeof(bad_bytes) - 1);
  CHECK(detokenize(*tok, encode(*tok, bad)) == bad);
  // Special tokens decode to their text.
  CHECK(detokenize(*tok, encode(*tok, "<|im_start|>user\nhi<|im_end|>")) == "<|im_start|>user\nhi<|im_end|>");
  CHECK(tok->token_bytes(-1).empty());
  CHECK(tok->token_bytes(tok->n_vocab()).empty());
}

TEST_CASE("tokenizer: specials and add_special on the model") {
  const Vocab* vocab = smollm_vocab();
  if (!vocab) return;
  Vocab v = *vocab;
  const auto tok = make_tokenizer(v);
  CHECK(encode(*tok, "<|im_start|>") == std::vector<int32_t>{1});
  CHECK(encode(*tok, "<|im_start|>", false, /*parse_special=*/false).size() > 1);
  CHECK(encode(*tok, "hi", /*add_special=*/true) == encode(*tok, "hi"));  // add_bos is off
  v.add_bos = v.add_eos = true;
  const auto with = make_tokenizer(v);
  const std::vector<int32_t> ids = encode(*with, "hi", /*add_special=*/true);
  REQUIRE(ids.size() >= 3);
  CHECK(ids.front() == v.bos);
  CHECK(ids.back() == v.eos);
}

TEST_CASE("tokenizer: 40KB text") {
  const Vocab* vocab = smollm_vocab();
  if (!vocab) return;
  const auto tok = make_tokenizer(*vocab);
  const std::vector<wt::test::TokenizerCase> cases = wt::test::read_tokenizer_cases("smollm");
  std::string text;
  for (size_t i = 0; text.size() < 40000; ++i) {
    text += cases[i % cases.size()].text;
    text += ' ';
  }
  std::string word(40000, 'a');  // one 40KB word: the merge loop must not be quadratic
  for (const std::string& t : {text, word}) {
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = encode(*tok, t);
    const auto elapsed = std::chrono::steady_clock::now() - start;
    const double ms = std::chrono::duration<double, std::milli>(elapsed).count();
    MESSAGE(t.size() << " bytes -> " << ids.size() << " tokens in " << ms << " ms");
    CHECK(!ids.empty());
  }
}

TEST_CASE("tokenizer: merges on a small vocabulary") {
  Vocab v = byte_vocab();
  const int32_t ab = add_token(&v, "ab"), bc = add_token(&v, "bc"), abc = add_token(&v, "abc");
  const int32_t aa = add_token(&v, "aa");
  v.merges = {"a b", "b c", "ab c", "a a"};
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "abc") == std::vector<int32_t>{abc});  // a b (rank 0), then ab c
  CHECK(encode(*t, "bc") == std::vector<int32_t>{bc});
  CHECK(encode(*t, "abab") == std::vector<int32_t>{ab, ab});
  // Equal ranks merge leftmost first.
  CHECK(encode(*t, "aaa") == std::vector<int32_t>{aa, 'a'});
  CHECK(encode(*t, "aaaa") == std::vector<int32_t>{aa, aa});
  CHECK(detokenize(*t, encode(*t, "x abc\n")) == "x abc\n");
}

TEST_CASE("tokenizer: special token matching") {
  Vocab v = byte_vocab();
  const int32_t s1 = add_token(&v, "<|a|>", wt::TokenType::control);
  const int32_t s2 = add_token(&v, "<|a|>x", wt::TokenType::control);
  const int32_t user = add_token(&v, "[USER]", wt::TokenType::user_defined);
  v.bos = s1;
  v.eos = s2;
  const auto t = make_tokenizer(v);
  CHECK(encode(*t, "<|a|>") == std::vector<int32_t>{s1});
  CHECK(encode(*t, "<|a|>x") == std::vector<int32_t>{s2});  // longest match
  CHECK(encode(*t, "q<|a|>y") == std::vector<int32_t>{'q', s1, 'y'});
  CHECK(encode(*t, "<|a|", false, true) == std::vector<int32_t>{'<', '|', 'a', '|'});
  CHECK(encode(*t, "<|a|>", false, /*parse_special=*/false).size() == 5);
  // User-defined tokens are matched either way (HF and llama.cpp agree on this).
  CHECK(encode(*t, "[USER]", false, false) == std::vector<int32_t>{user});
  CHECK(t->token_bytes(s2) == "<|a|>x");
  CHECK(encode(*t, "", true) == std::vector<int32_t>{});  // add_bos/add_eos are off
  v.add_bos = true;
  v.add_eos = true;
  const auto t2 = make_tokenizer(v);
  CHECK(encode(*t2, "", true) == std::vector<int32_t>{s1, s2});
  CHECK(encode(*t2, "q", true) == std::vector<int32_t>{s1, 'q', s2});
  // A text that starts with BOS (a chat template that writes it, as Llama 3's does) keeps
  // that one: the model gets one BOS, not "0 0". Parsed as text, the added one stays.
  CHECK(encode(*t2, "<|a|>q", true) == std::vector<int32_t>{s1, 'q', s2});
  CHECK(encode(*t2, "<|a|>", true) == std::vector<int32_t>{s1, s2});
  CHECK(encode(*t2, "<|a|>q", true, /*parse_special=*/false).front() == s1);
  CHECK(encode(*t2, "<|a|>q", true, false).size() == 8);  // BOS, 6 bytes, EOS
  // A BOS written later, or twice by the caller, is the caller's text and stays.
  CHECK(encode(*t2, "q<|a|>", true) == std::vector<int32_t>{s1, 'q', s1, s2});
  CHECK(encode(*t2, "<|a|><|a|>", true) == std::vector<int32_t>{s1, s1, s2});
}

TEST_CASE("tokenizer: create rejects what it cannot run") {
  Vocab v = byte_vocab();
  add_token(&v, "ab");
  v.merges = {"a b"};
  std::unique_ptr<Tokenizer> t;

  Vocab bad = v;
  bad.pre = "no-such-pre";
  wt::Status st = Tokenizer::create(bad, &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("no-such-pre") != std::string::npos);

  bad = v;
  bad.model = "t5";
  st = Tokenizer::create(bad, &t);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("'t5'") != std::string::npos);
  bad.model = "llama";  // SentencePiece merges by score: none here
  st = Tokenizer::create(bad, &t);
  CHECK(st.code() == WT_ERR_FORMAT);
  CHECK(st.message().find("tokenizer.ggml.scores") != std::string::npos);

  for (const char* merge : {"ab", "a  b", " a", "a b c", "a zz", "b a"}) {
    bad = v;
    bad.merges.push_back(merge);
    st = Tokenizer::create(bad, &t);
    CHECK_MESSAGE(st.code() == WT_ERR_FORMAT, merge);
    CHECK(st.message().find("tokenizer.ggml.merges[1]") != std::string::npos);
  }

  bad = v;
  bad.add_bos = true;  // bos is -1
  CHECK(Tokenizer::create(bad, &t).code() == WT_ERR_FORMAT);

  bad = v;
  bad.token_types.pop_back();
  CHECK(Tokenizer::create(bad, &t).code() == WT_ERR_FORMAT);

  for (const char* pre : {"", "default", "gpt2", "smollm", "llama-bpe", "qwen2", "gpt-4o"}) {
    bad = v;
    bad.pre = pre;
    CHECK_MESSAGE(Tokenizer::create(bad, &t).is_ok(), pre);
  }
}

TEST_CASE("tokenizer: pre-tokenizer scanners") {
  using K = wt::PretokenizerKind;
  using W = std::vector<std::string>;
  // GPT-2: a whitespace run gives its last space to the next word.
  CHECK(split(K::gpt2, "a  1") == W{"a", " ", " 1"});
  CHECK(split(K::gpt2, "Hello  world  ") == W{"Hello", " ", " world", "  "});
  CHECK(split(K::gpt2, "it's 'S") == W{"it", "'s", " '", "S"});
  CHECK(split(K::gpt2, "a\n\nb") == W{"a", "\n", "\n", "b"});
  // SmolLM2: digits are words of their own, and each run between them is its own text.
  CHECK(split(K::smollm, "a  1") == W{"a", "  ", "1"});
  CHECK(split(K::smollm, "x12 y") == W{"x", "1", "2", " y"});
  // Llama 3: up to three digits, case-insensitive contractions, a newline run at the end.
  CHECK(split(K::llama3, "12345") == W{"123", "45"});
  CHECK(split(K::llama3, "IT'S") == W{"IT", "'S"});
  CHECK(split(K::llama3, "(abc") == W{"(abc"});
  CHECK(split(K::llama3, "a \n\n b") == W{"a", " \n\n", " b"});
  CHECK(split(K::llama3, "x;\n\ny") == W{"x", ";\n\n", "y"});
  CHECK(split(K::qwen2, "12345") == W{"1", "2", "3", "4", "5"});
  // GPT-4o: words split where the case goes back up, a contraction kept with its word, marks
  // inside words, and a slash run taking the line breaks after it.
  CHECK(split(K::gpt4o, "getHTTPResponse") == W{"get", "HTTPResponse"});
  CHECK(split(K::gpt4o, "HELLOworld ABC") == W{"HELLOworld", " ABC"});
  CHECK(split(K::gpt4o, "DON'T you'RE") == W{"DON'T", " you'RE"});
  CHECK(split(K::gpt4o, "e\xCC\x81" "E\xCC\x81") == W{"e\xCC\x81", "E\xCC\x81"});  // U+0301: upper and lower
  CHECK(split(K::gpt4o, "a/\n/b") == W{"a", "/\n/", "b"});
  CHECK(split(K::gpt4o, "12345") == W{"123", "45"});
  // An invalid byte is a unit of its own, classed like punctuation.
  CHECK(split(K::gpt2, std::string("a\xff!\xfe b")) == W{"a", "\xff!\xfe", " b"});
  CHECK(split(K::llama3, std::string("\xe2\x82x")) == W{"\xe2\x82", "x"});
  CHECK(split(K::llama3, std::string("\xffx \xff")) == W{"\xffx", " \xff"});
  CHECK(split(K::gpt2, "").empty());
}

TEST_CASE("tokenizer: streaming UTF-8 detokenizer") {
  const std::string grin = "\xF0\x9F\x98\x80";  // U+1F600
  const std::string fffd = "\xEF\xBF\xBD";
  // A character split across tokens comes out once it is complete.
  wt::Utf8Stream s;
  std::string out;
  s.push("a\xF0\x9F", &out);
  CHECK(out == "a");
  CHECK(s.n_pending_bytes() == 2);
  s.push("\x98", &out);
  CHECK(out == "a");
  s.push("\x80!", &out);
  CHECK(out == "a" + grin + "!");
  CHECK(s.n_pending_bytes() == 0);
  // Emoji ZWJ sequence split byte by byte.
  const std::string family = "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9";
  std::vector<std::string> bytes;
  for (const char c : family) bytes.emplace_back(1, c);
  CHECK(stream_all(bytes, false) == family);
  // Ill-formed input: one U+FFFD per maximal subpart, as Python's errors="replace".
  CHECK(stream_all({"\xFF"}, false) == fffd);
  CHECK(stream_all({"a\xE2\x82", "b"}, false) == "a" + fffd + "b");
  CHECK(stream_all({"\xC0\xAF"}, false) == fffd + fffd);               // overlong
  CHECK(stream_all({"\xED\xA0\x80"}, false) == fffd + fffd + fffd);    // surrogate
  CHECK(stream_all({"\xF4\x90\x80\x80"}, false) == fffd + fffd + fffd + fffd);  // > U+10FFFF
  CHECK(stream_all({"\xE2", "\x82", "\xF0\x9F\x98\x80"}, false) == fffd + grin);
  CHECK(stream_all({"\x80", "\xE2\x82\xAC"}, false) == fffd + "\xE2\x82\xAC");
  // Flush turns a held-back incomplete character into U+FFFD, then starts afresh.
  CHECK(stream_all({"ok\xF0\x9F\x98"}, true) == "ok" + fffd);
  CHECK(stream_all({"ok"}, true) == "ok");
  wt::Utf8Stream f;
  out.clear();
  f.push("\xE2\x82", &out);
  f.flush(&out);
  f.push("\xAC", &out);
  CHECK(out == fffd + fffd);
}

TEST_CASE("tokenizer: streaming detokenizer on model tokens") {
  const Vocab* vocab = smollm_vocab();
  if (!vocab) return;
  const auto tok = make_tokenizer(*vocab);
  const std::string text = "Emoji 👨\u200d👩\u200d👧 and 👍🏽, CJK 你好世界, accents é\u0301.";
  const std::vector<int32_t> ids = encode(*tok, text);
  wt::Utf8Stream s;
  std::string all;
  int held = 0;
  for (const int32_t id : ids) {
    std::string piece;
    s.push(tok->token_bytes(id), &piece);
    if (s.n_pending_bytes() > 0) ++held;
    // Each piece is complete UTF-8 on its own.
    wt::Utf8Stream check;
    std::string again;
    check.push(piece, &again);
    CHECK(check.n_pending_bytes() == 0);
    CHECK(again == piece);
    all += piece;
  }
  s.flush(&all);
  CHECK(all == text);
  CHECK(held > 0);  // some token did end mid-character
}
