// The planner tests' fixtures (test_planner.cpp, test_planner_solve.cpp): the tiny llama of
// tests/support loaded from memory, prune parameters, a synthetic unified board, and a plan
// of the tiny model on a board too large to bound it.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "platform/board.h"
#include "platform/planner.h"
#include "runtime/model/gguf.h"
#include "runtime/model/model.h"
#include "support/gguf_writer.h"

namespace wt::test {

// The tiny llama of tests/support, loaded from memory (the buffer outlives the model).
struct Tiny {
  std::vector<uint8_t> bytes;
  std::unique_ptr<Model> model;
};

inline Tiny load_tiny(const TinyModelOptions& o) {
  Tiny out;
  out.bytes = make_tiny_llama(o).build();
  std::shared_ptr<GgufFile> file;
  REQUIRE(GgufFile::parse_memory(out.bytes.data(), out.bytes.size(), &file).is_ok());
  REQUIRE(load_model_from_gguf(file, LoadOptions{}, &out.model).is_ok());
  return out;
}

// 4 layers, head_dim 16.
inline Tiny& tiny() {
  static Tiny t = [] {
    TinyModelOptions o;
    o.n_layer = 4;
    o.n_ctx_train = 1024;
    return load_tiny(o);
  }();
  return t;
}

inline wt_prune_params prune_params(wt_prune_method m, float keep) {
  wt_prune_params p = wt_prune_default_params();
  p.method = m;
  p.keep = keep;
  return p;
}

inline BoardProfile synthetic_board(uint64_t total, uint64_t reserve) {
  BoardProfile b;
  b.name = "synthetic";
  b.unified = true;
  b.total_bytes = total;
  b.reserve_bytes = reserve;
  return b;
}

inline Plan plan_for(const ModelShape& shape, int32_t n_ctx, int32_t n_new, const wt_prune_params& pp, bool logits_all = false,
                      DType kv_type = DType::f32, int32_t n_batch_rows = 0) {
  PlanRequest r;
  r.kv_type = kv_type;
  r.n_batch_rows = n_batch_rows;
  r.n_ctx = n_ctx;
  r.n_new = n_new;
  r.prune = pp;
  r.n_threads = 2;
  r.logits_all = logits_all;
  Plan p;
  const Status st = plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &p);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return p;
}

inline constexpr wt_prune_method kPlanned[] = {WT_PRUNE_FULL, WT_PRUNE_FASTKV, WT_PRUNE_SNAPKV, WT_PRUNE_SLIMINFER};

}  // namespace wt::test
