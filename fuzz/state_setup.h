// The contexts fuzz_state loads states into, and their states (the seeds are made from them):
// a tiny model (test::fuzz_model_options, 8 layers so every method's defaults fit, with head_dim 32
// for q8_0's blocks) and one context
// per kind of state the format carries: full KV in f32, f16 and q8_0, SnapKV (a pruned
// prompt's kept KV), SlimInfer (its active blocks) and Token Filtering (its thresholds), each
// after a fixed prompt and two decode steps.
#pragma once

#include <cstdint>
#include <vector>

#include "whittle.h"

namespace wt::fuzz {

struct StateSetup {
  StateSetup() = default;
  StateSetup(StateSetup&&) = default;
  ~StateSetup();  // frees the contexts and the model (LeakSanitizer checks at exit)
  wt_model* model = nullptr;
  std::vector<wt_context*> contexts;
  std::vector<std::vector<uint8_t>> states;  // states[i]: contexts[i] as prepared
  std::vector<const char*> names;            // for the seed files
};

// Made once per process; the contexts stay in their prepared state between inputs only if
// the caller puts them back (load states[i] again).
StateSetup& state_setup();

}  // namespace wt::fuzz
