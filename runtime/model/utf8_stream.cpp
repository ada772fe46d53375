#include "utf8_stream.h"

namespace wt {
namespace {

constexpr char k_replacement[] = "\xEF\xBF\xBD";  // U+FFFD

bool is_cont(uint8_t b) { return (b & 0xC0) == 0x80; }

}  // namespace

Utf8Char utf8_decode(std::string_view s, size_t pos) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data()) + pos;
  const size_t avail = s.size() - pos;
  const uint8_t b0 = p[0];
  Utf8Char c;
  if (b0 < 0x80) return {Utf8Result::ok, 1, b0};
  // Length and the allowed range of the second byte (Unicode Table 3-7); the narrowed
  // ranges after E0, ED, F0, F4 are what exclude overlongs, surrogates and > U+10FFFF.
  uint32_t len = 0, cp = 0;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return c;  // 80..C1, F5..FF never start a character
  }
  for (uint32_t i = 1; i < len; ++i) {
    if (i >= avail) return {Utf8Result::truncated, i, 0};
    const uint8_t b = p[i];
    const bool in_range = i == 1 ? (b >= lo && b <= hi) : is_cont(b);
    if (!in_range) return {Utf8Result::invalid, i, 0};
    cp = (cp << 6) | (b & 0x3F);
  }
  return {Utf8Result::ok, len, cp};
}

void utf8_append(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void Utf8Stream::push(std::string_view bytes, std::string* out) {
  // Complete the held-back character first, one byte at a time: it needs at most three.
  size_t i = 0;
  while (n_pending_ > 0 && i < bytes.size()) {
    pending_[n_pending_++] = bytes[i++];
    const Utf8Char c = utf8_decode(std::string_view(pending_, n_pending_), 0);
    if (c.result == Utf8Result::truncated) continue;
    if (c.result == Utf8Result::ok) {
      out->append(pending_, n_pending_);
      n_pending_ = 0;
      break;
    }
    // Ill-formed: the maximal subpart becomes U+FFFD; what follows it is decoded afresh
    // (so the byte that broke the sequence may start a character of its own).
    out->append(k_replacement);
    const size_t rest = n_pending_ - c.n_bytes;
    std::string_view tail(pending_ + c.n_bytes, rest);
    n_pending_ = 0;
    std::string carry(tail);
    push(carry, out);  // at most 3 bytes, recursion depth at most 3
  }
  size_t run = i;  // start of a stretch of well-formed bytes copied in one append
  while (i < bytes.size()) {
    const Utf8Char c = utf8_decode(bytes, i);
    if (c.result == Utf8Result::ok) {
      i += c.n_bytes;
      continue;
    }
    out->append(bytes.data() + run, i - run);
    if (c.result == Utf8Result::truncated) {
      for (uint32_t k = 0; k < c.n_bytes; ++k) pending_[n_pending_++] = bytes[i + k];
      return;
    }
    out->append(k_replacement);
    i += c.n_bytes;
    run = i;
  }
  out->append(bytes.data() + run, i - run);
}

void Utf8Stream::flush(std::string* out) {
  // What is held back is always a well-formed but incomplete prefix: one maximal subpart.
  if (n_pending_ > 0) out->append(k_replacement);
  n_pending_ = 0;
}

}  // namespace wt
