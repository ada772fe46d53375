// whittle-run --prompt-cache FILE: a prompt's context kept on disk, so the next run with the
// same prompt (or one that starts with it) restores it instead of prefilling it again.
//
// The file is the tool's own container around the library's saved state: "WTPC", a version,
// the prompt's token ids, then wt_context_state_save's bytes. The library checks the state
// (model, KV type, pruning method and parameters, checksum) when it loads; the tool checks
// that the cached tokens begin the new prompt.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "whittle.h"

namespace wt_run {

struct CacheRestore {
  size_t n_reused = 0;  // prompt tokens the restored state holds (0: nothing restored)
  std::string why_not;  // when nothing was restored: the reason, for the user
};

// Restores ctx from `path` when the file's tokens are a prefix of `prompt` and the library
// accepts its state; otherwise leaves ctx as it was (fresh) and says why. A file that does
// not exist is a plain miss. Never an error: a cache that cannot be used is prefilled again.
CacheRestore restore_prompt_cache(wt_context* ctx, const std::string& path, const std::vector<wt_token>& prompt);

// Writes ctx's state after `prompt` to `path` (through "<path>.tmp" and a rename, so a
// reader sees the old file or the whole new one). *state_bytes = the library state's size.
wt_status save_prompt_cache(wt_context* ctx, const std::string& path, const std::vector<wt_token>& prompt,
                            size_t* state_bytes, std::string* error);

}  // namespace wt_run
