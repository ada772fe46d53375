// The default model's tokenizer on arbitrary bytes, through the C API: wt_tokenize (with and
// without special-token parsing, with and without BOS/EOS, buffers too small and exact),
// wt_token_to_bytes and the streaming detokenizer, plus arbitrary token ids, in range or not.
//
// Invariants asserted (runtime/model/tokenizer.h documents them):
// - Round trip: the bytes of tokenize(x) are x less the bytes the vocabulary has no token for
//   (encode drops those: SmolLM2 lacks 21 of the 256). This holds for any bytes, well-formed
//   UTF-8 or not (an ill-formed byte is encoded as itself), and with special-token parsing
//   too, because a special token's bytes are its text. The byte-level BPE does no
//   normalisation, so nothing else may change.
// - add_special only wraps the tokens: tokenize(x, add_special) is the BOS/EOS prefix and
//   suffix (as tokenize("", add_special) shows them) around tokenize(x).
// - The streaming detokenizer emits well-formed UTF-8 only; for well-formed input text it
//   gives the text back (less the dropped bytes); fed token by token it gives what one push
//   of all the bytes gives (a character split across tokens waits for its end), and a push
//   refused for a small buffer consumes nothing.
// - Every token id out of [0, n_vocab) is WT_ERR_INVALID_ARGUMENT, never a crash.
// Mode bit 6 runs the text through the SentencePiece tokenizer of the spm-llama test
// vocabulary instead (wt::Tokenizer directly: no real SentencePiece model is fetchable):
// - ids in range; the text comes back from the tokens as the special tokens' texts and,
//   between them, each stretch behind the one space its "▁" prefix adds;
// - add_special puts BOS in front (or keeps the text's own leading BOS).
//
// The model: $WHITTLE_FUZZ_MODEL, else WT_FUZZ_DEFAULT_MODEL (the build's models/ path).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"
#include "runtime/model/tokenizer.h"
#include "runtime/model/utf8_stream.h"
#include "support/spm_vocab.h"

using wt::fuzz::expect_status;
using wt::fuzz::fail;

namespace {

wt_model* g_model = nullptr;
int32_t g_n_vocab = 0;
bool g_lacking[256] = {};  // bytes with no token: encode drops them
std::vector<wt_token> g_prefix, g_suffix;
wt::Vocab g_spm_vocab;
std::unique_ptr<wt::Tokenizer> g_spm;

// An exact-size heap block (at least one byte, so data() is never NULL), so ASan sees a
// write one element past what the call was told it may write.
template <typename T>
std::unique_ptr<T[]> exact(size_t n) {
  return std::unique_ptr<T[]>(new T[n == 0 ? 1 : n]);
}

std::vector<wt_token> tokenize(std::string_view text, bool add_special, bool parse_special, size_t short_capacity) {
  wt_tokenize_params p = wt_tokenize_default_params();
  p.add_special = add_special;
  p.parse_special = parse_special;
  size_t n = SIZE_MAX;
  wt_status st = wt_tokenize(g_model, text.data(), text.size(), &p, nullptr, 0, &n);
  // No buffer is too small unless there are no tokens at all.
  expect_status(st, {WT_ERR_BUFFER_TOO_SMALL, n == 0 ? WT_OK : WT_ERR_BUFFER_TOO_SMALL}, "wt_tokenize without a buffer");
  if (n == SIZE_MAX || n > text.size() + 2) fail("wt_tokenize reported %zu tokens for %zu bytes", n, text.size());
  if (short_capacity < n) {
    auto small = exact<wt_token>(short_capacity);
    size_t again = 0;
    st = wt_tokenize(g_model, text.data(), text.size(), &p, small.get(), short_capacity, &again);
    expect_status(st, {WT_ERR_BUFFER_TOO_SMALL}, "wt_tokenize with a short buffer");
    if (again != n) fail("wt_tokenize: %zu tokens with a short buffer, %zu without one", again, n);
  }
  auto ids = exact<wt_token>(n);
  size_t got = 0;
  expect_status(wt_tokenize(g_model, text.data(), text.size(), &p, ids.get(), n, &got), {WT_OK},
                "wt_tokenize with the reported capacity");
  if (got != n) fail("wt_tokenize: %zu tokens, %zu reported before", got, n);
  for (size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= g_n_vocab) fail("wt_tokenize gave token %d outside [0, %d)", ids[i], g_n_vocab);
  return std::vector<wt_token>(ids.get(), ids.get() + n);
}

// The bytes of one token; "" and WT_ERR_INVALID_ARGUMENT-checked for ids out of range.
std::string token_bytes(wt_token id) {
  const bool in_range = id >= 0 && id < g_n_vocab;
  size_t len = SIZE_MAX;
  wt_status st = wt_token_to_bytes(g_model, id, nullptr, 0, &len);
  if (!in_range) {
    expect_status(st, {WT_ERR_INVALID_ARGUMENT}, "wt_token_to_bytes of an id out of range");
    char buf[8];
    expect_status(wt_token_to_bytes(g_model, id, buf, sizeof buf, &len), {WT_ERR_INVALID_ARGUMENT},
                  "wt_token_to_bytes of an id out of range");
    return "";
  }
  if (len == SIZE_MAX) fail("wt_token_to_bytes reported no length");
  // No buffer is too small unless the token has no bytes at all.
  expect_status(st, {WT_ERR_BUFFER_TOO_SMALL, len == 0 ? WT_OK : WT_ERR_BUFFER_TOO_SMALL},
                "wt_token_to_bytes without a buffer");
  auto buf = exact<char>(len);
  size_t got = 0;
  expect_status(wt_token_to_bytes(g_model, id, buf.get(), len, &got), {WT_OK}, "wt_token_to_bytes");
  if (got != len) fail("wt_token_to_bytes: %zu bytes, %zu reported before", got, len);
  return std::string(buf.get(), len);
}

// Text the detokenizer hands out for one push or flush, first into a buffer of `capacity`
// bytes (often too small), then into one of exactly the size it asked for.
template <typename Call>
std::string detok_out(Call call, size_t capacity, const char* what) {
  auto buf = exact<char>(capacity);
  size_t len = SIZE_MAX;
  wt_status st = call(buf.get(), capacity, &len);
  expect_status(st, {WT_OK, WT_ERR_BUFFER_TOO_SMALL}, what);
  if (len == SIZE_MAX) fail("%s reported no length", what);
  if (st == WT_ERR_BUFFER_TOO_SMALL) {
    if (capacity >= len + 1) fail("%s: too small a buffer of %zu bytes for %zu", what, capacity, len);
    capacity = len + 1;
    buf = exact<char>(capacity);
    size_t again = SIZE_MAX;
    expect_status(call(buf.get(), capacity, &again), {WT_OK}, what);
    if (again != len) fail("%s: %zu bytes after asking for %zu", what, again, len);
  }
  if (buf[len] != '\0' || std::strlen(buf.get()) > len) fail("%s: text of %zu bytes is not NUL-terminated there", what, len);
  return std::string(buf.get(), len);
}

// Streams ids through a detokenizer; checks what comes out and returns all of it. Each push
// first gets a buffer of 0-8 bytes (cap_seed varies which), often too small.
std::string detokenize_stream(const std::vector<wt_token>& ids, uint8_t cap_seed) {
  auto capacity = [cap_seed](size_t i) { return (cap_seed + 5 * i) % 9; };
  wt_detokenizer* d = nullptr;
  expect_status(wt_detokenizer_create(g_model, &d), {WT_OK}, "wt_detokenizer_create");
  std::string out, all_bytes;
  for (size_t i = 0; i < ids.size(); ++i) {
    const wt_token id = ids[i];
    if (id < 0 || id >= g_n_vocab) {
      size_t len = 0;
      auto buf = exact<char>(capacity(i));
      expect_status(wt_detokenizer_push(d, id, buf.get(), capacity(i), &len), {WT_ERR_INVALID_ARGUMENT},
                    "wt_detokenizer_push of an id out of range");
      continue;
    }
    all_bytes += token_bytes(id);
    out += detok_out([&](char* b, size_t c, size_t* l) { return wt_detokenizer_push(d, id, b, c, l); }, capacity(i),
                     "wt_detokenizer_push");
  }
  out += detok_out([&](char* b, size_t c, size_t* l) { return wt_detokenizer_flush(d, b, c, l); },
                   capacity(ids.size()), "wt_detokenizer_flush");
  wt_detokenizer_free(d);

  if (!wt::fuzz::is_valid_utf8(out)) fail("the detokenizer emitted ill-formed UTF-8");
  // Token by token (held-back partial characters) against all bytes in one push.
  wt::Utf8Stream one_shot;
  std::string whole;
  one_shot.push(all_bytes, &whole);
  one_shot.flush(&whole);
  if (out != whole) fail("streamed detokenization differs from one push of the same %zu bytes", all_bytes.size());
  return out;
}

void check_text(std::string_view text, bool parse_special, uint8_t cap_seed) {
  const size_t short_capacity = cap_seed % 64;
  const std::vector<wt_token> ids = tokenize(text, false, parse_special, short_capacity);
  std::string expected;
  for (const char ch : text)
    if (!g_lacking[static_cast<uint8_t>(ch)]) expected += ch;
  std::string decoded;
  for (const wt_token id : ids) decoded += token_bytes(id);
  if (decoded != expected)
    fail("round trip (parse_special %d): %zu bytes in, %zu expected back, %zu back", parse_special, text.size(),
         expected.size(), decoded.size());

  std::vector<wt_token> wrapped = g_prefix;
  wrapped.insert(wrapped.end(), ids.begin(), ids.end());
  wrapped.insert(wrapped.end(), g_suffix.begin(), g_suffix.end());
  if (tokenize(text, true, parse_special, short_capacity) != wrapped)
    fail("add_special changed more than the BOS/EOS around the tokens");

  const std::string streamed = detokenize_stream(ids, cap_seed);
  if (wt::fuzz::is_valid_utf8(expected) && streamed != expected)
    fail("well-formed text of %zu bytes did not stream back unchanged", expected.size());
}

void check_ids(FuzzedDataProvider& fdp, uint8_t cap_seed) {
  std::vector<wt_token> ids;
  while (fdp.remaining_bytes() > 0 && ids.size() < 256) {
    // Mostly ids from the vocabulary's range, sometimes any int32 (negative, huge).
    if (fdp.ConsumeIntegral<uint8_t>() < 224) {
      ids.push_back(fdp.ConsumeIntegral<uint16_t>());
    } else {
      ids.push_back(fdp.ConsumeIntegral<int32_t>());
    }
  }
  for (const wt_token id : ids) token_bytes(id);
  detokenize_stream(ids, cap_seed);
}

bool spm_special(int32_t id) {
  const wt::TokenType t = g_spm_vocab.token_types[id];
  return t == wt::TokenType::control || t == wt::TokenType::unknown || t == wt::TokenType::user_defined;
}

void check_spm_text(std::string_view input, bool parse_special) {
  std::vector<int32_t> ids;
  if (!g_spm->encode(input, false, parse_special, &ids).is_ok()) fail("SentencePiece encode refused %zu bytes", input.size());
  // A "▁" in the text is SentencePiece's space, which decodes as ' ' (as sentencepiece's
  // own decoding does): the tokens stand for the text with each "▁" a space. (No special
  // token's text holds one.)
  std::string text;
  for (size_t i = 0; i < input.size();) {
    if (input.compare(i, 3, "\xE2\x96\x81") == 0) {
      text.push_back(' ');
      i += 3;
    } else {
      text.push_back(input[i++]);
    }
  }
  const int32_t n_vocab = g_spm->n_vocab();
  size_t at = 0;  // how much of text the tokens so far stand for
  for (size_t i = 0; i < ids.size();) {
    if (ids[i] < 0 || ids[i] >= n_vocab) fail("SentencePiece gave token %d outside [0, %d)", ids[i], n_vocab);
    if (spm_special(ids[i])) {
      const std::string& t = g_spm->token_bytes(ids[i]);
      if (text.compare(at, t.size(), t) != 0) fail("special token %d at byte %zu is not the text there", ids[i], at);
      at += t.size(), ++i;
      continue;
    }
    std::string stretch;
    for (; i < ids.size() && ids[i] >= 0 && ids[i] < n_vocab && !spm_special(ids[i]); ++i)
      stretch += g_spm->token_bytes(ids[i]);
    if (stretch.empty() || stretch[0] != ' ' || text.compare(at, stretch.size() - 1, stretch, 1) != 0)
      fail("a stretch of %zu bytes at byte %zu does not decode to the prefix and its text", stretch.size(), at);
    at += stretch.size() - 1;
  }
  if (at != text.size()) fail("SentencePiece tokens stand for %zu of %zu bytes", at, text.size());
  std::vector<int32_t> with_bos;
  if (!g_spm->encode(input, true, parse_special, &with_bos).is_ok()) fail("SentencePiece encode with BOS refused");
  if (!ids.empty() && ids[0] == g_spm_vocab.bos ? with_bos != ids : with_bos.size() != ids.size() + 1 ||
      with_bos[0] != g_spm_vocab.bos || !std::equal(ids.begin(), ids.end(), with_bos.begin() + 1))
    fail("add_special did more than put BOS in front");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wt::fuzz::quiet_logs();
  const char* env = std::getenv("WHITTLE_FUZZ_MODEL");
  const std::string path = env && *env ? env : WT_FUZZ_DEFAULT_MODEL;
  const wt_status st = wt_model_load(path.c_str(), nullptr, &g_model);
  if (st != WT_OK)
    fail("cannot load %s (%s: %s); scripts/fetch-model.sh fetches it, WHITTLE_FUZZ_MODEL names another", path.c_str(),
         wt_status_string(st), wt_last_error());
  wt_model_info info;
  expect_status(wt_model_get_info(g_model, &info), {WT_OK}, "wt_model_get_info");
  g_n_vocab = info.n_vocab;
  for (int b = 0; b < 256; ++b) {
    const char ch = static_cast<char>(b);
    g_lacking[b] = tokenize(std::string_view(&ch, 1), false, false, 0).empty();
  }
  // Where BOS/EOS go: around the tokens of "a".
  const std::vector<wt_token> plain = tokenize("a", false, false, 0), wrapped = tokenize("a", true, false, 0);
  size_t at = 0;
  while (at + plain.size() <= wrapped.size() && !std::equal(plain.begin(), plain.end(), wrapped.begin() + at)) ++at;
  if (plain.empty() || at + plain.size() > wrapped.size()) fail("add_special tokens of \"a\" do not contain its tokens");
  g_prefix.assign(wrapped.begin(), wrapped.begin() + at);
  g_suffix.assign(wrapped.begin() + at + plain.size(), wrapped.end());
  std::vector<wt_token> empty = g_prefix;
  empty.insert(empty.end(), g_suffix.begin(), g_suffix.end());
  if (tokenize("", true, false, 0) != empty) fail("add_special of \"\" is not the BOS/EOS around \"a\"");
  std::string error;
  if (!wt::test::read_spm_vocab(WT_FUZZ_SPM_VOCAB, &g_spm_vocab, &error)) fail("%s", error.c_str());
  if (!g_spm_vocab.add_space_prefix) fail("%s: the checks expect the space prefix", WT_FUZZ_SPM_VOCAB);
  const wt::Status spm = wt::Tokenizer::create(g_spm_vocab, &g_spm);
  if (!spm.is_ok()) fail("%s: %s", WT_FUZZ_SPM_VOCAB, spm.message().c_str());
  return 0;
}

// Input: a mode byte (bit 7: token ids, else text; bit 6: text for SentencePiece; bit 0:
// parse special tokens), a byte that picks the buffer sizes, then the text or the ids. Text
// seeds are plain files behind two bytes.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0], cap_seed = data[1];
  if (mode & 0x80) {
    FuzzedDataProvider fdp(data + 2, size - 2);
    check_ids(fdp, cap_seed);
  } else if (mode & 0x40) {
    check_spm_text(std::string_view(reinterpret_cast<const char*>(data + 2), size - 2), (mode & 1) != 0);
  } else {
    check_text(std::string_view(reinterpret_cast<const char*>(data + 2), size - 2), (mode & 1) != 0, cap_seed);
  }
  return 0;
}
