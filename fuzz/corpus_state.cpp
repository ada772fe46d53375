// fuzz_state's seeds: each prepared state of state_setup.h behind its selector byte with bit
// 3 set (the harness rewrites the trailer, so mutations reach the checks behind the
// checksum), and cut in half; the first one also with a byte flipped in the header and in the
// KV (rehashed, and not: the checksum's refusal), and behind another context's selector
// (another KV type).
#include <string>

#include "corpus.h"
#include "state_setup.h"

namespace wt::fuzz {

Seeds state_seeds() {
  Seeds s;
  StateSetup& st = state_setup();
  for (size_t i = 0; i < st.states.size(); ++i) {
    const std::vector<uint8_t>& state = st.states[i];
    const std::string name = st.names[i];
    auto with = [&](uint8_t selector, std::vector<uint8_t> body) {
      body.insert(body.begin(), selector);
      return body;
    };
    const uint8_t sel = static_cast<uint8_t>(i);
    s[name] = with(sel | 8u, state);
    s[name + "_cut"] = with(sel, std::vector<uint8_t>(state.begin(), state.begin() + state.size() / 2));
    if (i != 0) continue;  // the damaged ones once: the checks they reach are the same for every kind
    std::vector<uint8_t> flipped = state;
    flipped[20] ^= 0x40;  // in the header
    s[name + "_header_flipped"] = with(sel | 8u, flipped);
    flipped = state;
    flipped[state.size() / 2] ^= 0x01;  // in the KV
    s[name + "_kv_flipped"] = with(sel | 8u, flipped);
    s[name + "_stale_hash"] = with(sel, flipped);
    s[name + "_other_context"] = with(static_cast<uint8_t>(sel + 1), state);
  }
  return s;
}

}  // namespace wt::fuzz
