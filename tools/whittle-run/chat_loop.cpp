// whittle-run -i. Each turn renders the whole conversation with the model's chat template
// and tokenizes it; the context already holds the tokens of the turns before (history),
// so only the new ones are prefilled. Where the new tokens part from the history (a reply
// whose text tokenizes differently from the tokens the model produced, a template that drops
// an earlier reply's thinking), the context is cut back to where they part
// (wt_context_truncate) and goes on from there; where that is inside the pruned first prompt,
// it starts over and the conversation is prefilled again: slower, never wrong. The first
// prefill is pruned by the context's method; later turns append (whittle.h).
#include "chat_loop.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace wt_run {

namespace {

using Messages = std::vector<std::pair<std::string, std::string>>;

// One line of stdin without its newline; false at EOF or when Ctrl-C interrupts the read.
bool read_line(std::string* out) {
  out->clear();
  char chunk[1024];
  while (true) {
    errno = 0;
    if (!std::fgets(chunk, sizeof chunk, stdin)) {
      if (errno == EINTR || interrupted()) {
        std::clearerr(stdin);
        return false;
      }
      return !out->empty();  // EOF after a last line without a newline: that line
    }
    out->append(chunk);
    if (!out->empty() && out->back() == '\n') {
      out->pop_back();
      if (!out->empty() && out->back() == '\r') out->pop_back();
      return true;
    }
  }
}

void context_full(const Session& s, size_t n_past, size_t n_new) {
  std::fprintf(stderr,
               "[context full: %zu tokens held, this turn needs %zu more, the context holds %d (-c); %s. /reset starts "
               "a new conversation]\n",
               n_past, n_new, s.cp.n_ctx, kept_summary(s).c_str());
}

}  // namespace

int run_chat(Session& s) {
  Messages msgs;
  if (!s.o.system.empty()) msgs.push_back({"system", s.o.system});
  const size_t n_fixed = msgs.size();  // what /reset keeps
  std::vector<wt_token> history;       // the tokens the context holds, in order
  std::string pending = s.o.prompt;    // -p / -f: the first user turn
  install_sigint(s.ctx, false);
  std::fprintf(stderr,
               "chat (prune %s, context %d tokens): /reset starts over, Ctrl-C stops an answer, Ctrl-D or /quit "
               "ends\n",
               wt_prune_method_name(s.cp.prune.method), s.cp.n_ctx);
  while (true) {
    std::string line;
    if (!pending.empty()) {
      line = std::move(pending);
      pending.clear();
      std::printf("> %s\n", line.c_str());
    } else {
      std::printf("> ");
      std::fflush(stdout);
      clear_interrupted();
      if (!read_line(&line)) {
        std::printf("\n");
        break;
      }
    }
    if (line == "/quit" || line == "/exit") break;
    if (line == "/reset") {
      wt_context_reset(s.ctx);
      history.clear();
      msgs.resize(n_fixed);
      std::fprintf(stderr, "[a new conversation]\n");
      continue;
    }
    if (line.empty()) continue;

    msgs.push_back({"user", line});
    std::string text;
    std::vector<wt_token> tokens;
    if (!apply_chat(s.model, msgs, true, s.o.chat_vars, &text) || !tokenize(s.model, text, true, &tokens)) {
      msgs.pop_back();
      continue;
    }
    if (tokens.empty()) {  // no template renders a user turn as nothing; never prefill nothing
      msgs.pop_back();
      continue;
    }
    // The tokens the context holds that begin the conversation now (one at least is new).
    const size_t common = std::min<size_t>(
        tokens.size() - 1,
        static_cast<size_t>(std::mismatch(history.begin(), history.end(), tokens.begin(), tokens.end()).first -
                            history.begin()));
    if (common < history.size()) {
      // Cut back to them; where that is refused (inside a pruned prompt, past a sliding
      // window), from the start. n_past counts a re-indexed re-prefill's kept tokens
      // (GemFilter), history every token.
      const int32_t held = wt_context_n_past(s.ctx);
      const size_t extra = history.size() - static_cast<size_t>(held);
      if (common >= extra && wt_context_truncate(s.ctx, static_cast<int32_t>(common - extra)) == WT_OK) {
        if (s.o.verbose)
          std::fprintf(stderr, "[the conversation differs from token %zu of the %zu held: going on from there]\n",
                       common, history.size());
        history.resize(common);
      } else {
        if (s.o.verbose)
          std::fprintf(stderr, "[the conversation differs where the context cannot be cut back to: prefilling it again]\n");
        wt_context_reset(s.ctx);
        history.clear();
      }
    }
    const size_t n_reused = history.size();
    const size_t n_new = tokens.size() - n_reused;
    if (history.size() + n_new + 1 > static_cast<size_t>(s.cp.n_ctx)) {
      context_full(s, history.size(), n_new);
      msgs.pop_back();
      continue;
    }
    clear_interrupted();
    set_in_prefill(true);
    wt_status st = wt_context_prefill(s.ctx, tokens.data() + history.size(), n_new);
    set_in_prefill(false);
    if (st != WT_OK) {
      // Anything that stopped the model while it ran reset the context (whittle.h): the
      // next turn prefills the whole conversation.
      if (st == WT_ERR_ABORTED) {
        std::fprintf(stderr, "[stopped]\n");
      } else if (st == WT_ERR_CONTEXT_FULL) {
        context_full(s, history.size(), n_new);
      } else {
        fail("prefill", st);
      }
      if (wt_context_n_past(s.ctx) == 0) history.clear();
      msgs.pop_back();
      continue;
    }
    history = tokens;
    // The repetition penalties count the conversation so far (their window its last tokens).
    st = wt_sampler_reset(s.sampler);
    if (st == WT_OK) st = wt_sampler_accept(s.sampler, history.data(), history.size());
    if (st != WT_OK) return fail("giving the conversation to the sampler", st);

    TokenStream stream(s.model, &s.o.stops);
    if (!stream.ok()) return fail("creating the detokenizer", WT_ERR_OUT_OF_MEMORY, "");
    int32_t n_gen = 0;
    st = wt_generate(s.ctx, s.sampler, s.o.n_predict, on_token, &stream, &n_gen);
    const std::string gen_error = st != WT_OK ? wt_last_error() : "";
    stream.flush();
    std::printf("\n");
    // wt_generate decodes every sampled token but the last (the end token, the one Ctrl-C
    // refused, or the n-th): the context holds the history and those.
    if (stream.tokens.size() > 1) history.insert(history.end(), stream.tokens.begin(), stream.tokens.end() - 1);
    msgs.push_back({"assistant", stream.text});
    if (interrupted()) std::fprintf(stderr, "[stopped]\n");
    if (st == WT_ERR_CONTEXT_FULL) {
      context_full(s, history.size(), 1);
    } else if (st != WT_OK) {
      fail("generation", st, gen_error.c_str());
      if (wt_context_n_past(s.ctx) == 0) history.clear();
    }
    if (s.o.verbose) {
      std::fprintf(stderr, "[turn: %zu tokens reused, %zu prefilled, %d generated; the context holds %d of %d]\n",
                   n_reused, n_new, n_gen, wt_context_n_past(s.ctx), s.cp.n_ctx);
      print_speed(s.ctx, s.cp.n_threads);
    }
  }
  remove_sigint();
  return 0;
}

}  // namespace wt_run
