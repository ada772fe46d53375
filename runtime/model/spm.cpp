#include "spm.h"

#include <algorithm>

#include "utf8_stream.h"

namespace wt {
namespace {

constexpr std::string_view k_space = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// Max-heap order: highest score first, then leftmost (sentencepiece's agenda).
bool lower_priority(const SpmEncoder::Scratch::Pair& a, const SpmEncoder::Scratch::Pair& b) {
  return a.score != b.score ? a.score < b.score : a.left > b.left;
}

// "<0xAB>" -> 0xAB; -1 when the text is not of that form (two hex digits, upper or lower).
int byte_of(const std::string& piece) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int b = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = piece[static_cast<size_t>(i)];
    const int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return -1;
    b = b * 16 + v;
  }
  return b;
}

bool mergeable(TokenType t) {
  return t == TokenType::normal || t == TokenType::undefined || t == TokenType::user_defined ||
         t == TokenType::unused;
}

}  // namespace

Status SpmEncoder::create(const Vocab& vocab, SpmEncoder* out) {
  const size_t n = vocab.tokens.size();
  if (vocab.scores.size() != n)
    return error(WT_ERR_FORMAT, "a SentencePiece vocabulary needs tokenizer.ggml.scores, one per token (" +
                                    std::to_string(vocab.scores.size()) + " for " + std::to_string(n) + " tokens)");
  SpmEncoder e;
  e.scores_ = vocab.scores;
  e.unused_.assign(n, false);
  std::fill(std::begin(e.byte_token_), std::end(e.byte_token_), -1);
  e.pieces_.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto id = static_cast<int32_t>(i);
    const TokenType t = vocab.token_types.empty() ? TokenType::normal : vocab.token_types[i];
    const std::string& piece = vocab.tokens[i];
    if (mergeable(t)) e.pieces_.emplace(piece, id);  // the first of duplicate pieces wins
    e.unused_[i] = t == TokenType::unused;
    const int b = t == TokenType::byte ? byte_of(piece) : -1;
    if (b >= 0 && e.byte_token_[b] < 0) e.byte_token_[b] = id;
    if (t == TokenType::unknown && e.unk_ < 0) e.unk_ = id;
  }
  if (vocab.unk >= 0 && static_cast<size_t>(vocab.unk) < n) e.unk_ = vocab.unk;
  *out = std::move(e);
  return Status::ok();
}

std::string SpmEncoder::piece_bytes(const std::string& piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, k_space.size(), k_space) == 0) {
      out.push_back(' ');
      i += k_space.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

int32_t SpmEncoder::find_piece(Scratch* s, uint32_t start, uint32_t len) const {
  s->key.assign(s->text, start, len);  // reuses the key's buffer: no allocation once grown
  const auto it = pieces_.find(s->key);
  return it == pieces_.end() ? -1 : it->second;
}

void SpmEncoder::encode(std::string_view text, bool space_prefix, Scratch* s, std::vector<int32_t>* out) const {
  if (text.empty()) return;
  std::string& t = s->text;
  t.clear();
  if (space_prefix) t += k_space;
  for (const char ch : text) {
    if (ch == ' ') {
      t += k_space;
    } else {
      t.push_back(ch);
    }
  }

  // One symbol per UTF-8 character; an ill-formed run (utf8_decode's maximal subpart, 1-3
  // bytes) is a symbol of its own, which no piece contains, so it comes out as its bytes'
  // <0xXX> tokens.
  auto& sym = s->symbols;
  sym.clear();
  for (size_t pos = 0; pos < t.size();) {
    const uint32_t len = utf8_decode(t, pos).n_bytes;
    const auto k = static_cast<int32_t>(sym.size());
    sym.push_back({static_cast<uint32_t>(pos), len, k - 1, k + 1});
    pos += len;
  }
  sym.back().next = -1;

  auto& heap = s->heap;
  heap.clear();
  s->unused_splits.clear();
  s->last_unknown = false;
  auto consider = [&](int32_t left) {
    if (left < 0) return;
    const int32_t right = sym[left].next;
    if (right < 0) return;
    const uint32_t len = sym[left].len + sym[right].len;
    const int32_t id = find_piece(s, sym[left].start, len);
    if (id < 0) return;
    heap.push_back({scores_[id], left, len});
    std::push_heap(heap.begin(), heap.end(), lower_priority);
    // What an unused piece splits back into: the parts of the last pair found to make it
    // (sentencepiece's rev_merge, also filled as pairs are found, not as they merge).
    if (unused_[id]) s->unused_splits[s->key] = sym[left].len;
  };
  for (int32_t k = 0; k + 1 < static_cast<int32_t>(sym.size()); ++k) consider(k);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Scratch::Pair p = heap.back();
    heap.pop_back();
    Scratch::Symbol& left = sym[p.left];
    // Stale when either side merged since: the left one is gone (len 0) or the two no
    // longer add up to the piece (each merge grows a symbol).
    if (left.len == 0 || left.next < 0 || left.len + sym[left.next].len != p.len) continue;
    Scratch::Symbol& right = sym[left.next];
    left.len = p.len;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = p.left;
    right.len = 0;
    consider(left.prev);
    consider(p.left);
  }
  for (int32_t k = 0; k >= 0; k = sym[k].next) emit(s, sym[k].start, sym[k].len, out);
}

void SpmEncoder::emit(Scratch* s, uint32_t start, uint32_t len, std::vector<int32_t>* out) const {
  const int32_t id = find_piece(s, start, len);
  if (id >= 0 && unused_[id]) {
    const auto it = s->unused_splits.find(s->key);
    if (it != s->unused_splits.end()) {
      const uint32_t left = it->second;
      emit(s, start, left, out);
      emit(s, start + left, len - left, out);
      return;
    }
  }
  if (id >= 0) {
    out->push_back(id);
    s->last_unknown = false;
    return;
  }
  // Byte fallback; a vocabulary without all of the character's bytes gives the unknown
  // token, one for a run of such characters (sentencepiece without byte fallback), or
  // nothing where it has none.
  bool have_bytes = true;
  for (uint32_t i = 0; i < len; ++i) have_bytes &= byte_token_[static_cast<uint8_t>(s->text[start + i])] >= 0;
  if (!have_bytes) {
    if (unk_ >= 0 && !s->last_unknown) out->push_back(unk_);
    s->last_unknown = unk_ >= 0;
    return;
  }
  for (uint32_t i = 0; i < len; ++i) out->push_back(byte_token_[static_cast<uint8_t>(s->text[start + i])]);
  s->last_unknown = false;
}

}  // namespace wt
