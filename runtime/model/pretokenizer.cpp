#include "pretokenizer.h"

#include <cstdint>

#include "unicode_tables.h"
#include "utf8_stream.h"

namespace wt {
namespace {

// One code point (or one invalid byte) of the input.
struct Unit {
  uint32_t offset;  // byte offset in the text
  uint32_t cp;      // code point; k_invalid_cp for an ill-formed byte
  uint8_t cls;      // CptClass bits; 0 = "other"
};

constexpr uint32_t k_invalid_cp = 0xFFFFFFFF;

// The scanners below walk units [lo, hi) and return where the regex match starting at i
// ends. Each branch is one regex alternative, tried in the regex's order; the first that
// matches wins, as in a backtracking engine.
class Scanner {
 public:
  explicit Scanner(const std::vector<Unit>& u) : u_(u) {}

  size_t gpt2(size_t i, size_t hi) const {
    const uint32_t c = u_[i].cp;
    // 's|'t|'re|'ve|'m|'ll|'d  (case-sensitive)
    if (c == '\'' && i + 1 < hi) {
      const uint32_t c1 = u_[i + 1].cp;
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
      if (i + 2 < hi) {
        const uint32_t c2 = u_[i + 2].cp;
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return i + 3;
      }
    }
    //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+   (the three share a shape)
    const size_t j = (c == ' ' && i + 1 < hi) ? i + 1 : i;
    if (is(j, k_cpt_letter)) return run(j, hi, k_cpt_letter);
    if (is(j, k_cpt_number)) return run(j, hi, k_cpt_number);
    if (is_other(j)) return run_other(j, hi);
    // Only whitespace is left at i (a space followed by a space lands here too).
    return spaces(i, hi);
  }

  // llama3 and qwen2; max_digits is 3 or 1.
  size_t llama3(size_t i, size_t hi, size_t max_digits) const {
    const uint32_t c = u_[i].cp;
    // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (const size_t e = contraction(i, hi); e > i) return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (is(i, k_cpt_letter)) return run(i, hi, k_cpt_letter);
    if (c != '\r' && c != '\n' && !is(i, k_cpt_number) && i + 1 < hi && is(i + 1, k_cpt_letter))
      return run(i + 1, hi, k_cpt_letter);
    // \p{N}{1,3}  or  \p{N}
    if (is(i, k_cpt_number)) return digits(i, hi, max_digits);
    //  ?[^\s\p{L}\p{N}]+[\r\n]*
    if (const size_t e = punct_run(i, hi, false); e > i) return e;
    return line_breaks_or_spaces(i, hi);
  }

  // gpt-4o (o200k): words split at case changes, contractions after a word.
  //   [^\r\n\p{L}\p{N}]?UPPER*LOWER+CONTRACTION? | [^\r\n\p{L}\p{N}]?UPPER+LOWER*CONTRACTION? |
  //   \p{N}{1,3} |  ?[^\s\p{L}\p{N}]+[\r\n/]* | \s*[\r\n]+ | \s+(?!\S) | \s+
  // with UPPER = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}], LOWER = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
  size_t gpt4o(size_t i, size_t hi) const {
    const uint32_t c = u_[i].cp;
    // The optional first unit: no \r, \n, letter or number (a space, a mark, punctuation).
    const bool prefix = c != '\r' && c != '\n' && !is(i, k_cpt_letter | k_cpt_number) && i + 1 < hi;
    for (const bool lower_needed : {true, false}) {  // the first alternative, then the second
      for (const size_t s : {prefix ? i + 1 : hi, i}) {  // with the prefix first, as `?` is greedy
        if (s >= hi) continue;
        const size_t e = lower_needed ? upper_lower(s, hi) : upper_then_lower(s, hi);
        if (e > s) return contraction(e, hi);  // CONTRACTION?
      }
    }
    if (is(i, k_cpt_number)) return digits(i, hi, 3);  // \p{N}{1,3}
    //  ?[^\s\p{L}\p{N}]+[\r\n/]*
    if (const size_t e = punct_run(i, hi, true); e > i) return e;
    return line_breaks_or_spaces(i, hi);
  }

 private:
  bool is(size_t i, uint8_t cls) const { return (u_[i].cls & cls) != 0; }
  // [^\s\p{L}\p{N}]: punctuation, symbols, marks, unassigned and invalid bytes.
  bool is_other(size_t i) const { return !is(i, k_cpt_letter | k_cpt_number | k_cpt_space); }

  // UPPER*LOWER+ from s: where it ends as a backtracking engine finds it, or s for no match.
  // UPPER* takes its whole run first; LOWER+ then needs a LOWER unit just after it, else
  // UPPER* gives units back until one it gave back is LOWER (Lm, Lo and marks are both),
  // which LOWER+ takes alone (the units after it in the run are not LOWER).
  size_t upper_lower(size_t s, size_t hi) const {
    const size_t u = run(s, hi, k_cpt_upper);
    if (u < hi && is(u, k_cpt_lower)) return run(u, hi, k_cpt_lower);
    for (size_t k = u; k > s; --k)
      if (is(k - 1, k_cpt_lower)) return k;
    return s;
  }
  // UPPER+LOWER*: the whole UPPER run, then the LOWER run after it; s for no match.
  size_t upper_then_lower(size_t s, size_t hi) const {
    const size_t u = run(s, hi, k_cpt_upper);
    return u == s ? s : run(u, hi, k_cpt_lower);
  }
  // (?i:'s|'t|'re|'ve|'m|'ll|'d) at e: where it ends, or e. Oniguruma's case folding also
  // takes U+017F (long s) for s; no other character folds to these letters.
  size_t contraction(size_t e, size_t hi) const {
    if (e + 1 >= hi || u_[e].cp != '\'') return e;
    const uint32_t c1 = fold(u_[e + 1].cp);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return e + 2;
    if (e + 2 < hi) {
      const uint32_t c2 = fold(u_[e + 2].cp);
      if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return e + 3;
    }
    return e;
  }
  // \p{N}{1,max} at a number.
  size_t digits(size_t i, size_t hi, size_t max) const {
    size_t e = i + 1;
    while (e < hi && e - i < max && is(e, k_cpt_number)) ++e;
    return e;
  }
  //  ?[^\s\p{L}\p{N}]+ then [\r\n]* (or [\r\n/]* with slash): where it ends, or i.
  size_t punct_run(size_t i, size_t hi, bool slash) const {
    const size_t j = (u_[i].cp == ' ' && i + 1 < hi) ? i + 1 : i;
    if (!is_other(j)) return i;
    size_t e = run_other(j, hi);
    while (e < hi && (u_[e].cp == '\r' || u_[e].cp == '\n' || (slash && u_[e].cp == '/'))) ++e;
    return e;
  }

  size_t run(size_t i, size_t hi, uint8_t cls) const {
    while (i < hi && is(i, cls)) ++i;
    return i;
  }
  size_t run_other(size_t i, size_t hi) const {
    while (i < hi && is_other(i)) ++i;
    return i;
  }

  // Only whitespace is left at i. \s*[\r\n]+ : backtracking makes it end just after
  // the last \r or \n of the whitespace run, if the run has one; else \s+(?!\S)|\s+.
  size_t line_breaks_or_spaces(size_t i, size_t hi) const {
    const size_t e = run(i, hi, k_cpt_space);
    for (size_t k = e; k > i; --k)
      if (u_[k - 1].cp == '\r' || u_[k - 1].cp == '\n') return k;
    return spaces(i, hi);
  }

  // \s+(?!\S)|\s+ at a whitespace unit: the whole run at the end of the text; otherwise
  // all but its last unit (which then prefixes the next word), or the single unit.
  size_t spaces(size_t i, size_t hi) const {
    const size_t e = run(i, hi, k_cpt_space);
    if (e == hi || e - i == 1) return e;
    return e - 1;
  }

  static uint32_t fold(uint32_t c) {
    if (c >= 'A' && c <= 'Z') return c + ('a' - 'A');
    if (c == 0x17F) return 's';
    return c;
  }

  const std::vector<Unit>& u_;
};

void decode_units(std::string_view text, std::vector<Unit>* units) {
  units->clear();
  units->reserve(text.size() + 1);
  size_t pos = 0;
  while (pos < text.size()) {
    const Utf8Char c = utf8_decode(text, pos);
    if (c.result == Utf8Result::ok) {
      units->push_back({static_cast<uint32_t>(pos), c.cp, cpt_class(c.cp)});
      pos += c.n_bytes;
    } else {
      units->push_back({static_cast<uint32_t>(pos), k_invalid_cp, 0});
      pos += 1;
    }
  }
  units->push_back({static_cast<uint32_t>(pos), 0, 0});  // sentinel: end offset
}

}  // namespace

Status pretokenizer_from_name(std::string_view name, PretokenizerKind* out) {
  if (name.empty() || name == "default" || name == "gpt2") {
    *out = PretokenizerKind::gpt2;
  } else if (name == "smollm") {
    *out = PretokenizerKind::smollm;
  } else if (name == "llama-bpe" || name == "llama3" || name == "llama-v3") {
    *out = PretokenizerKind::llama3;
  } else if (name == "qwen2" || name == "deepseek-r1-qwen") {
    *out = PretokenizerKind::qwen2;
  } else if (name == "gpt-4o") {
    *out = PretokenizerKind::gpt4o;
  } else {
    return error(WT_ERR_UNSUPPORTED, "pre-tokenizer '" + std::string(name) +
                                         "' (tokenizer.ggml.pre) is not supported; known: "
                                         "default, gpt2, smollm, llama-bpe, qwen2, gpt-4o");
  }
  return Status::ok();
}

void pretokenize(PretokenizerKind kind, std::string_view text, std::vector<std::string_view>* out_words) {
  if (text.empty()) return;
  std::vector<Unit> units;
  decode_units(text, &units);
  const size_t n = units.size() - 1;
  const Scanner scan(units);
  auto emit = [&](size_t a, size_t b) {
    out_words->push_back(text.substr(units[a].offset, units[b].offset - units[a].offset));
  };
  // Emits the matches of `next` (a scanner's function: where the match at i ends) over [lo, hi).
  auto scan_range = [&](size_t lo, size_t hi, auto next) {
    for (size_t i = lo; i < hi;) {
      const size_t e = next(i, hi);
      emit(i, e);
      i = e;
    }
  };
  auto gpt2 = [&](size_t i, size_t hi) { return scan.gpt2(i, hi); };
  switch (kind) {
    case PretokenizerKind::gpt2:
      scan_range(0, n, gpt2);
      break;
    case PretokenizerKind::smollm: {
      // HF runs the GPT-2 regex on each piece between digits separately, so a piece's
      // end is the regex's end of text (this matters for \s+(?!\S)).
      size_t lo = 0;
      for (size_t i = 0; i < n; ++i) {
        if (!(units[i].cls & k_cpt_number)) continue;
        scan_range(lo, i, gpt2);
        emit(i, i + 1);
        lo = i + 1;
      }
      scan_range(lo, n, gpt2);
      break;
    }
    case PretokenizerKind::llama3:
    case PretokenizerKind::qwen2: {
      const size_t max_digits = kind == PretokenizerKind::llama3 ? 3 : 1;
      scan_range(0, n, [&](size_t i, size_t hi) { return scan.llama3(i, hi, max_digits); });
      break;
    }
    case PretokenizerKind::gpt4o:
      scan_range(0, n, [&](size_t i, size_t hi) { return scan.gpt4o(i, hi); });
      break;
  }
}

}  // namespace wt
