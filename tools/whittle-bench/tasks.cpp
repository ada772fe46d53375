#include "tasks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace bench {
namespace {

// splitmix64: the same stream on every platform (std:: distributions are not).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(next() % n); }
  double unit() { return static_cast<double>(next() >> 11) / 9007199254740992.0; }
};

std::string digits(Rng& r, int n) {
  std::string s(1, static_cast<char>('1' + r.below(9)));
  while (static_cast<int>(s.size()) < n) s += static_cast<char>('0' + r.below(10));
  return s;
}

std::string hex(Rng& r, int n) {
  std::string s;
  while (static_cast<int>(s.size()) < n) s += "0123456789abcdef"[r.below(16)];
  return s;
}

// Needle keys: word pairs no license text contains.
const char* const kWords[] = {"amber",  "falcon", "quiet",  "river",  "copper", "meadow", "violet", "lantern",
                              "silver", "otter",  "crimson", "harbor", "velvet", "thistle", "cobalt", "heron",
                              "maple",  "ember",  "jasper", "willow", "saffron", "pebble", "indigo", "badger"};
constexpr uint32_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

std::string word_key(Rng& r) {
  const uint32_t a = r.below(kNumWords);
  const uint32_t b = (a + 1 + r.below(kNumWords - 1)) % kNumWords;
  return std::string(kWords[a]) + "-" + kWords[b];
}

std::string upper_name(Rng& r) {
  std::string s;
  for (int i = 0; i < 5; ++i) s += static_cast<char>('A' + r.below(26));
  return s;
}

// A needle and the depth it should sit at.
struct Needle {
  Tokens tokens;
  double depth = 0;
};

// head + haystack (sentences from a seeded start, cut to fit) with the needles inserted at
// the sentence boundaries nearest their depths + tail, exactly n tokens. The first needle is
// the one that holds the answer.
bool assemble(const Tokens& head, const std::vector<Needle>& needles, const Tokens& tail, int32_t n,
              const Filler& filler, Rng& rng, Task* t, std::string* error) {
  size_t needle_tokens = 0;
  for (const Needle& nd : needles) needle_tokens += nd.tokens.size();
  const int64_t budget = static_cast<int64_t>(n) - static_cast<int64_t>(head.size() + tail.size() + needle_tokens);
  if (budget < 0) {
    *error = "a prompt of " + std::to_string(n) + " tokens cannot hold the task's own " +
             std::to_string(n - budget) + " tokens";
    return false;
  }
  if (filler.sentences.empty() || filler.n_tokens < static_cast<size_t>(budget)) {
    *error = "the filler has " + std::to_string(filler.n_tokens) + " tokens, " + std::to_string(budget) + " needed";
    return false;
  }
  Tokens hay;
  std::vector<size_t> boundaries;  // indices in `hay` where a sentence starts, then the end
  size_t s = rng.below(static_cast<uint32_t>(filler.sentences.size()));
  while (hay.size() < static_cast<size_t>(budget)) {
    boundaries.push_back(hay.size());
    const Tokens& sent = filler.sentences[s];
    const size_t take = std::min(sent.size(), static_cast<size_t>(budget) - hay.size());
    hay.insert(hay.end(), sent.begin(), sent.begin() + static_cast<std::ptrdiff_t>(take));
    s = (s + 1) % filler.sentences.size();
  }
  boundaries.push_back(hay.size());

  // Each needle's insertion point: the boundary nearest depth * |hay| (monotonic in depth,
  // so needles given in depth order stay in that order).
  std::vector<std::pair<size_t, size_t>> at;  // (boundary, needle index)
  for (size_t i = 0; i < needles.size(); ++i) {
    const double want = std::clamp(needles[i].depth, 0.0, 1.0) * static_cast<double>(hay.size());
    size_t best = boundaries[0];
    for (size_t b : boundaries)
      if (std::fabs(static_cast<double>(b) - want) < std::fabs(static_cast<double>(best) - want)) best = b;
    at.emplace_back(best, i);
  }
  std::stable_sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });

  Tokens& p = t->prompt;
  p = head;
  t->haystack_begin = static_cast<int32_t>(p.size());
  size_t done = 0;
  for (const auto& [pos, idx] : at) {
    p.insert(p.end(), hay.begin() + static_cast<std::ptrdiff_t>(done), hay.begin() + static_cast<std::ptrdiff_t>(pos));
    done = pos;
    if (idx == 0) t->needle_begin = static_cast<int32_t>(p.size());
    p.insert(p.end(), needles[idx].tokens.begin(), needles[idx].tokens.end());
    if (idx == 0) t->needle_end = static_cast<int32_t>(p.size());
  }
  p.insert(p.end(), hay.begin() + static_cast<std::ptrdiff_t>(done), hay.end());
  t->haystack_end = static_cast<int32_t>(p.size());
  p.insert(p.end(), tail.begin(), tail.end());
  return true;
}

bool make_kv_retrieval(int32_t n, double depth, Rng& rng, const Tokenizer& tok, Task* t, std::string* error) {
  // RULER's key-value retrieval: the haystack is the JSON object itself, no prose.
  const Tokens head = tok("Extract the value corresponding to the specified key in the JSON object below.\n\nJSON data:\n{", true);
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<Tokens> pair_tokens;
  const std::string probe_key(8, '0');
  const size_t tail_len = tok("}\n\nKey: \"" + probe_key + "\"\nThe value associated with the specified key is: \"", false).size();
  size_t used = head.size() + tail_len;
  for (;;) {
    std::string k = hex(rng, 8), v = hex(rng, 8);
    Tokens pt = tok("\"" + k + "\": \"" + v + "\", ", false);
    if (used + pt.size() > static_cast<size_t>(n)) break;
    used += pt.size();
    pairs.emplace_back(std::move(k), std::move(v));
    pair_tokens.push_back(std::move(pt));
  }
  if (pairs.size() < 2) {
    *error = "a prompt of " + std::to_string(n) + " tokens holds fewer than 2 key-value pairs";
    return false;
  }
  const size_t target = static_cast<size_t>(std::lround(std::clamp(depth, 0.0, 1.0) * static_cast<double>(pairs.size() - 1)));
  const Tokens tail = tok("}\n\nKey: \"" + pairs[target].first + "\"\nThe value associated with the specified key is: \"", false);
  Tokens& p = t->prompt;
  p = head;
  t->haystack_begin = static_cast<int32_t>(p.size());
  for (size_t i = 0; i < pairs.size(); ++i) {
    if (i == target) t->needle_begin = static_cast<int32_t>(p.size());
    p.insert(p.end(), pair_tokens[i].begin(), pair_tokens[i].end());
    if (i == target) t->needle_end = static_cast<int32_t>(p.size());
  }
  // Keys tokenize to different lengths: pad the gap with the start of one more pair (a
  // distractor cut short) so the prompt is exactly n tokens.
  const int64_t gap = static_cast<int64_t>(n) - static_cast<int64_t>(p.size() + tail.size());
  if (gap < 0) {
    *error = "the key-value prompt overflowed by " + std::to_string(-gap) + " tokens";
    return false;
  }
  const Tokens pad = tok("\"" + hex(rng, 8) + "\": \"" + hex(rng, 8) + "\", \"" + hex(rng, 8) + "\": \"" + hex(rng, 8) + "\", ", false);
  for (int64_t i = 0; i < gap; ++i) p.push_back(pad[static_cast<size_t>(i) % pad.size()]);
  t->haystack_end = static_cast<int32_t>(p.size());
  p.insert(p.end(), tail.begin(), tail.end());
  t->answers = {pairs[target].second};
  t->max_new_tokens = 12;
  return true;
}

bool whole_word_in(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const size_t end = at + word.size();
    const bool right = end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (left && right) return true;
  }
  return false;
}

}  // namespace

const char* task_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::passkey: return "passkey";
    case TaskKind::niah_single: return "niah_single";
    case TaskKind::niah_multikey: return "niah_multikey";
    case TaskKind::kv_retrieval: return "kv_retrieval";
    case TaskKind::variable_tracking: return "variable_tracking";
  }
  return "?";
}

bool task_from_name(const std::string& name, TaskKind* out) {
  for (TaskKind k : {TaskKind::passkey, TaskKind::niah_single, TaskKind::niah_multikey, TaskKind::kv_retrieval,
                     TaskKind::variable_tracking}) {
    if (name == task_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

std::vector<std::string> pieces(const std::string& s, char sep) {
  std::vector<std::string> out;
  for (size_t at = 0;;) {
    const size_t next = s.find(sep, at);
    out.push_back(s.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) return out;
    at = next + 1;
  }
}

bool parse_task_list(const std::string& list, std::vector<TaskSpec>* out, std::string* error) {
  out->clear();
  if (list == "none") return true;
  for (const std::string& item : pieces(list, ',')) {
    const size_t sep = item.find('@');
    TaskSpec ts{};
    if (!task_from_name(item.substr(0, sep), &ts.kind)) {
      *error = "unknown task '" + item.substr(0, sep) +
               "' (passkey, niah_single, niah_multikey, kv_retrieval, variable_tracking)";
      return false;
    }
    if (sep == std::string::npos) {
      ts.depths = {0.5};
    } else {
      for (const std::string& x : pieces(item.substr(sep + 1), ':')) {
        char* end = nullptr;
        const double v = std::strtod(x.c_str(), &end);
        // Digits and one point only: strtod would also take "nan", "inf" and hex.
        if (x.empty() || x.find_first_not_of("0123456789.") != std::string::npos || *end != '\0' || !(v >= 0 && v <= 1)) {
          *error = "task '" + item + "': depth '" + x + "' is not a number in [0, 1]";
          return false;
        }
        ts.depths.push_back(v);
      }
    }
    out->push_back(std::move(ts));
  }
  return true;
}

Filler make_filler(const std::string& text, const Tokenizer& tokenize) {
  std::string flat;
  flat.reserve(text.size());
  for (char c : text) {
    const bool space = std::isspace(static_cast<unsigned char>(c)) != 0;
    if (space && (flat.empty() || flat.back() == ' ')) continue;
    flat += space ? ' ' : c;
  }
  Filler f;
  size_t begin = 0;
  for (size_t i = 0; i < flat.size(); ++i) {
    const bool end = (flat[i] == '.' || flat[i] == '?' || flat[i] == '!') && (i + 1 == flat.size() || flat[i + 1] == ' ');
    if (!end) continue;
    std::string sent = flat.substr(begin, i + 1 - begin);
    begin = i + 2;
    while (!sent.empty() && sent.front() == ' ') sent.erase(sent.begin());
    // Headings, section numbers and ASCII art are not prose.
    size_t lower = 0, words = 1;
    for (char c : sent) {
      lower += std::islower(static_cast<unsigned char>(c)) ? 1 : 0;
      words += c == ' ' ? 1 : 0;
    }
    if (sent.size() < 20 || words < 4 || lower * 2 < sent.size()) continue;
    Tokens t = tokenize(" " + sent, false);
    f.n_tokens += t.size();
    f.sentences.push_back(std::move(t));
  }
  return f;
}

std::string debian_filler_text() {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/usr/share/common-licenses", ec))
    if (e.is_regular_file(ec)) files.push_back(e.path());
  std::sort(files.begin(), files.end());  // directory order is not stable across machines
  std::string all;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
    all += "\n";
  }
  return all;
}

bool make_task(TaskKind kind, int32_t n, double depth, uint64_t seed, const Filler& filler, const Tokenizer& tok,
               Task* t, std::string* error) {
  *t = Task{};
  t->kind = kind;
  t->depth = depth;
  t->seed = seed;
  Rng rng{seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(kind)};
  const char* niah_head =
      "Some special magic numbers are hidden within the following text. Make sure to memorize it. I will quiz you "
      "about the numbers afterwards.\n";
  switch (kind) {
    case TaskKind::passkey: {
      const std::string key = digits(rng, 5);
      t->answers = {key};
      t->max_new_tokens = 8;
      return assemble(tok("There is an important piece of information hidden inside a lot of irrelevant text. Find it "
                          "and memorize it. I will quiz you about the important information there.\n", true),
                      {{tok(" The pass key is " + key + ". Remember it. " + key + " is the pass key.", false), depth}},
                      tok("\nWhat is the pass key? The pass key is", false), n, filler, rng, t, error);
    }
    case TaskKind::niah_single:
    case TaskKind::niah_multikey: {
      const int n_needles = kind == TaskKind::niah_single ? 1 : 4;
      std::vector<std::string> keys;
      std::vector<Needle> needles;
      while (static_cast<int>(keys.size()) < n_needles) {
        const std::string k = word_key(rng);
        if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
        keys.push_back(k);
        const std::string value = digits(rng, 7);
        if (keys.size() == 1) t->answers = {value};
        // Distractors: other keys, other numbers, anywhere in the haystack.
        needles.push_back({tok(" One of the special magic numbers for " + k + " is: " + value + ".", false),
                           keys.size() == 1 ? depth : rng.unit()});
      }
      t->max_new_tokens = 12;
      const std::string q = "\nWhat is the special magic number for " + keys[0] +
                            " mentioned in the provided text? The special magic number for " + keys[0] +
                            " mentioned in the provided text is";
      return assemble(tok(niah_head, true), needles, tok(q, false), n, filler, rng, t, error);
    }
    case TaskKind::kv_retrieval:
      return make_kv_retrieval(n, depth, rng, tok, t, error);
    case TaskKind::variable_tracking: {
      // One chain of five assignments (RULER's default of one chain, four hops): the first
      // at the stated depth, the others spread evenly between it and the end.
      const std::string value = digits(rng, 5);
      std::vector<std::string> names;
      while (names.size() < 5) {
        const std::string nm = upper_name(rng);
        if (std::find(names.begin(), names.end(), nm) == names.end()) names.push_back(nm);
      }
      std::vector<Needle> needles;
      for (size_t i = 0; i < names.size(); ++i) {
        const std::string rhs = i == 0 ? value : "VAR " + names[i - 1];
        needles.push_back({tok(" VAR " + names[i] + " = " + rhs + ".", false),
                           depth + (1.0 - depth) * static_cast<double>(i) / static_cast<double>(names.size())});
      }
      t->answers = names;
      t->max_new_tokens = 32;
      const std::string q = "\nQuestion: Find all variables that are assigned the value " + value +
                            " in the text above. Answer: According to the chain(s) of variable assignment in the "
                            "text above, 5 variables are assigned the value " + value + ", they are:";
      return assemble(tok("Memorize and track the chain(s) of variable assignment hidden in the following text.\n", true),
                      needles, tok(q, false), n, filler, rng, t, error);
    }
  }
  *error = "unknown task";
  return false;
}

bool score_output(const Task& task, const std::string& output) {
  if (task.kind == TaskKind::variable_tracking) {
    for (const std::string& name : task.answers)
      if (!whole_word_in(output, name)) return false;
    return true;
  }
  size_t i = 0;
  while (i < output.size() && (std::isspace(static_cast<unsigned char>(output[i])) || output[i] == '"' ||
                               output[i] == '\'' || output[i] == ':'))
    ++i;
  const std::string& a = task.answers.front();
  if (output.compare(i, a.size(), a) != 0) return false;
  const size_t end = i + a.size();
  return end == output.size() || !std::isalnum(static_cast<unsigned char>(output[end]));
}

}  // namespace bench
