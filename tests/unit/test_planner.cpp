// The static budget planner (platform/): its arena figure is the context's arena_bytes
// exactly, its KV per layer is what a pruned prefill keeps, and clear errors for malformed
// profiles and descriptions (the fit arithmetic and solve mode: test_planner_solve.cpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backends/weight_types.h"
#include "platform/board.h"
#include "platform/planner.h"
#include "runtime/api/handles.h"
#include "runtime/engine/context.h"
#include "runtime/model/gguf.h"
#include "support/gguf_writer.h"
#include "support/real_model.h"
#include "support/context_measure.h"
#include "support/plan_fixture.h"

using namespace wt;
using namespace wt::test;

TEST_CASE("planner: the plan's arena is the context's arena_bytes, tiny model") {
  const Model& m = *tiny().model;
  const ModelShape shape = model_shape_from_model(m);
  for (wt_prune_method method : kPlanned) {
    for (bool logits_all : {false, true}) {
      const std::string name = wt_prune_method_name(method);
      CAPTURE(name);
      CAPTURE(logits_all);
      ContextOptions co;
      co.n_ctx = 384;
      co.n_threads = 2;
      co.logits_all = logits_all;
      co.prune = prune_params(method, 0.2f);
      co.max_new_tokens = 16;  // the plan's n_new: the KV sized by the method
      std::unique_ptr<Context> ctx;
      REQUIRE(Context::create(m, co, &ctx).is_ok());
      const Plan p = plan_for(shape, 384, 16, co.prune, logits_all);
      CHECK(p.arena.total_bytes == ctx->stats().arena_bytes);
      CHECK(p.arena.kv_bytes == ctx->stats().kv_bytes);
    }
  }
}

// Full KV's passes (wt_context_params.n_batch_rows) planned as the context allocates them:
// the activations for 7 rows, or for the default's (more than n_ctx: n_ctx). A pruned
// context's pass is the whole prompt: x, k and v for n_ctx rows whatever it asks; xn, q and
// attn for its slices, at least twice SnapKV's window of 32 (64); gate and up for 7.
TEST_CASE("planner: the rows of a pass are planned as the context allocates them on the tiny model") {
  const Model& m = *tiny().model;
  const ModelShape shape = model_shape_from_model(m);
  const Hparams& hp = m.hp;
  // f32 rows, each tensor 64-byte aligned: x, k, v for a pass; xn, q, attn for a slice; gate, up
  const auto rows_bytes = [&](uint64_t pass, uint64_t slice, uint64_t ffn) {
    const uint64_t q = static_cast<uint64_t>(hp.n_head * hp.head_dim), kv = static_cast<uint64_t>(hp.n_head_kv * hp.head_dim);
    const auto bytes = [](uint64_t rows, uint64_t width) { return (rows * width * 4 + 63) / 64 * 64; };
    return bytes(pass, static_cast<uint64_t>(hp.n_embd)) + 2 * bytes(pass, kv) + bytes(slice, static_cast<uint64_t>(hp.n_embd)) +
           2 * bytes(slice, q) + 2 * bytes(ffn, static_cast<uint64_t>(hp.n_ff));
  };
  const wt_prune_params snapkv = prune_params(WT_PRUNE_SNAPKV, 0.2f);
  uint64_t activations[2][2] = {};
  const int32_t rows[2] = {7, 0};
  for (int pruned = 0; pruned < 2; ++pruned) {
    for (int i = 0; i < 2; ++i) {
      CAPTURE(pruned);
      CAPTURE(rows[i]);
      ContextOptions co;
      co.n_ctx = 384;
      co.n_threads = 2;
      co.n_batch_rows = rows[i];
      co.prune = pruned ? snapkv : wt_prune_default_params();
      co.max_new_tokens = 16;  // the plan's n_new: the KV sized by the method
      std::unique_ptr<Context> ctx;
      REQUIRE(Context::create(m, co, &ctx).is_ok());
      const Plan p = plan_for(shape, 384, 16, co.prune, false, DType::f32, rows[i]);
      CHECK(p.arena.total_bytes == ctx->stats().arena_bytes);
      activations[pruned][i] = p.arena.activations_bytes;
    }
  }
  CHECK(activations[0][0] == rows_bytes(7, 7, 7));
  CHECK(activations[0][1] == rows_bytes(384, 384, 384));
  CHECK(activations[1][0] == rows_bytes(384, 64, 7));
  CHECK(activations[1][1] == rows_bytes(384, 384, 384));
}

// A KV cache of f16 or q8_0 planned by type: half the f32 bytes, or 34 per 128, as the context
// allocates it. q8_0 needs whole blocks of 32 per head: the 4-layer tiny model's head_dim is
// 16, so q8_0 runs on a variant with head_dim 32 and is refused on the other.
TEST_CASE("planner: f16 and q8_0 KV caches are planned by type as the context allocates them") {
  static const Tiny wide = [] {
    test::TinyModelOptions o;
    o.n_layer = 4;
    o.n_ctx_train = 1024;
    o.n_embd = 128;  // 4 heads of 32
    return load_tiny(o);
  }();
  struct Case {
    const Model* model;
    DType type;
    uint64_t num, den;  // KV bytes against f32's
  };
  for (const Case& c : {Case{tiny().model.get(), DType::f16, 1, 2}, Case{wide.model.get(), DType::q8_0, 34, 128}}) {
    const ModelShape shape = model_shape_from_model(*c.model);
    for (wt_prune_method method : kPlanned) {
      const std::string name = wt_prune_method_name(method);
      CAPTURE(name);
      CAPTURE(dtype_name(c.type));
      ContextOptions co;
      co.n_ctx = 384;
      co.n_threads = 2;
      co.prune = prune_params(method, 0.2f);
      co.max_new_tokens = 16;
      co.kv_type = c.type;
      std::unique_ptr<Context> ctx;
      REQUIRE(Context::create(*c.model, co, &ctx).is_ok());
      const Plan typed = plan_for(shape, 384, 16, co.prune, false, c.type);
      const Plan full = plan_for(shape, 384, 16, co.prune, false, DType::f32);
      CHECK(typed.arena.total_bytes == ctx->stats().arena_bytes);
      CHECK(typed.arena.kv_bytes == ctx->stats().kv_bytes);
      CHECK(typed.kv_bytes * c.den == full.kv_bytes * c.num);
      // 64-byte aligned slices per layer: the arena's KV part is in the same ratio, give or
      // take alignment (two slices per layer).
      const uint64_t slack = 128 * static_cast<uint64_t>(shape.hp.n_layer) * c.den;
      CHECK(typed.arena.kv_bytes * c.den <= full.arena.kv_bytes * c.num + slack);
      CHECK(typed.arena.kv_bytes * c.den + slack >= full.arena.kv_bytes * c.num);
    }
    // With the pager, its pools are planned by type as the context allocates them.
    ContextOptions po;
    po.n_ctx = 384;
    po.n_threads = 2;
    po.kv_device_blocks = 8;
    po.kv_type = c.type;
    std::unique_ptr<Context> paged;
    REQUIRE(Context::create(*c.model, po, &paged).is_ok());
    PlanRequest r;
    r.n_ctx = 384;
    r.n_new = 16;
    r.n_threads = 2;
    r.kv_type = c.type;
    r.kv_device_blocks = 8;
    Plan p;
    REQUIRE(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &p).is_ok());
    CHECK(p.arena.total_bytes == paged->stats().arena_bytes);
    CHECK(p.arena.pager_device_bytes == paged->stats().pager_device_bytes);
    CHECK(p.arena.pager_host_bytes == paged->stats().pager_host_bytes);
    r.kv_type = DType::f32;
    Plan p32;
    REQUIRE(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &p32).is_ok());
    CHECK(p.arena.pager_device_bytes * c.den == p32.arena.pager_device_bytes * c.num);
    CHECK(p.arena.pager_host_bytes * c.den == p32.arena.pager_host_bytes * c.num);
    // Every backend keeps both types (backends/weight_types.cpp kv_types_of), so the planner
    // plans them for each.
    r.kv_type = c.type;
    r.kv_device_blocks = 0;
    for (wt_backend_kind b : {WT_BACKEND_CUDA, WT_BACKEND_VULKAN}) {
      r.backend = b;
      CHECK(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &p).is_ok());
    }
  }
  // q8_0 over head_dim 16: refused by both, naming the head_dim.
  const ModelShape narrow = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_ctx = 256;
  r.n_new = 16;
  r.n_threads = 1;
  r.kv_type = DType::q8_0;
  Plan p;
  const Status planned = plan(synthetic_board(uint64_t{1} << 40, 0), narrow, r, &p);
  CHECK(planned.code() == WT_ERR_UNSUPPORTED);
  CHECK(planned.message().find("head_dim 16") != std::string::npos);
  ContextOptions co;
  co.n_ctx = 256;
  co.kv_type = DType::q8_0;
  std::unique_ptr<Context> ctx;
  const Status created = Context::create(*tiny().model, co, &ctx);
  CHECK(created.code() == WT_ERR_UNSUPPORTED);
  CHECK(created.message().find("head_dim 16") != std::string::npos);
  CHECK(!ctx);
}

TEST_CASE("planner: the plan's arena is the context's arena_bytes, default model") {
  if (!test::have_real_model()) return;
  const wt_model* wm = test::real_model().model;
  const ModelShape shape = model_shape_from_model(*wm->model);
  for (wt_prune_method method : kPlanned) {
    const std::string name = wt_prune_method_name(method);
    CAPTURE(name);
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 2048;
    cp.n_threads = 2;
    cp.prune = prune_params(method, 0.1f);
    cp.max_new_tokens = 128;
    wt_context* ctx = nullptr;
    REQUIRE(wt_context_create(wm, &cp, &ctx) == WT_OK);
    const Plan p = plan_for(shape, 2048, 128, cp.prune, false, kv_dtype(cp.kv_type));  // f16, the default
    CHECK(p.arena.total_bytes == ctx->ctx->stats().arena_bytes);
    CHECK(p.arena.kv_bytes == ctx->ctx->stats().kv_bytes);
    wt_context_free(ctx);
  }
}

TEST_CASE("planner: with the KV pager the plan's arena and pools are the context's, unified vs discrete") {
  const Model& m = *tiny().model;
  const ModelShape shape = model_shape_from_model(m);
  ContextOptions co;
  co.n_ctx = 384;
  co.n_threads = 2;
  co.kv_device_blocks = 8;  // 384 / 64 = 6 blocks a layer; 4 layers hold 24
  co.kv_pager_copy = true;  // the CPU is unified: without it the pager is in place (below)
  std::unique_ptr<Context> ctx;
  REQUIRE(Context::create(m, co, &ctx).is_ok());
  PlanRequest r;
  r.n_ctx = 384;
  r.n_new = 16;
  r.n_threads = 2;
  r.kv_device_blocks = 8;
  r.kv_pager_copy = true;
  Plan unified, discrete;
  REQUIRE(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &unified).is_ok());
  BoardProfile card = synthetic_board(uint64_t{1} << 40, 0);
  card.unified = false;
  REQUIRE(plan(card, shape, r, &discrete).is_ok());
  const ContextStats& st = ctx->stats();
  CHECK(unified.arena.total_bytes == st.arena_bytes);
  CHECK(unified.arena.kv_bytes == st.kv_bytes);  // one layer of staging
  CHECK(unified.arena.pager_device_bytes == st.pager_device_bytes);
  CHECK(unified.arena.pager_host_bytes == st.pager_host_bytes);
  const uint64_t block_bytes = 64 * shape.hp.n_head_kv * shape.hp.head_dim * 2 * sizeof(float);
  CHECK(st.pager_device_bytes == 8 * block_bytes);
  CHECK(st.pager_host_bytes == 24 * block_bytes);
  // Unified: the host pool and the arena's host part are the same DRAM and count; discrete:
  // they are host memory, and the components still add up to the total.
  CHECK(unified.arena.host_bytes > 0);
  CHECK(unified.arena.host_bytes >= unified.arena.logits_bytes);
  CHECK(unified.total_bytes - discrete.total_bytes == st.pager_host_bytes + unified.arena.host_bytes);
  for (const Plan* pl : {&unified, &discrete}) {
    uint64_t sum = 0;
    for (const PlanComponent& c : pl->components) sum += c.bytes;
    CHECK(sum == pl->total_bytes);
  }
  CHECK(unified.total_bytes == unified.weights_bytes + st.arena_bytes + st.pager_device_bytes + st.pager_host_bytes +
                                   unified.overhead_bytes);
  bool said = false;
  for (const std::string& n : unified.notes) said = said || n.find("not DRAM use") != std::string::npos;
  CHECK(said);

  // In place (the default on unified memory): one pool of every block and no host pool, in
  // the context and in the plan of a unified board; a discrete board's plan keeps copying.
  co.kv_pager_copy = false;
  r.kv_pager_copy = false;
  std::unique_ptr<Context> in_place;
  REQUIRE(Context::create(m, co, &in_place).is_ok());
  Plan unified_in_place, discrete_default;
  REQUIRE(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &unified_in_place).is_ok());
  REQUIRE(plan(card, shape, r, &discrete_default).is_ok());
  const ContextStats& ip = in_place->stats();
  CHECK(ip.pager_device_bytes == 24 * block_bytes);
  CHECK(ip.pager_host_bytes == 0);
  CHECK(ip.arena_bytes == st.arena_bytes);  // the same staging layer
  CHECK(unified_in_place.arena.pager_device_bytes == ip.pager_device_bytes);
  CHECK(unified_in_place.arena.pager_host_bytes == 0);
  CHECK(unified_in_place.total_bytes == unified_in_place.weights_bytes + ip.arena_bytes + ip.pager_device_bytes +
                                            unified_in_place.overhead_bytes);
  CHECK(unified.total_bytes - unified_in_place.total_bytes == 8 * block_bytes);  // the copying pool's extra
  CHECK(discrete_default.total_bytes == discrete.total_bytes);
  uint64_t sum = 0;
  for (const PlanComponent& c : unified_in_place.components) sum += c.bytes;
  CHECK(sum == unified_in_place.total_bytes);
  said = false;
  for (const std::string& n : unified_in_place.notes) said = said || n.find("in place") != std::string::npos;
  CHECK(said);

  // A pool smaller than one layer is refused, as context creation refuses it.
  r.kv_device_blocks = 5;
  CHECK(plan(card, shape, r, &discrete).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &unified_in_place).code() == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("planner: KV rows per layer are what a pruned prefill and its decodes keep") {
  const Model& m = *tiny().model;
  const ModelShape shape = model_shape_from_model(m);
  const int32_t n_ctx = 384, n_new = 6, n_prompt = n_ctx - n_new;
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
  for (int32_t i = 0; i < n_prompt; ++i) prompt[i] = (i * 37 + 11) % 256;
  for (wt_prune_method method : kPlanned) {
    const std::string name = wt_prune_method_name(method);
    CAPTURE(name);
    // SlimInfer's budget counts whole blocks; the prompt's last block may be partial, so it
    // keeps up to one block less than planned (kv_budget is an upper bound).
    const uint64_t slack_rows = method == WT_PRUNE_SLIMINFER ? 63 : 0;
    ContextOptions co;
    co.n_ctx = n_ctx;
    co.n_threads = 2;
    co.prune = prune_params(method, 0.25f);
    co.max_new_tokens = n_new;
    std::unique_ptr<Context> ctx;
    REQUIRE(Context::create(m, co, &ctx).is_ok());
    REQUIRE(ctx->prefill(prompt.data(), n_prompt).is_ok());
    const Plan p = plan_for(shape, n_ctx, n_new, co.prune);
    const uint64_t row_bytes = 2 * sizeof(float) * static_cast<uint64_t>(m.hp.n_head_kv * m.hp.head_dim);
    for (int32_t l = 0; l < m.hp.n_layer; ++l) {
      CAPTURE(l);
      // The prefill's own KV bytes: the plan's prompt budget.
      const uint64_t prompt_bytes = method == WT_PRUNE_FULL ? row_bytes * static_cast<uint64_t>(ctx->kv_len(l))
                                                            : ctx->prune_stats().kv_bytes[l];
      const uint64_t planned = p.kv_layer_bytes[l] - row_bytes * n_new;
      CHECK(prompt_bytes <= planned);
      CHECK(prompt_bytes + slack_rows * row_bytes >= planned);
    }
    for (int32_t t = 0; t < n_new; ++t) REQUIRE(ctx->decode(t + 40).is_ok());
    uint64_t total = 0;
    for (int32_t l = 0; l < m.hp.n_layer; ++l) {
      CAPTURE(l);
      const uint64_t kept = row_bytes * static_cast<uint64_t>(ctx->kv_len(l));
      if (slack_rows == 0) CHECK(ctx->kv_len(l) == p.kv_rows[l]);
      CHECK(kept <= p.kv_layer_bytes[l]);
      CHECK(kept + slack_rows * row_bytes >= p.kv_layer_bytes[l]);
      total += p.kv_layer_bytes[l];
    }
    CHECK(total == p.kv_bytes);
    // The context's arena holds exactly the planned rows (64-byte aligned per layer); without
    // max_new_tokens it would reserve n_ctx rows in every layer.
    CHECK(p.kv_bytes <= p.arena.kv_bytes);
    CHECK(p.arena.kv_bytes == ctx->stats().kv_bytes);
    if (method != WT_PRUNE_FULL) CHECK(p.allocated_total_bytes > p.total_bytes);
    else CHECK(p.allocated_total_bytes == p.total_bytes);
  }
}

// GemFilter's first pass keeps no KV: it restarts at its filter layer's decision, and the
// re-prefill writes the top tokens into every layer. So every layer is planned for the top
// tokens (the layers before the filter layer were planned for every prompt row, which the
// first pass wrote and the re-prefill replaced), and the prefill and its decodes run in
// exactly that: a first pass that still wrote its rows would not fit.
TEST_CASE("planner: GemFilter plans the top tokens in every layer") {
  const Model& m = *tiny().model;
  const ModelShape shape = model_shape_from_model(m);
  const int32_t n_ctx = 384, n_new = 6, n_prompt = n_ctx - n_new;
  std::vector<int32_t> prompt(static_cast<size_t>(n_prompt));
  for (int32_t i = 0; i < n_prompt; ++i) prompt[i] = (i * 37 + 11) % 256;
  ContextOptions co;
  co.n_ctx = n_ctx;
  co.n_threads = 2;
  co.prune = prune_params(WT_PRUNE_GEMFILTER, 0.25f);
  co.max_new_tokens = n_new;
  std::unique_ptr<Context> ctx;
  REQUIRE(Context::create(m, co, &ctx).is_ok());
  const int32_t filter = ctx->prune_params().layer;
  REQUIRE(filter > 0);
  REQUIRE(filter < m.hp.n_layer);
  const Plan p = plan_for(shape, n_ctx, n_new, co.prune);
  CHECK(p.arena.kv_bytes == ctx->stats().kv_bytes);
  REQUIRE(ctx->prefill(prompt.data(), n_prompt).is_ok());
  const int32_t top = ctx->kv_len(0);  // the re-prefill's tokens, kept in every layer
  CHECK(top < n_prompt);
  CHECK(ctx->prune_stats().report.selection_layer == filter);
  for (int32_t l = 0; l < m.hp.n_layer; ++l) {
    CAPTURE(l);
    CHECK(ctx->kv_len(l) == top);
    CHECK(p.kv_rows[l] == top + n_new);
  }
  for (int32_t t = 0; t < n_new; ++t) REQUIRE(ctx->decode(t + 40).is_ok());
  for (int32_t l = 0; l < m.hp.n_layer; ++l) CHECK(ctx->kv_len(l) == p.kv_rows[l]);
}

TEST_CASE("planner: a backend that cannot read a weight's type is refused, naming the tensor") {
  ModelShape shape = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_threads = 2;
  r.n_ctx = 256;
  r.n_new = 16;
  const BoardProfile roomy = synthetic_board(uint64_t{1} << 36, 0);
  Plan p;
  REQUIRE(plan(roomy, shape, r, &p).is_ok());  // the tiny model's types: every backend reads them
  // The types of the Qwen2.5 Q4_K_M files (most matrices Q5_0 or Q4_K, half the ffn_down
  // matrices Q6_K, the output Q8_0 or Q6_K) and the others Whittle loads: every backend
  // reads them all.
  shape.layers[0].wq.type = DType::q5_0;
  shape.layers[0].wk.type = DType::q4_k;
  shape.layers[0].wv.type = DType::bf16;
  shape.layers[0].wo.type = DType::q5_k;
  shape.layers[1].w_up.type = DType::q5_1;
  shape.layers[1].w_down.type = DType::q6_k;
  shape.tok_embd.type = DType::q6_k;
  for (wt_backend_kind b : {WT_BACKEND_CPU, WT_BACKEND_VULKAN, WT_BACKEND_CUDA}) {
    r.backend = b;
    const Status st = plan(roomy, shape, r, &p);
    CHECK_MESSAGE(st.is_ok(), st.message());
  }
  // Every DType is now read by every backend, so the refusal is checked with a type none
  // reads: ggml's Q2_K (id 10), which the GGUF reader sizes but the model loader refuses
  // before any plan; the planner's own check must still name the tensor and the types read.
  const DType unread = static_cast<DType>(10);
  REQUIRE(dtype_traits(10) == nullptr);
  shape.layers[1].w_down.type = unread;
  int32_t max_ctx = 0;
  for (wt_backend_kind b : {WT_BACKEND_CPU, WT_BACKEND_VULKAN, WT_BACKEND_CUDA}) {
    r.backend = b;
    REQUIRE((weight_types_of(b) & dtype_bit(unread)) == 0);
    const Status st = plan(roomy, shape, r, &p);
    CHECK(st.code() == WT_ERR_UNSUPPORTED);
    CHECK(st.message().find("weight 'blk.1.ffn_down' is ") != std::string::npos);
    CHECK(st.message().find("(it reads " + weight_type_names(weight_types_of(b)) + ")") != std::string::npos);
    CHECK(solve_max_ctx(roomy, shape, r, &max_ctx).code() == WT_ERR_UNSUPPORTED);
  }
  // The list the message names: the Vulkan backend's, K-quants and BF16 included.
  CHECK(weight_type_names(weight_types_of(WT_BACKEND_VULKAN)) ==
        "F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, BF16");
}

TEST_CASE("planner: built-in boards and model descriptions parse") {
  const std::vector<BoardProfile>& boards = builtin_boards();
  CHECK(boards.size() == 9);
  BoardProfile b;
  REQUIRE(find_board("orin-nano-8gb", &b).is_ok());
  CHECK(b.unified);
  CHECK(b.total_bytes == uint64_t{8} << 30);
  CHECK(b.usable_bytes() < b.total_bytes);
  CHECK_FALSE(b.reserve_note.empty());
  REQUIRE(find_board("rtx-4090-24gb", &b).is_ok());
  CHECK_FALSE(b.unified);
  const Status unknown = find_board("orin-nano-2gb", &b);
  CHECK(unknown.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(unknown.message().find("agx-orin-64gb") != std::string::npos);
  CHECK(detect_host_board(&b).is_ok());
  CHECK(b.usable_bytes() > 0);

  for (const char* name :
       {"llama-3.1-8b", "qwen2.5-7b", "qwen3-0.6b", "qwen3-4b", "smollm2-135m", "smollm3-3b", "tinyllama-1.1b",
        "gemma3-1b"}) {
    CAPTURE(name);
    ModelShape s;
    const Status st = load_model_description(std::string(WT_SOURCE_DIR) + "/platform/models/" + name + ".json", &s);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    CHECK(s.described);
    CHECK(s.layers.size() == static_cast<size_t>(s.hp.n_layer));
    CHECK(s.weight_bytes > 0);
  }
  // Llama 3.1 8B: 8.03 B parameters.
  ModelShape llama;
  REQUIRE(load_model_description(std::string(WT_SOURCE_DIR) + "/platform/models/llama-3.1-8b.json", &llama).is_ok());
  CHECK(llama.n_params > 8000000000ull);
  CHECK(llama.n_params < 8060000000ull);
  // Qwen3: 0.60 B and 4.02 B parameters (the model cards' 0.6B and 4.0B, tied output);
  // SmolLM3: 3.08 B; TinyLlama: 1,100,048,384 (HF's count); Gemma 3 1B: 999,885,952.
  for (const auto& [name, lo, hi] : {std::tuple{"qwen3-0.6b", 595000000ull, 597000000ull},
                                     std::tuple{"qwen3-4b", 4010000000ull, 4030000000ull},
                                     std::tuple{"smollm3-3b", 3070000000ull, 3090000000ull},
                                     std::tuple{"tinyllama-1.1b", 1100048383ull, 1100048385ull},
                                     std::tuple{"gemma3-1b", 999885951ull, 999885953ull}}) {
    ModelShape q3;
    REQUIRE(load_model_description(std::string(WT_SOURCE_DIR) + "/platform/models/" + name + ".json", &q3).is_ok());
    CAPTURE(name);
    CHECK(q3.n_params > lo);
    CHECK(q3.n_params < hi);
  }
  if (test::have_real_model()) {
    // The description of the default model against its GGUF: the same parameters.
    ModelShape smol;
    REQUIRE(load_model_description(std::string(WT_SOURCE_DIR) + "/platform/models/smollm2-135m.json", &smol).is_ok());
    CHECK(smol.n_params == test::real_model().model->model->n_params);
  }
}

TEST_CASE("planner: malformed profiles and descriptions give a clear status") {
  std::vector<BoardProfile> boards;
  auto board_error = [&](const std::string& text, const std::string& needle) {
    CAPTURE(text);
    const Status st = parse_board_profiles(text, "test.json", &boards);
    CHECK(st.code() == WT_ERR_FORMAT);
    CHECK_MESSAGE(st.message().find(needle) != std::string::npos, st.message());
  };
  board_error("{\"boards\": [ {\"name\": \"x\", ", "test.json:1:");
  board_error("{\"boards\": []}", "non-empty");
  board_error("{\"name\": \"x\", \"memory\": \"unified\", \"reserve_bytes\": 0}", "'total_bytes'");
  board_error("{\"name\": \"x\", \"memory\": \"shared\", \"total_bytes\": 10, \"reserve_bytes\": 0}", "'memory'");
  board_error("{\"name\": \"x\", \"memory\": \"unified\", \"total_bytes\": 10, \"reserve_bytes\": 10}", "below");
  board_error("{\"name\": \"x\", \"memory\": \"unified\", \"total_bytes\": -1, \"reserve_bytes\": 0}", "whole number");
  // A number past a double's range: a status naming the file, not an uncaught exception.
  board_error("{\"name\": \"x\", \"memory\": \"unified\", \"total_bytes\": 1e999, \"reserve_bytes\": 0}",
              "test.json: [json.exception.out_of_range.406] number overflow");
  // Two entries of one name: which one --board picks would depend on the order.
  board_error("{\"boards\": [{\"name\": \"x\", \"memory\": \"unified\", \"total_bytes\": 10, \"reserve_bytes\": 0}, "
              "{\"name\": \"x\", \"memory\": \"unified\", \"total_bytes\": 20, \"reserve_bytes\": 0}]}",
              "two boards are named 'x'");
  REQUIRE(parse_board_profiles("{\"name\": \"mine\", \"memory\": \"discrete\", \"total_bytes\": 1000, "
                               "\"reserve_bytes\": 10}", "mine.json", &boards).is_ok());
  REQUIRE(boards.size() == 1);
  CHECK(boards[0].usable_bytes() == 990);
  CHECK(load_board_profiles("/nonexistent/boards.json", &boards).code() == WT_ERR_IO);

  ModelShape s;
  auto model_error = [&](const std::string& text, const std::string& needle) {
    CAPTURE(text);
    const Status st = parse_model_description(text, "m.json", &s);
    CHECK(st.code() == WT_ERR_FORMAT);
    CHECK_MESSAGE(st.message().find(needle) != std::string::npos, st.message());
  };
  const std::string base = "\"n_layer\": 2, \"n_embd\": 64, \"n_ff\": 128, \"n_head\": 4, \"n_vocab\": 100";
  model_error("{" + base + ", \"n_head_kv\": 2}", "'weight_type'");
  model_error("{" + base + ", \"n_head_kv\": 2, \"weight_type\": \"Q3_X\"}", "unknown type 'Q3_X'");
  model_error("{" + base + ", \"n_head_kv\": 3, \"weight_type\": \"F16\"}", "multiple");
  model_error("{" + base + ", \"weight_type\": \"F16\"}", "missing 'n_head_kv'");
  model_error("{\"n_layer\": 2, \"n_embd\": 64, \"n_ff\": 100, \"n_head\": 4, \"n_vocab\": 100, \"n_head_kv\": 2, "
              "\"weight_type\": \"Q4_1\"}", "blocks");
  model_error("{" + base + ", \"n_head_kv\": 2.5, \"weight_type\": \"F16\"}", "'n_head_kv'");
  model_error("{" + base + ", \"n_head_kv\": 2, \"weight_type\": \"F16\", \"arch\": \"gpt2\"}", "'arch'");
  model_error("[1, 2", "m.json:1:");
  // Without head_dim the heads split n_embd: more heads than dimensions (head_dim 0) or a
  // remainder is refused, naming head_dim; given head_dim, n_head * head_dim may exceed n_embd.
  const std::string heads = "\"n_layer\": 2, \"n_ff\": 128, \"n_vocab\": 100, \"weight_type\": \"F16\"";
  model_error("{" + heads + ", \"n_embd\": 16, \"n_head\": 32, \"n_head_kv\": 32}", "heads of 0 dimensions; give 'head_dim'");
  model_error("{" + heads + ", \"n_embd\": 64, \"n_head\": 6, \"n_head_kv\": 6}", "do not split evenly");
  REQUIRE(parse_model_description("{" + heads + ", \"n_embd\": 16, \"n_head\": 32, \"n_head_kv\": 32, \"head_dim\": 8}",
                                  "m.json", &s).is_ok());
  CHECK(s.hp.head_dim == 8);
  REQUIRE(parse_model_description("{" + base + ", \"n_head_kv\": 2, \"weight_type\": \"F16\"}", "m.json", &s).is_ok());
  // F16 matrices (2 bytes) and f32 norms: exact bytes.
  const uint64_t per_layer = 2 * (64 * 64 * 2 + 64 * 32 * 2 + 3 * 64 * 128) + 4 * (64 + 64);
  CHECK(s.weight_bytes == 2 * per_layer + 2 * 64 * 100 + 4 * 64 + 2 * 64 * 100);
  // qwen3 adds its per-head query and key norms (head_dim f32 each) to every layer.
  ModelShape q3;
  REQUIRE(parse_model_description("{" + base + ", \"n_head_kv\": 2, \"weight_type\": \"F16\", \"arch\": \"qwen3\"}",
                                  "m.json", &q3).is_ok());
  CHECK(q3.hp.arch == Arch::qwen3);
  CHECK(q3.hp.rope_type == RopeType::neox);
  CHECK(q3.weight_bytes == s.weight_bytes + 2 * 2 * 4 * 16);

  // Bad requests: the planner names the field.
  PlanRequest r;
  r.n_threads = 1;
  r.n_ctx = 64;
  r.n_new = 64;
  Plan p;
  const Status st = plan(synthetic_board(1 << 30, 0), s, r, &p);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("n_new") != std::string::npos);
  r.n_new = 8;
  r.prune = prune_params(WT_PRUNE_FASTKV, 1.5f);
  CHECK(plan(synthetic_board(1 << 30, 0), s, r, &p).code() == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("planner: measured memory of a context is within 10% of its plan and below it" * doctest::test_suite("model")) {
#if defined(__SANITIZE_ADDRESS__)
  MESSAGE("SKIPPED: under AddressSanitizer the resident set holds shadow memory and quarantine");
  return;
#endif
  if (!test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const wt_model* wm = test::real_model().model;
  const ModelShape shape = model_shape_from_model(*wm->model);
  // WT_PLAN_MEASURE_CTX=4096 or 8192 repeats it at those sizes (docs/results/plans.md).
  const char* env = std::getenv("WT_PLAN_MEASURE_CTX");
  const int32_t n_ctx = env ? std::max(256, std::atoi(env)) : 1024;
  // Real text, repeated as needed to fill the context.
  const std::vector<wt_token>& src = test::real_model().text;
  REQUIRE(!src.empty());
  std::vector<wt_token> text(static_cast<size_t>(n_ctx));
  for (size_t i = 0; i < text.size(); ++i) text[i] = src[i % src.size()];
  // Touch the weights once, so the measured growth is the context's own memory.
  {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = 64;
    cp.n_threads = 2;
    wt_context* warm = nullptr;
    REQUIRE(wt_context_create(wm, &cp, &warm) == WT_OK);
    REQUIRE(wt_context_prefill(warm, text.data(), 32) == WT_OK);
    wt_context_free(warm);
  }
  for (const test::MeasureCase c : test::kMeasureCases) {
    const std::string name = test::case_name(c);
    CAPTURE(name);
    const wt_context_params cp = test::measure_params(c, n_ctx, shape.hp.n_layer);
    test::ContextMeasure r;
    std::string why;
    REQUIRE_MESSAGE(test::measure_context(wm, cp, text, &r, &why), why);
    MESSAGE(name << " at n_ctx " << n_ctx << ": allocated " << r.plan.context_bytes / 1048576.0
                 << " MiB, measured peak RSS growth " << r.peak_growth / 1048576.0 << " MiB ("
                 << 100.0 * static_cast<double>(r.peak_growth) / static_cast<double>(r.plan.context_bytes) << "%)");
    CHECK(r.plan.context_bytes == r.stats.arena_bytes + r.stats.pager_device_bytes + r.stats.pager_host_bytes);
    CHECK(r.plan.driver_bytes == 0);  // no driver queues work for the CPU
    // Never more than the context allocated, and within 10% of it; the platform planner's
    // arena for the same request (n_new 16) is that allocation.
    CHECK(r.peak_growth <= r.plan.context_bytes);
    CHECK(static_cast<double>(r.peak_growth) >= 0.9 * static_cast<double>(r.plan.context_bytes));
    const Plan p = plan_for(shape, n_ctx, 16, cp.prune, false, kv_dtype(c.kv_type));
    if (c.pager == test::Paging::none) CHECK(p.arena.total_bytes == r.plan.arena_bytes);
  }
}

TEST_CASE("planner: a context sized for max_new_tokens refuses a layer that would outgrow it and changes nothing" *
          doctest::test_suite("model")) {
  if (!test::have_real_model()) {
    MESSAGE("SKIPPED: the default model is not installed");
    return;
  }
  const wt_model* wm = test::real_model().model;
  const std::vector<wt_token> text = test::real_model().prompt(600);
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 512;
  cp.n_threads = 2;
  cp.prune = prune_params(WT_PRUNE_SNAPKV, 0.25f);
  cp.max_new_tokens = 8;
  wt_context* ctx = nullptr;
  REQUIRE(wt_context_create(wm, &cp, &ctx) == WT_OK);
  // Layers are sized for SnapKV's budget at a 504-token prompt (126 rows) + 8 = 134 rows.
  // After a 400-token prompt (100 rows kept) 34 more rows fit, far below n_ctx.
  REQUIRE(wt_context_prefill(ctx, text.data(), 400) == WT_OK);
  int steps = 0;
  wt_status st = WT_OK;
  float first = 0;
  while (steps < 100) {
    const float* l = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &l) == WT_OK);
    first = l[0];
    st = wt_context_decode(ctx, text[static_cast<size_t>(steps)]);
    if (st != WT_OK) break;
    ++steps;
  }
  CHECK(steps == 34);
  CHECK(st == WT_ERR_CONTEXT_FULL);
  const std::string msg = wt_last_error();
  CHECK(msg.find("max_new_tokens") != std::string::npos);
  CHECK(msg.find("sized for") != std::string::npos);
  const float* after = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &after) == WT_OK);
  CHECK(after[0] == first);  // nothing ran
  wt_context_free(ctx);
  cp.max_new_tokens = -1;
  CHECK(wt_context_create(wm, &cp, &ctx) == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("planner: on a discrete board the scores the policies read are pinned host memory, not device memory") {
  const ModelShape shape = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_ctx = 384;
  r.n_new = 16;
  r.n_threads = 2;
  r.prune = prune_params(WT_PRUNE_FASTKV, 0.25f);
  BoardProfile card = synthetic_board(uint64_t{1} << 40, 0);
  card.unified = false;
  Plan p;
  REQUIRE(plan(card, shape, r, &p).is_ok());
  // Scores and pooled scores in the host part; the anchors (kernels only) in the device part.
  CHECK(p.arena.prune_host_bytes >= 2 * sizeof(float) * 384 * static_cast<uint64_t>(shape.hp.n_head));
  CHECK(p.arena.prune_host_bytes < p.arena.prune_bytes);
  CHECK(p.arena.host_bytes >= p.arena.logits_bytes + p.arena.prune_host_bytes);
  uint64_t sum = 0;
  bool found = false;
  for (const PlanComponent& c : p.components) {
    sum += c.bytes;
    if (c.name != std::string("pruning state")) continue;
    found = true;
    CHECK(c.bytes == p.arena.prune_bytes - p.arena.prune_host_bytes);
    CHECK(c.note.find("pinned host memory") != std::string::npos);
  }
  CHECK(found);
  CHECK(sum == p.total_bytes);
}

// Where a device backend's arena device part has no host address (a discrete board; CUDA on
// any board, its device part being cudaMalloc on integrated GPUs too: backends/cuda/memory.h),
// the host part carries the transfer staging (context_layout.h), device memory does not grow,
// and the "index + scratch" row says the staging is there. Vulkan on a unified board maps it.
TEST_CASE("planner: a device part without a host address plans the transfer staging in pinned host memory") {
  const ModelShape shape = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_ctx = 384;
  r.n_new = 16;
  r.kv_type = DType::f16;
  const BoardProfile board = synthetic_board(uint64_t{1} << 40, 0);
  BoardProfile card = board;
  card.unified = false;
  Plan vk_unified, vk_discrete, cuda_unified, cuda_discrete, cpu_discrete;
  r.backend = WT_BACKEND_VULKAN;
  REQUIRE(plan(board, shape, r, &vk_unified).is_ok());
  REQUIRE(plan(card, shape, r, &vk_discrete).is_ok());
  r.backend = WT_BACKEND_CUDA;
  REQUIRE(plan(board, shape, r, &cuda_unified).is_ok());
  REQUIRE(plan(card, shape, r, &cuda_discrete).is_ok());
  r.backend = WT_BACKEND_CPU;
  REQUIRE(plan(card, shape, r, &cpu_discrete).is_ok());
  // One layer's K at n_ctx rows in an f16 cache, as a 64-byte slice.
  const uint64_t layer = 2ull * shape.hp.head_dim * shape.hp.n_head_kv * 384;
  const uint64_t staging = (layer + 63) / 64 * 64;
  for (const Plan* p : {&vk_discrete, &cuda_unified, &cuda_discrete}) {
    CHECK(p->arena.host_bytes - vk_unified.arena.host_bytes == staging);
    CHECK(p->arena.total_bytes - vk_unified.arena.total_bytes == staging);
    bool said = false;
    for (const PlanComponent& c : p->components)
      if (c.name == "index + scratch") said = c.note.find("transfer staging") != std::string::npos;
    CHECK(said);
  }
  CHECK(cpu_discrete.arena.host_bytes == vk_unified.arena.host_bytes);  // the CPU's is host memory
  // A unified board counts the staging as DRAM, and for CUDA cuBLAS's code and data (host
  // memory there); a discrete one counts neither (host memory, not the card's).
  CHECK(vk_unified.overhead_bytes == kRuntimeOverheadBytes + kDeviceRuntimeOverheadBytes);
  CHECK(cuda_unified.overhead_bytes == kRuntimeOverheadBytes + kDeviceRuntimeOverheadBytes + kCudaLibraryBytes);
  CHECK(cuda_discrete.overhead_bytes == vk_discrete.overhead_bytes);
  CHECK(cuda_unified.total_bytes - vk_unified.total_bytes == staging + kCudaLibraryBytes);
  CHECK(cuda_discrete.total_bytes == vk_discrete.total_bytes);
}
