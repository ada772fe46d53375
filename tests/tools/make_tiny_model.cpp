// Writes the tiny synthetic model the whittle-bench ctest suite runs on: random weights and
// a byte-level tokenizer (tests/support/gguf_writer.h), 8 layers so every method's default
// layer parameters fit.
#include <cstdio>

#include "support/gguf_writer.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_tiny_model OUT.gguf\n");
    return 2;
  }
  wt::test::TinyModelOptions o;
  o.n_layer = 8;
  o.n_ctx_train = 4096;
  o.seed = 4;
  if (!wt::test::write_file(argv[1], wt::test::make_tiny_llama(o).build())) {
    std::fprintf(stderr, "make_tiny_model: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
