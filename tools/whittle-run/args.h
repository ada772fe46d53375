// whittle-run's command line: the options and the one function that reads them (apart from
// main so that fuzz/fuzz_tool_args.cpp runs the same reader).
#pragma once

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "whittle.h"

namespace wt_run {

struct Options {
  std::string model;
  std::string prompt;
  std::string prompt_source;  // "-p", "-f FILE" or "--messages FILE": where the prompt came from, for errors
  bool chat = false;
  bool messages = false;  // --messages: the prompt is a conversation as JSON, for the chat template
  std::string chat_vars;  // --chat-template-kwargs: the template's variables, JSON
  bool reply_json = false;  // --reply-json: the answer printed as a JSON message (wt_chat_parse_reply)
  std::vector<std::string> stops;  // --stop: an answer ends before the first of these it writes
  std::string system;
  int n_predict = 128;
  int n_threads = 0;
  int n_ctx = 0;
  int n_batch_rows = 0;  // wt_context_params.n_batch_rows (0: the default)
  int memory_budget_mib = 0;  // wt_context_params.memory_budget_bytes in MiB (0: none)
  float temp = 0.0f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.0f;
  float repeat_penalty = 1.0f;
  float frequency_penalty = 0.0f;
  float presence_penalty = 0.0f;
  int repeat_last_n = 64;
  unsigned long long seed = 0;
  bool f32_activations = false;
  std::string prune_method = "full";
  std::vector<std::pair<std::string, std::string>> prune_params;
  bool verbose = false;
  std::string prompt_cache;   // --prompt-cache FILE
  bool interactive = false;   // -i: chat on the terminal
  wt_backend_kind backend = WT_BACKEND_CPU;
  wt_model_params load = wt_model_default_params();  // its rope fields (--rope-scaling ...)
  wt_kv_type kv_type = wt_context_default_params().kv_type;  // f16
};

enum class Action { run, help, list_methods };

// Prints the usage text to `out`.
void usage(FILE* out, const char* argv0);

// Reads argv into *o (and -f's file into o->prompt); *action says what main does next: run,
// or print the help or the methods (the other options then unchecked). False after printing
// "error: ..." for a bad or missing argument.
bool parse_args(int argc, char** argv, Options* o, Action* action);

}  // namespace wt_run
