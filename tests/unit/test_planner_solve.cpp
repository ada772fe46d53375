// The planner's fit arithmetic and solve mode on synthetic boards: a plan fits to the byte,
// the default n_batch_rows is lowered where it does not fit (as a context lowers it), and
// the largest context and keep that fit, up to the model's training context.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "platform/board.h"
#include "platform/planner.h"
#include "runtime/engine/context_layout.h"
#include "support/plan_fixture.h"
#include "whittle.h"

using namespace wt;
using namespace wt::test;

TEST_CASE("planner: fits / does not fit arithmetic on a synthetic board") {
  const ModelShape shape = model_shape_from_model(*tiny().model);
  const wt_prune_params pp = prune_params(WT_PRUNE_FASTKV, 0.1f);
  const Plan ref = plan_for(shape, 512, 32, pp);
  CHECK(ref.total_bytes == ref.weights_bytes + ref.arena.total_bytes + ref.overhead_bytes);
  uint64_t sum = 0;
  for (const PlanComponent& c : ref.components) sum += c.bytes;
  CHECK(sum == ref.total_bytes);
  CHECK(ref.overhead_bytes == kRuntimeOverheadBytes);

  PlanRequest r = ref.request;
  r.n_batch_rows = 512;  // set: with the default the plan that does not fit takes fewer (tested below)
  const uint64_t reserve = 1000;
  Plan exact, short_by_one;
  REQUIRE(plan(synthetic_board(ref.total_bytes + reserve, reserve), shape, r, &exact).is_ok());
  CHECK(exact.fits);
  CHECK(exact.spare_bytes == 0);
  REQUIRE(plan(synthetic_board(ref.total_bytes + reserve - 1, reserve), shape, r, &short_by_one).is_ok());
  CHECK_FALSE(short_by_one.fits);
  CHECK(short_by_one.spare_bytes == -1);
  // A context without max_new_tokens (n_ctx rows in every layer) is reported beside the plan.
  CHECK(exact.allocated_total_bytes > exact.total_bytes);
  CHECK_FALSE(exact.allocated_fits);
}

TEST_CASE("planner: a plan whose default n_batch_rows does not fit the board takes the most rows in steps of 64 that fit") {
  const ModelShape shape = model_shape_from_model(*tiny().model);
  for (const wt_prune_method method : {WT_PRUNE_FULL, WT_PRUNE_FASTKV}) {
    CAPTURE(std::string(wt_prune_method_name(method)));
    const wt_prune_params pp = prune_params(method, 0.2f);
    const int32_t n_ctx = 4096;
    const Plan most = plan_for(shape, n_ctx, 64, pp, false, DType::f16, WT_BATCH_ROWS_DEFAULT);
    const Plan half = plan_for(shape, n_ctx, 64, pp, false, DType::f16, WT_BATCH_ROWS_DEFAULT / 2);
    REQUIRE(half.total_bytes < most.total_bytes);
    CHECK(most.batch_rows == WT_BATCH_ROWS_DEFAULT);
    // A board between the two: the default's plan takes fewer rows, the most that fit.
    PlanRequest r = most.request;
    r.n_batch_rows = 0;
    const BoardProfile board = synthetic_board((most.total_bytes + half.total_bytes) / 2, 0);
    Plan fitted, one_more;
    REQUIRE(plan(board, shape, r, &fitted).is_ok());
    CAPTURE(fitted.batch_rows);
    CHECK(fitted.fits);
    CHECK(fitted.request.n_batch_rows == 0);
    CHECK(fitted.batch_rows % kBatchRowsStep == 0);
    CHECK(fitted.batch_rows >= WT_BATCH_ROWS_DEFAULT / 2);
    CHECK(fitted.batch_rows < WT_BATCH_ROWS_DEFAULT);
    REQUIRE_FALSE(fitted.notes.empty());
    CHECK(fitted.notes[0].find("planned with " + std::to_string(fitted.batch_rows) + " rows at once") != std::string::npos);
    r.n_batch_rows = fitted.batch_rows + kBatchRowsStep;
    REQUIRE(plan(board, shape, r, &one_more).is_ok());
    CHECK_FALSE(one_more.fits);
    // The same plan as asking for those rows.
    r.n_batch_rows = fitted.batch_rows;
    Plan asked;
    REQUIRE(plan(board, shape, r, &asked).is_ok());
    CHECK(asked.total_bytes == fitted.total_bytes);
    // Solving for the context counts on the same: at least what the default's rows allow.
    int32_t with_default = 0, with_most = 0;
    r.beyond_train_ctx = true;  // the tiny model's 1024 tokens are not the bound here
    r.n_batch_rows = 0;
    REQUIRE(solve_max_ctx(board, shape, r, &with_default).is_ok());
    r.n_batch_rows = WT_BATCH_ROWS_DEFAULT;
    REQUIRE(solve_max_ctx(board, shape, r, &with_most).is_ok());
    CHECK(with_default >= n_ctx);
    CHECK(with_most < n_ctx);
    // A board that no step fits: the plan at the fewest rows, as a context's refusal counts
    // them, not fitting (by the byte the board lacks), and a note saying so.
    const Plan least = plan_for(shape, n_ctx, 64, pp, false, DType::f16, kBatchRowsStep);
    r.n_batch_rows = 0;
    Plan none;
    REQUIRE(plan(synthetic_board(least.total_bytes - 1, 0), shape, r, &none).is_ok());
    CHECK_FALSE(none.fits);
    CHECK(none.batch_rows == kBatchRowsStep);
    CHECK(none.total_bytes == least.total_bytes);
    CHECK(none.request.n_batch_rows == 0);
    REQUIRE_FALSE(none.notes.empty());
    CHECK(none.notes[0].find("fewer rows do not make it fit: planned with 64 rows at once") != std::string::npos);
    // A context of at most 64 tokens has no fewer rows to take: its own plan, and no note.
    PlanRequest small = r;
    small.n_ctx = 48;
    small.n_new = 8;
    Plan tiny_plan;
    REQUIRE(plan(synthetic_board(1, 0), shape, small, &tiny_plan).is_ok());
    CHECK_FALSE(tiny_plan.fits);
    CHECK(tiny_plan.batch_rows == 48);
    for (const std::string& n : tiny_plan.notes) CHECK(n.find("rows at once") == std::string::npos);
  }
}

TEST_CASE("planner: solve mode finds the largest context and keep that fit") {
  const ModelShape shape = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_threads = 2;
  r.n_new = 64;
  r.prune = prune_params(WT_PRUNE_SNAPKV, 0.2f);
  r.beyond_train_ctx = true;  // the board is the bound here, not the tiny model's 1024 tokens
  r.n_batch_rows = WT_BATCH_ROWS_DEFAULT;  // set: fewer rows would fit more (tested below)
  // A board that holds a context of about 3000 rows.
  r.n_ctx = 3000;
  Plan at3000;
  REQUIRE(plan(synthetic_board(uint64_t{1} << 40, 0), shape, r, &at3000).is_ok());
  const BoardProfile board = synthetic_board(at3000.total_bytes + (uint64_t{1} << 20), uint64_t{1} << 20);
  int32_t max_ctx = 0;
  REQUIRE(solve_max_ctx(board, shape, r, &max_ctx).is_ok());
  CHECK(max_ctx % kPlanCtxStep == 0);
  CHECK(max_ctx >= 2816);
  Plan fit, over;
  r.n_ctx = max_ctx;
  REQUIRE(plan(board, shape, r, &fit).is_ok());
  CHECK(fit.fits);
  r.n_ctx = max_ctx + kPlanCtxStep;
  REQUIRE(plan(board, shape, r, &over).is_ok());
  CHECK_FALSE(over.fits);

  // Keep: at n_ctx 3000 keep 0.2 fits with nothing spare; a smaller board needs less keep.
  r.n_ctx = 3000;
  const BoardProfile tight = synthetic_board(at3000.total_bytes - at3000.kv_bytes / 4, 0);
  float keep = 0;
  REQUIRE(solve_max_keep(tight, shape, r, &keep).is_ok());
  CHECK(keep > 0.0f);
  CHECK(keep < 0.2f);
  r.prune.keep = keep;
  REQUIRE(plan(tight, shape, r, &fit).is_ok());
  CHECK(fit.fits);
  r.prune.keep = keep + 0.001f;
  REQUIRE(plan(tight, shape, r, &over).is_ok());
  CHECK_FALSE(over.fits);

  // Nothing fits a board smaller than the weights; full KV has no keep to solve.
  REQUIRE(solve_max_ctx(synthetic_board(shape.weight_bytes, 0), shape, r, &max_ctx).is_ok());
  CHECK(max_ctx == 0);
  r.prune.method = WT_PRUNE_FULL;
  CHECK(solve_max_keep(board, shape, r, &keep).code() == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("planner: the solved context stops at the model's training context unless asked") {
  ModelShape shape = model_shape_from_model(*tiny().model);
  PlanRequest r;
  r.n_threads = 2;
  r.n_new = 64;
  const BoardProfile roomy = synthetic_board(uint64_t{1} << 36, 0);
  shape.hp.n_ctx_train = 1000;  // not a multiple of the step
  int32_t capped = 0, free = 0;
  REQUIRE(solve_max_ctx(roomy, shape, r, &capped).is_ok());
  CHECK(capped == 1000 / kPlanCtxStep * kPlanCtxStep);
  r.beyond_train_ctx = true;
  REQUIRE(solve_max_ctx(roomy, shape, r, &free).is_ok());
  CHECK(free > 1000);
  // A model that states no training context is not capped; n_new past the cap leaves none.
  r.beyond_train_ctx = false;
  shape.hp.n_ctx_train = 0;
  REQUIRE(solve_max_ctx(roomy, shape, r, &capped).is_ok());
  CHECK(capped == free);
  shape.hp.n_ctx_train = 32;
  REQUIRE(solve_max_ctx(roomy, shape, r, &capped).is_ok());
  CHECK(capped == 0);
}
