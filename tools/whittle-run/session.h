// What whittle-run's two modes share: the loaded model, context and sampler, token
// streaming, Ctrl-C handling, the chat template and the reports.
#pragma once

#include <atomic>
#include <csignal>
#include <string>
#include <vector>

#include "args.h"
#include "whittle.h"

namespace wt_run {

struct Session {
  Options o;
  wt_model* model = nullptr;
  wt_context* ctx = nullptr;
  wt_sampler* sampler = nullptr;
  wt_context_params cp{};
};

// Prints "error: what: STATUS: detail" to stderr and returns 1. The detail defaults to
// wt_last_error(), the thread's last failed call: call fail before any other Whittle call.
int fail(const char* what, wt_status st, const char* detail);
int fail(const char* what, wt_status st);

// Ctrl-C: sets interrupted(); a prefill running then (in_prefill) stops at its next layer
// (wt_context_abort, only then: a request would otherwise stop the next prefill).
// once: the handler is removed after the first Ctrl-C, so a second one ends the process the
// default way; else it stays (the chat: Ctrl-C stops an answer, and ends the chat at the
// prompt, where reading input is interrupted rather than resumed).
void install_sigint(wt_context* ctx, bool once);
void remove_sigint();
bool interrupted();
void clear_interrupted();
void set_in_prefill(bool on);

// Streams generated tokens to stdout (and into `text`), stopping at the end token, Ctrl-C or
// the first of the stop texts (--stop) the answer writes: the text ends before it, and what
// may begin one is held back until it does not.
struct TokenStream {
  explicit TokenStream(const wt_model* model, const std::vector<std::string>* stops = nullptr);
  ~TokenStream();
  TokenStream(const TokenStream&) = delete;
  TokenStream& operator=(const TokenStream&) = delete;
  bool ok() const { return detok != nullptr; }
  void flush();  // the detokenizer's held-back bytes and the text held back, to stdout and text
  // Prints the text not yet shown up to a stop text (then cut there: false) or, unless
  // `all`, up to what could begin one.
  bool show(bool all);
  const wt_model* model;
  wt_detokenizer* detok = nullptr;
  std::vector<char> buf;
  bool quiet = false;             // keep the text without printing it (--reply-json)
  std::string text;               // what was printed (or kept), and is held back
  std::vector<wt_token> tokens;   // every sampled token, the end token included
  const std::vector<std::string>* stops = nullptr;
  size_t shown = 0;               // bytes of text printed
  bool stopped = false;           // a stop text ended the answer
};
bool on_token(wt_token token, void* user);  // for wt_generate; user = TokenStream*

// The chat template applied to (role, content) messages with the template variables `vars`
// (JSON, "" for none); false after printing the error.
bool apply_chat(const wt_model* model, const std::vector<std::pair<std::string, std::string>>& msgs,
                bool add_assistant, const std::string& vars, std::string* out);
// The chat template applied to messages given as JSON (--messages), the assistant's turn opened.
bool apply_chat_json(const wt_model* model, const std::string& messages, const std::string& vars, std::string* out);
// A reply read back as the message the template writes, JSON (wt_chat_parse_reply); false
// after printing the error.
bool parse_reply(const wt_model* model, const std::string& reply, std::string* out);
// The conversation --chat and -i start from: --system's message (if any) and `user`.
std::vector<std::pair<std::string, std::string>> first_turn(const Options& o, const std::string& user);
// Tokenizes text (special tokens parsed when `special`); false after printing the error.
bool tokenize(const wt_model* model, const std::string& text, bool special, std::vector<wt_token>* out);

// Bytes of KV the context holds (device and host copies of every layer's rows).
uint64_t kv_bytes_held(const Session& s);
// One line on what the pruning method keeps of a prompt ("snapkv keeps 123 of 615 prompt
// KV rows per layer on average"; full KV: every row).
std::string kept_summary(const Session& s);
void print_prune_stats(const wt_context* ctx);
// Prefill and decode rates, and a third line where the CPU ran ops on fewer workers than
// n_threads (0: all cores) because other threads held the cores.
void print_speed(const wt_context* ctx, int32_t n_threads);

}  // namespace wt_run
