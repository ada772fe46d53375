// Writes the tiny synthetic model the whittle-bench ctest suite runs on: random weights and
// a byte-level tokenizer (tests/support/gguf_writer.h), 8 layers so every method's default
// layer parameters fit.
//
//   make_tiny_model OUT.gguf                  # the ctest suite's model
//   make_tiny_model --smollm2-shape OUT.gguf  # SmolLM2-135M's attention and layer shapes
//                                             # (30 layers, d 576, 9/3 heads of 64, ffn 1536,
//                                             # 16k positions) with f32 weights and the tiny
//                                             # vocabulary: a GPU attention benchmark where
//                                             # the real model cannot travel
#include <cstdio>
#include <cstring>

#include "support/gguf_writer.h"

int main(int argc, char** argv) {
  const bool smollm2 = argc == 3 && std::strcmp(argv[1], "--smollm2-shape") == 0;
  if (argc != 2 && !smollm2) {
    std::fprintf(stderr, "usage: make_tiny_model [--smollm2-shape] OUT.gguf\n");
    return 2;
  }
  const char* out = argv[argc - 1];
  wt::test::TinyModelOptions o;
  o.n_layer = 8;
  o.n_ctx_train = 4096;
  o.seed = 4;
  if (smollm2) {
    o.n_layer = 30;
    o.n_embd = 576;
    o.n_head = 9;
    o.n_head_kv = 3;
    o.n_ff = 1536;
    o.n_ctx_train = 16384;
    o.weight_scale = 0.02f;
  }
  if (!wt::test::write_file(out, wt::test::make_tiny_llama(o).build())) {
    std::fprintf(stderr, "make_tiny_model: cannot write %s\n", out);
    return 1;
  }
  return 0;
}
