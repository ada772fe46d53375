// whittle-run's prompt cache file (prompt_cache.h).
#include "prompt_cache.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace wt_run {

namespace {

constexpr char kMagic[4] = {'W', 'T', 'P', 'C'};
constexpr uint32_t kVersion = 1;
// The header: magic, version, token count; then the tokens (int32, little endian as the
// library's own state), then the state.
constexpr size_t kHeaderBytes = 12;

bool read_all(FILE* f, std::vector<unsigned char>* out) {
  unsigned char chunk[65536];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof chunk, f)) > 0) out->insert(out->end(), chunk, chunk + got);
  return std::ferror(f) == 0;
}

uint32_t get_u32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}
void put_u32(uint32_t v, unsigned char* p) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace

CacheRestore restore_prompt_cache(wt_context* ctx, const std::string& path, const std::vector<wt_token>& prompt) {
  CacheRestore r;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) {
    r.why_not = errno == ENOENT ? "no file yet" : std::string("cannot open it: ") + std::strerror(errno);
    return r;
  }
  std::vector<unsigned char> bytes;
  const bool ok = read_all(f, &bytes);
  std::fclose(f);
  if (!ok) {
    r.why_not = "cannot read it";
    return r;
  }
  if (bytes.size() < kHeaderBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    r.why_not = "not a whittle-run prompt cache";
    return r;
  }
  if (get_u32(bytes.data() + 4) != kVersion) {
    r.why_not = "written by another version of whittle-run (cache version " + std::to_string(get_u32(bytes.data() + 4)) + ")";
    return r;
  }
  const uint64_t n = get_u32(bytes.data() + 8);
  if (bytes.size() < kHeaderBytes + 4 * n) {
    r.why_not = "truncated";
    return r;
  }
  if (n == 0 || n > prompt.size()) {
    r.why_not = "it holds " + std::to_string(n) + " tokens, the prompt has " + std::to_string(prompt.size());
    return r;
  }
  for (uint64_t i = 0; i < n; ++i) {
    if (static_cast<wt_token>(get_u32(bytes.data() + kHeaderBytes + 4 * i)) != prompt[i]) {
      r.why_not = "the prompt differs from the cached one at token " + std::to_string(i);
      return r;
    }
  }
  const size_t state_at = kHeaderBytes + 4 * n;
  const wt_status st = wt_context_state_load(ctx, bytes.data() + state_at, bytes.size() - state_at);
  if (st != WT_OK) {
    r.why_not = std::string(wt_status_string(st)) + ": " + wt_last_error();
    return r;
  }
  r.n_reused = n;
  return r;
}

wt_status save_prompt_cache(wt_context* ctx, const std::string& path, const std::vector<wt_token>& prompt,
                            size_t* state_bytes, std::string* error) {
  size_t n_state = 0;
  wt_status st = wt_context_state_size(ctx, &n_state);
  if (st != WT_OK) {
    *error = wt_last_error();
    return st;
  }
  std::vector<unsigned char> bytes(kHeaderBytes + 4 * prompt.size() + n_state);
  std::memcpy(bytes.data(), kMagic, 4);
  put_u32(kVersion, bytes.data() + 4);
  put_u32(static_cast<uint32_t>(prompt.size()), bytes.data() + 8);
  for (size_t i = 0; i < prompt.size(); ++i) put_u32(static_cast<uint32_t>(prompt[i]), bytes.data() + kHeaderBytes + 4 * i);
  const size_t state_at = kHeaderBytes + 4 * prompt.size();
  size_t written = 0;
  st = wt_context_state_save(ctx, bytes.data() + state_at, n_state, &written);
  if (st != WT_OK) {
    *error = wt_last_error();
    return st;
  }
  bytes.resize(state_at + written);
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    *error = "cannot create " + tmp + ": " + std::strerror(errno);
    return WT_ERR_IO;
  }
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return WT_ERR_IO;
  }
  *state_bytes = written;
  return WT_OK;
}

}  // namespace wt_run
