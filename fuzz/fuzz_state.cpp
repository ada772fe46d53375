// fuzz_state: any bytes as a saved context state, loaded with wt_context_state_load into one
// of state_setup.h's contexts (the first byte chooses which; its bit 3 rewrites the trailer
// to the hash of the bytes before it, so a mutated state gets past the checksum to the
// checks behind it). A load returns a status whittle.h documents for it; a refused state
// leaves the context as it was (n_past and the last logits, compared bit for bit); an
// accepted one leaves a context that decodes (or says it is full) and saves a state that
// loads again. Then the context gets its prepared state back.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "runtime/engine/state_io.h"
#include "state_setup.h"

namespace {

using wt::fuzz::expect_status;
using wt::fuzz::fail;

struct Snapshot {
  int32_t n_past = 0;
  std::vector<float> logits;
};

Snapshot snapshot(const wt_context* ctx, int32_t n_vocab) {
  Snapshot s;
  s.n_past = wt_context_n_past(ctx);
  const float* l = nullptr;
  if (wt_context_logits(ctx, -1, &l) == WT_OK) s.logits.assign(l, l + n_vocab);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wt::fuzz::quiet_logs();
  (void)wt::fuzz::state_setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  wt::fuzz::StateSetup& s = wt::fuzz::state_setup();
  const size_t which = (data[0] & 7u) % s.contexts.size();
  wt_context* ctx = s.contexts[which];
  std::vector<uint8_t> state(data + 1, data + size);
  if ((data[0] & 8u) != 0 && state.size() >= 8) {
    wt::StreamHash h;
    h.update(state.data(), state.size() - 8);
    const uint64_t v = h.value();
    std::memcpy(state.data() + state.size() - 8, &v, 8);
  }
  wt_model_info info{};
  if (wt_model_get_info(s.model, &info) != WT_OK) fail("model info: %s", wt_last_error());
  const Snapshot before = snapshot(ctx, info.n_vocab);

  const wt_status st = wt_context_state_load(ctx, state.data(), state.size());
  expect_status(st, {WT_OK, WT_ERR_FORMAT, WT_ERR_UNSUPPORTED, WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL},
                "wt_context_state_load");
  if (st != WT_OK) {
    const Snapshot after = snapshot(ctx, info.n_vocab);
    if (after.n_past != before.n_past || after.logits.size() != before.logits.size() ||
        std::memcmp(after.logits.data(), before.logits.data(), sizeof(float) * after.logits.size()) != 0)
      fail("a refused state (%s) changed the context: n_past %d -> %d", wt_status_string(st), before.n_past,
           after.n_past);
    return 0;
  }
  // Accepted: the context runs on from it, and its own state round-trips.
  const int32_t n_past = wt_context_n_past(ctx);
  size_t n = 0;
  if (wt_context_state_size(ctx, &n) != WT_OK) fail("state size after a load: %s", wt_last_error());
  std::vector<uint8_t> again(n);
  size_t written = 0;
  expect_status(wt_context_state_save(ctx, again.data(), again.size(), &written), {WT_OK}, "wt_context_state_save");
  const float* logits = nullptr;
  if (wt_context_logits(ctx, -1, &logits) == WT_OK) {
    const wt_status d = wt_context_decode(ctx, 3);
    expect_status(d, {WT_OK, WT_ERR_CONTEXT_FULL}, "wt_context_decode after a load");
    if (d == WT_OK && wt_context_n_past(ctx) != n_past + 1) fail("a decode after a load did not advance n_past");
  }
  expect_status(wt_context_state_load(ctx, again.data(), written), {WT_OK}, "wt_context_state_load of its own save");
  if (wt_context_n_past(ctx) != n_past) fail("a saved and reloaded state changed n_past");
  // Back to the prepared state for the next input.
  expect_status(wt_context_state_load(ctx, s.states[which].data(), s.states[which].size()), {WT_OK},
                "wt_context_state_load of the prepared state");
  return 0;
}
