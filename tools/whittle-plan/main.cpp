// whittle-plan: will this model, context and method fit this board? Prints every component
// of the static budget plan (platform/planner.h), the verdict, and solve-mode suggestions.
//
// Unlike the other tools this one reads internal headers (platform/, runtime/model/): the
// planner has no C API yet. That API comes with enforcement in wt_context_create (issue 8).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "platform/board.h"
#include "platform/planner.h"
#include "runtime/engine/context_layout.h"
#include "runtime/model/model.h"
#include "runtime/model/rope_scaling.h"
#include "args.h"
#include "tools/common/json.h"
#include "tools/common/prune_methods.h"
#include "whittle.h"

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

double to_mib(uint64_t b) { return static_cast<double>(b) / (1024.0 * 1024.0); }

int fail(const wt::Status& st) {
  std::fprintf(stderr, "error: %s: %s\n", wt_status_string(st.code()), st.message().c_str());
  return 2;
}

// v rounded to `digits` significant digits, as the text shows it (a float keep ratio of 0.1
// would otherwise be written 0.10000000149011612).
double rounded(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return std::strtod(buf, nullptr);
}

// The plan as one JSON document (tools/common/json.h, the writer whittle-bench uses: names
// from a GGUF can hold any bytes, and the file is valid UTF-8 whatever they are).
wt_tools::Json plan_json(const wt::Plan& p, int32_t max_ctx, float max_keep, bool have_keep) {
  using wt_tools::Json;
  Json j = Json::object();
  j.set("board", p.board.name);
  j.set("usable_bytes", p.usable_bytes);
  j.set("model", p.model_name);
  j.set("n_ctx", p.request.n_ctx);
  j.set("n_new", p.request.n_new);
  j.set("method", wt_prune_method_name(p.prune.method));
  j.set("keep", rounded(p.prune.keep, 4));
  Json components = Json::array();
  for (const wt::PlanComponent& c : p.components) {
    Json cj = Json::object();
    cj.set("name", c.name);
    cj.set("bytes", c.bytes);
    cj.set("note", c.note);
    components.push(std::move(cj));
  }
  j.set("components", std::move(components));
  j.set("kv_rows", Json::array_of(p.kv_rows));
  j.set("total_bytes", p.total_bytes);
  j.set("fits", p.fits);
  j.set("spare_bytes", static_cast<int64_t>(p.spare_bytes));
  j.set("arena_bytes", p.arena.total_bytes);
  j.set("batch_rows", p.batch_rows);
  j.set("allocated_total_bytes", p.allocated_total_bytes);
  j.set("allocated_fits", p.allocated_fits);
  Json solve = Json::object();
  solve.set("max_ctx", max_ctx);
  if (have_keep) solve.set("max_keep", rounded(max_keep, 3));
  j.set("solve", std::move(solve));
  j.set("notes", Json::array_of(p.notes));
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  wt_plan::Options o;
  bool help = false;
  if (!wt_plan::parse_args(argc, argv, &o, &help)) {
    wt_plan::usage(stderr, argv[0]);
    return 2;
  }
  if (help) {
    wt_plan::usage(stdout, argv[0]);
    return 0;
  }
  std::vector<wt::BoardProfile> file_boards;
  if (!o.board_file.empty()) {
    const wt::Status st = wt::load_board_profiles(o.board_file, &file_boards);
    if (!st.is_ok()) return fail(st);
  }
  if (o.list) {
    for (const std::vector<wt::BoardProfile>* list : {&wt::builtin_boards(), &std::as_const(file_boards)}) {
      for (const wt::BoardProfile& b : *list)
        std::printf("%-16s %-8s total %9.0f MiB  reserve %6.0f MiB  %7.1f GB/s\n", b.name.c_str(),
                    b.unified ? "unified" : "discrete", to_mib(b.total_bytes), to_mib(b.reserve_bytes), b.bandwidth_gbps);
    }
    return 0;
  }

  wt::BoardProfile board;
  bool found = false;
  for (const wt::BoardProfile& b : file_boards) {
    if (b.name == o.board) {
      board = b;
      found = true;
    }
  }
  wt::BoardProfile builtin;
  if (found && wt::find_board(o.board, &builtin).is_ok())
    std::fprintf(stderr, "note: board '%s' from %s replaces the built-in profile of that name\n", o.board.c_str(),
                 o.board_file.c_str());
  if (!found) {
    const wt::Status st = o.board == "detect" ? wt::detect_host_board(&board) : wt::find_board(o.board, &board);
    if (!st.is_ok()) return fail(st);
  }

  // --rope-scaling: the loader's override for a file; a description's hparams take it the
  // same way (YaRN: a longer training context to plan and solve for).
  wt::LoadOptions lo;
  if (const wt::Status st = wt::rope_override_from(o.load.rope_scaling, o.load.rope_scaling_factor,
                                                   o.load.rope_orig_ctx, &lo.rope);
      !st.is_ok())
    return fail(st);
  wt::ModelShape shape;
  std::unique_ptr<wt::Model> model;
  if (ends_with(o.model, ".json")) {
    wt::Status st = wt::load_model_description(o.model, &shape);
    if (st.is_ok()) st = wt::apply_rope_override(lo.rope, &shape.hp);
    if (st.is_ok()) st = wt::check_rope_scaling(&shape.hp);
    if (!st.is_ok()) return fail(st);
  } else {
    const wt::Status st = wt::load_model(o.model, lo, &model);
    if (!st.is_ok()) return fail(st);
    shape = wt::model_shape_from_model(*model);
  }

  // Past the training context the model was never trained: say so, plan it only on request.
  const int32_t train = shape.hp.n_ctx_train;
  if (train > 0 && o.n_ctx > train && !o.beyond_train_ctx) {
    std::fprintf(stderr,
                 "error: --ctx %d is beyond the model's training context (%d tokens); the model was never "
                 "trained on positions past it. Ask for --ctx %d or less, or add --beyond-train-ctx to plan it "
                 "anyway\n",
                 o.n_ctx, train, train);
    return 2;
  }

  wt::PlanRequest req;
  req.n_ctx = o.n_ctx;
  req.beyond_train_ctx = o.beyond_train_ctx;
  req.n_new = o.n_new;
  req.n_threads = o.n_threads;
  req.backend = o.backend;
  req.f32_activations = o.backend != WT_BACKEND_CPU;
  req.logits_all = o.logits_all;
  req.kv_device_blocks = o.kv_device_blocks;
  req.kv_block_tokens = o.kv_block_tokens;
  req.kv_pager_copy = o.kv_pager_copy;
  req.kv_type = wt::kv_dtype(o.kv_type);
  req.n_batch_rows = o.n_batch_rows;
  if (wt_prune_method_from_name(o.method.c_str(), &req.prune.method) != WT_OK) {
    std::fprintf(stderr, "error: unknown --method '%s'\n", o.method.c_str());
    wt_plan::usage(stderr, argv[0]);
    return 2;
  }
  if (o.keep > 0.0f) req.prune.keep = o.keep;
  for (const auto& [k, v] : o.prune_params) {
    if (wt_prune_set_param(&req.prune, k.c_str(), v.c_str()) != WT_OK) {
      std::fprintf(stderr, "error: --prune-param %s=%s: %s\n", k.c_str(), v.c_str(), wt_last_error());
      return 2;
    }
  }

  wt::Plan p;
  wt::Status st = wt::plan(board, shape, req, &p);
  if (!st.is_ok()) return fail(st);
  int32_t max_ctx = 0;
  st = wt::solve_max_ctx(board, shape, req, &max_ctx);
  if (!st.is_ok()) return fail(st);
  float max_keep = 0.0f;
  const bool have_keep = req.prune.method != WT_PRUNE_FULL && req.prune.budget <= 0;
  if (have_keep) {
    st = wt::solve_max_keep(board, shape, req, &max_keep);
    if (!st.is_ok()) return fail(st);
  }

  std::printf("board   %s (%s): %.0f MiB, reserve %.0f MiB -> usable %.0f MiB\n", board.name.c_str(),
              board.unified ? "unified" : "discrete", to_mib(board.total_bytes), to_mib(board.reserve_bytes),
              to_mib(p.usable_bytes));
  std::printf("model   %s%s: %d layers, n_embd %d, n_head %d/%d kv, head_dim %d, vocab %d\n", shape.name.c_str(),
              shape.described ? " (description)" : "", shape.hp.n_layer, shape.hp.n_embd, shape.hp.n_head,
              shape.hp.n_head_kv, shape.hp.head_dim, shape.hp.n_vocab);
  std::printf("request n_ctx %d (prompt %d + new %d), method %s", req.n_ctx, req.n_ctx - req.n_new, req.n_new,
              wt_prune_method_name(p.prune.method));
  if (p.prune.method != WT_PRUNE_FULL) std::printf(" keep %.3g", p.prune.keep);
  std::printf(", backend %s\n\n", o.backend == WT_BACKEND_CPU ? "cpu" : o.backend == WT_BACKEND_CUDA ? "cuda" : "vulkan");
  std::printf("%-18s %12s  %s\n", "component", "MiB", "note");
  for (const wt::PlanComponent& c : p.components)
    std::printf("%-18s %12.1f  %s\n", c.name.c_str(), to_mib(c.bytes), c.note.c_str());
  std::printf("%-18s %12.1f\n", "total", to_mib(p.total_bytes));
  if (p.prune.method != WT_PRUNE_FULL) {
    int32_t lo = p.kv_rows[0], hi = p.kv_rows[0];
    for (int32_t r : p.kv_rows) {
      lo = std::min(lo, r);
      hi = std::max(hi, r);
    }
    std::printf("kv rows per layer  %d..%d of %d\n", lo, hi, req.n_ctx);
  }
  std::printf("\n");
  if (p.fits) {
    std::printf("verdict: fits with %.1f MiB spare\n", to_mib(static_cast<uint64_t>(p.spare_bytes)));
  } else {
    std::printf("verdict: does not fit by %.1f MiB\n", to_mib(static_cast<uint64_t>(-p.spare_bytes)));
  }
  if (max_ctx > 0) {
    std::printf("solve:   largest context that fits = %d (steps of %d", max_ctx, wt::kPlanCtxStep);
    if (train > 0 && !o.beyond_train_ctx) std::printf("; at most the training context %d", train);
    std::printf(")\n");
  } else {
    std::printf("solve:   no context fits (the weights and fixed parts alone exceed the board)\n");
  }
  if (have_keep) {
    if (max_keep > 0.0f) std::printf("solve:   largest keep that fits at n_ctx %d = %.3f\n", req.n_ctx, max_keep);
    else std::printf("solve:   no keep ratio fits at n_ctx %d\n", req.n_ctx);
  }
  for (const std::string& n : p.notes) std::printf("note:    %s\n", n.c_str());

  if (!o.json.empty()) {
    const std::string text = plan_json(p, max_ctx, max_keep, have_keep).dump() + "\n";
    FILE* f = std::fopen(o.json.c_str(), "w");
    bool written = f != nullptr;
    if (f) {
      written = std::fwrite(text.data(), 1, text.size(), f) == text.size();
      written = std::fclose(f) == 0 && written;
    }
    if (!written) {
      std::fprintf(stderr, "error: cannot write '%s'\n", o.json.c_str());
      return 2;
    }
  }
  return p.fits ? 0 : 1;
}
