// Synthetic long-context tasks (RULER and the passkey test), generated deterministically from
// a seed at an exact prompt length in tokens, with real English filler: sentences of the
// license texts Debian installs, never the needle's own words. A task knows where its needle
// sits, so tests can check that the answer really is in the prompt at the stated depth.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bench {

using Tokens = std::vector<int32_t>;
// Text -> tokens; add_special: the model's BOS where it wants one (only the prompt head).
using Tokenizer = std::function<Tokens(const std::string& text, bool add_special)>;

enum class TaskKind { passkey, niah_single, niah_multikey, kv_retrieval, variable_tracking };
const char* task_name(TaskKind kind);
bool task_from_name(const std::string& name, TaskKind* out);

// A task and the needle depths it is asked at: one prompt per depth.
struct TaskSpec {
  TaskKind kind;
  std::vector<double> depths;
};
// The pieces of s between the separators, empty ones kept ("a," is "a" and "").
std::vector<std::string> pieces(const std::string& s, char sep);

// whittle-bench --task: comma-separated "name" or "name@d1:d2:..." (depths in [0, 1]; 0.5
// when none given), e.g. "niah_multikey@0.25:0.75,kv_retrieval"; "none": no task (the
// fidelity prompts only). False with *error naming the bad item.
bool parse_task_list(const std::string& list, std::vector<TaskSpec>* out, std::string* error);

// Filler: whole sentences, each tokenized on its own with a leading space, so a haystack
// is a run of sentences and a needle always lands between two of them.
struct Filler {
  std::vector<Tokens> sentences;
  size_t n_tokens = 0;
};
// Sentences of `text` (white space collapsed; fragments without lower-case words dropped).
Filler make_filler(const std::string& text, const Tokenizer& tokenize);
// The license texts under /usr/share/common-licenses, concatenated ("" when none exist).
std::string debian_filler_text();

struct Task {
  TaskKind kind = TaskKind::passkey;
  double depth = 0;          // requested needle depth in the haystack: 0 start, 1 end
  uint64_t seed = 0;
  Tokens prompt;             // exactly the requested number of tokens
  std::vector<std::string> answers;  // every string the output must contain (usually one)
  int32_t needle_begin = 0;  // token range of the needle that holds the answer
  int32_t needle_end = 0;
  int32_t haystack_begin = 0, haystack_end = 0;  // token range of filler + needles
  int32_t max_new_tokens = 12;
};

// Builds `kind` at exactly n_tokens tokens. Returns false with *error set when n_tokens is
// too small for the task's fixed text or the filler is too short.
bool make_task(TaskKind kind, int32_t n_tokens, double depth, uint64_t seed, const Filler& filler,
               const Tokenizer& tokenize, Task* out, std::string* error);

// Exact match: the output, after leading blanks, quotes and colons, starts with the answer
// followed by a non-alphanumeric character or the end (variable tracking: every name occurs
// as a whole word).
bool score_output(const Task& task, const std::string& output);

}  // namespace bench
