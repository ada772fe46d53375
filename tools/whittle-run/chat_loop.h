// whittle-run -i: a chat on the terminal (chat_loop.cpp says how turns reuse the context).
#pragma once

#include "session.h"

namespace wt_run {

// Reads user turns from stdin until EOF, /quit or Ctrl-C at the prompt; returns the exit code.
int run_chat(Session& s);

}  // namespace wt_run
