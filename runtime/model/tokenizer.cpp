#include "tokenizer.h"

#include <algorithm>
#include <cstdlib>

#include "utf8_stream.h"

namespace wt {
namespace {

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for themselves, the other
// 68 bytes (controls, space, DEL, NBSP, soft hyphen) for U+0100 onwards, in byte order,
// so that every byte is a visible character in the vocabulary ("Ġ" is the space).
struct ByteLevel {
  uint32_t byte_to_cp[256];
  int16_t cp_to_byte[324];  // -1 where the code point is not in the alphabet

  ByteLevel() {
    std::fill(std::begin(cp_to_byte), std::end(cp_to_byte), int16_t{-1});
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      byte_to_cp[b] = printable ? b : next++;
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteLevel& byte_level() {
  static const ByteLevel table;
  return table;
}

// Token text in byte-level form -> the bytes it stands for. A character outside the
// alphabet (no valid gpt2 vocabulary has one) is kept as its UTF-8 rather than dropped.
std::string byte_level_decode(const std::string& text) {
  const ByteLevel& bl = byte_level();
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Char c = utf8_decode(text, pos);
    if (c.result == Utf8Result::ok && c.cp < 324 && bl.cp_to_byte[c.cp] >= 0) {
      out.push_back(static_cast<char>(bl.cp_to_byte[c.cp]));
    } else {
      out.append(text, pos, c.n_bytes);
    }
    pos += c.n_bytes;
  }
  return out;
}

// "<0x0A>" -> the byte; the text itself when it is not of that form.
std::string byte_token_decode(const std::string& text) {
  if (text.size() == 6 && text.compare(0, 3, "<0x") == 0 && text[5] == '>') {
    const std::string hex = text.substr(3, 2);
    char* end = nullptr;
    const long v = std::strtol(hex.c_str(), &end, 16);
    if (end == hex.c_str() + 2) return std::string(1, static_cast<char>(v));
  }
  return text;
}

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A symbol of the word being merged: a doubly linked list over the word's bytes. A
// merge keeps the left symbol and kills the right one (id = -1).
struct Symbol {
  int32_t id;
  int32_t prev, next;
};

// A merge that may apply: the pair (left, right) starting at symbol pos. Entries go
// stale when a neighbour merges first; they are checked when popped, not removed.
struct Candidate {
  int32_t rank;
  int32_t pos;
  int32_t left, right;
  int32_t result;
};

// Max-heap order: lowest rank first, then leftmost (as HF tokenizers' BPE).
bool lower_priority(const Candidate& a, const Candidate& b) {
  return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
}

}  // namespace

struct Tokenizer::Scratch {
  SpmEncoder::Scratch spm;
  std::vector<std::string_view> words;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string text;  // byte-level form of a word, for ignore_merges
};

Status Tokenizer::create(const Vocab& vocab, std::unique_ptr<Tokenizer>* out) {
  const int32_t n = vocab.n_vocab();
  if (!vocab.token_types.empty() && vocab.token_types.size() != vocab.tokens.size())
    return error(WT_ERR_FORMAT, "tokenizer.ggml.token_type has " + std::to_string(vocab.token_types.size()) +
                                    " entries for " + std::to_string(n) + " tokens");
  auto in_range = [n](int32_t id) { return id >= 0 && id < n; };
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  if (vocab.model == "llama") {
    t->spm_ = std::make_unique<SpmEncoder>();
    WT_TRY(SpmEncoder::create(vocab, t->spm_.get()));
    t->add_space_prefix_ = vocab.add_space_prefix;
  } else if (vocab.model == "gpt2") {
    WT_TRY(pretokenizer_from_name(vocab.pre, &t->pre_));
    // Llama 3's tokenizer.json sets BPE ignore_merges; llama.cpp ties it to this
    // pre-tokenizer too, since GGUF has no key for it.
    t->ignore_merges_ = t->pre_ == PretokenizerKind::llama3;
  } else {
    return error(WT_ERR_UNSUPPORTED, "tokenizer model '" + vocab.model +
                                         "' (tokenizer.ggml.model) is not supported; only gpt2 "
                                         "(byte-level BPE) and llama (SentencePiece BPE)");
  }

  if (vocab.add_bos && !in_range(vocab.bos))
    return error(WT_ERR_FORMAT, "tokenizer.ggml.add_bos_token is set but the BOS id " +
                                    std::to_string(vocab.bos) + " is not a token");
  if (vocab.add_eos && !in_range(vocab.eos))
    return error(WT_ERR_FORMAT, "tokenizer.ggml.add_eos_token is set but the EOS id " +
                                    std::to_string(vocab.eos) + " is not a token");
  t->bos_ = vocab.bos, t->eos_ = vocab.eos;
  t->add_bos_ = vocab.add_bos, t->add_eos_ = vocab.add_eos;

  t->trie_.emplace_back();
  t->bytes_.resize(n);
  if (!t->spm_) t->text_to_id_.reserve(n);
  for (int32_t id = 0; id < n; ++id) {
    const std::string& text = vocab.tokens[id];
    const TokenType type = vocab.token_types.empty() ? TokenType::normal : vocab.token_types[id];
    if (!t->spm_) t->text_to_id_.emplace(text, id);  // the first of duplicate texts wins
    switch (type) {
      case TokenType::control:
      case TokenType::unknown:
        t->bytes_[id] = text;
        t->add_special(text, id, /*always=*/false);
        break;
      case TokenType::user_defined:
        t->bytes_[id] = text;
        t->add_special(text, id, /*always=*/true);
        break;
      case TokenType::byte:
        t->bytes_[id] = byte_token_decode(text);
        break;
      default:
        t->bytes_[id] = t->spm_ ? SpmEncoder::piece_bytes(text) : byte_level_decode(text);
        break;
    }
  }
  if (t->spm_) {
    *out = std::move(t);
    return Status::ok();
  }
  std::string one;
  for (int b = 0; b < 256; ++b) {
    one.clear();
    utf8_append(byte_level().byte_to_cp[b], &one);
    const auto it = t->text_to_id_.find(one);
    t->byte_token_[b] = it == t->text_to_id_.end() ? -1 : it->second;
  }
  WT_TRY(t->build_merges(vocab));
  *out = std::move(t);
  return Status::ok();
}

Status Tokenizer::build_merges(const Vocab& vocab) {
  merges_.reserve(vocab.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const std::string& m = vocab.merges[rank];
    const size_t sp = m.find(' ');
    auto bad = [&](const std::string& why) {
      return error(WT_ERR_FORMAT, "tokenizer.ggml.merges[" + std::to_string(rank) + "] '" + m + "': " + why);
    };
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos)
      return bad("not two tokens separated by one space");
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    const auto l = text_to_id_.find(left), r = text_to_id_.find(right);
    if (l == text_to_id_.end()) return bad("'" + left + "' is not a token");
    if (r == text_to_id_.end()) return bad("'" + right + "' is not a token");
    joined = left + right;
    const auto res = text_to_id_.find(joined);
    if (res == text_to_id_.end()) return bad("the merged '" + joined + "' is not a token");
    // A repeated pair takes its last rank, as HF tokenizers' merge map does.
    merges_[pair_key(l->second, r->second)] = Merge{static_cast<int32_t>(rank), res->second};
  }
  return Status::ok();
}

void Tokenizer::add_special(const std::string& text, int32_t id, bool always) {
  if (text.empty()) return;
  int32_t node = 0;
  for (const char ch : text) {
    const auto b = static_cast<uint8_t>(ch);
    int32_t child = -1;
    for (const auto& [key, idx] : trie_[node].next)
      if (key == b) child = idx;
    if (child < 0) {
      child = static_cast<int32_t>(trie_.size());
      trie_[node].next.emplace_back(b, child);
      trie_.emplace_back();  // invalidates references into trie_: index, don't hold
    }
    node = child;
  }
  if (trie_[node].token < 0) trie_[node].token = id, trie_[node].always = always;
  special_first_byte_[static_cast<uint8_t>(text[0])] = true;
}

size_t Tokenizer::match_special(std::string_view text, size_t pos, bool parse_special, int32_t* id) const {
  size_t best = 0;
  int32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    const auto b = static_cast<uint8_t>(text[i]);
    int32_t child = -1;
    for (const auto& [key, idx] : trie_[node].next)
      if (key == b) child = idx;
    if (child < 0) break;
    node = child;
    const TrieNode& tn = trie_[node];
    if (tn.token >= 0 && (parse_special || tn.always)) best = i + 1 - pos, *id = tn.token;
  }
  return best;
}

Status Tokenizer::encode(std::string_view text, bool add_special, bool parse_special,
                         std::vector<int32_t>* out) const {
  if (!out) return error(WT_ERR_INVALID_ARGUMENT, "out is NULL");
  // Offsets inside the pre-tokenizer are 32-bit; SentencePiece's symbols are indexed by int32
  // over a text whose spaces became 3 bytes each.
  if (text.size() > UINT32_MAX) return error(WT_ERR_INVALID_ARGUMENT, "text longer than 4 GiB");
  if (spm_ && text.size() > INT32_MAX / 3)
    return error(WT_ERR_INVALID_ARGUMENT, "text longer than 680 MiB for a SentencePiece vocabulary");
  out->clear();
  out->reserve(text.size() / 3 + 2);
  if (add_special && add_bos_) out->push_back(bos_);
  Scratch s;
  // SentencePiece: a "▁" before the text and before each stretch that follows a
  // special token, as llama.cpp does (its is_prev_special; HF's legacy Llama tokenizer too).
  bool prefix = add_space_prefix_;
  auto plain = [&](std::string_view stretch) {
    if (stretch.empty()) return;
    encode_plain(stretch, prefix, &s, out);
    prefix = false;
  };
  size_t seg = 0;  // start of the text not yet encoded
  for (size_t pos = 0; pos < text.size();) {
    int32_t id = -1;
    const size_t len = special_first_byte_[static_cast<uint8_t>(text[pos])]
                           ? match_special(text, pos, parse_special, &id) : 0;
    if (len == 0) {
      ++pos;
      continue;
    }
    plain(text.substr(seg, pos - seg));
    out->push_back(id);
    prefix = add_space_prefix_;
    pos += len;
    seg = pos;
  }
  plain(text.substr(seg));
  // A text that begins with the BOS token itself (a chat template that writes it, as
  // Llama 3's does) already has the one BOS the model wants: the added one would make two.
  if (add_special && add_bos_ && out->size() >= 2 && (*out)[1] == bos_) out->erase(out->begin());
  if (add_special && add_eos_) out->push_back(eos_);
  return Status::ok();
}

void Tokenizer::encode_plain(std::string_view text, bool space_prefix, Scratch* s, std::vector<int32_t>* out) const {
  if (spm_) {
    spm_->encode(text, space_prefix, &s->spm, out);
    return;
  }
  s->words.clear();
  pretokenize(pre_, text, &s->words);
  for (const std::string_view word : s->words) encode_word(word, s, out);
}

void Tokenizer::encode_word(std::string_view word, Scratch* s, std::vector<int32_t>* out) const {
  if (ignore_merges_ && word.size() > 1) {
    s->text.clear();
    for (const char ch : word) utf8_append(byte_level().byte_to_cp[static_cast<uint8_t>(ch)], &s->text);
    const auto it = text_to_id_.find(s->text);
    if (it != text_to_id_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  // One symbol per byte. A byte the vocabulary lacks is dropped, as HF's BPE does without
  // an unk_token (GPT-2-style tokenizer.json files have none) and as llama.cpp does;
  // SmolLM2 lacks 21 bytes, mostly ones valid UTF-8 never contains. Emitting UNK instead
  // would put <|endoftext|> into a prompt for a stray control character.
  std::vector<Symbol>& sym = s->symbols;
  sym.clear();
  for (const char ch : word) {
    const int32_t id = byte_token_[static_cast<uint8_t>(ch)];
    if (id < 0) continue;
    const auto k = static_cast<int32_t>(sym.size());
    sym.push_back({id, k - 1, k + 1});
  }
  if (sym.empty()) return;
  sym.back().next = -1;

  std::vector<Candidate>& heap = s->heap;
  heap.clear();
  auto consider = [&](int32_t pos) {
    const int32_t next = sym[pos].next;
    if (next < 0) return;
    const auto it = merges_.find(pair_key(sym[pos].id, sym[next].id));
    if (it == merges_.end()) return;
    heap.push_back({it->second.rank, pos, sym[pos].id, sym[next].id, it->second.result});
    std::push_heap(heap.begin(), heap.end(), lower_priority);
  };
  for (int32_t k = 0; k + 1 < static_cast<int32_t>(sym.size()); ++k) consider(k);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower_priority);
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = sym[c.pos];
    // Stale if either side has merged since: a merged symbol has a new (longer) token,
    // and a dead one has id -1, so comparing ids is enough.
    if (left.id != c.left || left.next < 0 || sym[left.next].id != c.right) continue;
    Symbol& right = sym[left.next];
    left.id = c.result;
    left.next = right.next;
    if (right.next >= 0) sym[right.next].prev = c.pos;
    right.id = -1;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int32_t k = 0; k >= 0; k = sym[k].next) out->push_back(sym[k].id);
}

const std::string& Tokenizer::token_bytes(int32_t id) const {
  static const std::string k_empty;
  return id >= 0 && id < n_vocab() ? bytes_[id] : k_empty;
}

}  // namespace wt
