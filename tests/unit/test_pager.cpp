// The KV pager's bookkeeping (offload/): block tables, pools, the overlap-gated swap
// decision and its copies, on synthetic block sequences checked against a shadow model
// written here with std::set; and real bytes through the CPU backend's copy stream.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "backends/backend.h"
#include "offload/pager.h"
#include "offload/swap_copies.h"
#include "offload/swap_plan.h"
#include "support/alloc_counter.h"

namespace {

using wt::Pager;
using wt::PagerParams;
using wt::SwapDecision;
using wt::SwapPlan;

Pager make_pager(int32_t n_layer, int32_t max_tokens, int32_t block_tokens, size_t row_bytes, int32_t n_device,
                 int32_t n_host) {
  Pager p;
  PagerParams pp;
  pp.n_layer = n_layer;
  pp.max_tokens = max_tokens;
  pp.block_tokens = block_tokens;
  pp.row_bytes = row_bytes;
  pp.n_device_slots = n_device;
  pp.n_host_slots = n_host;
  const wt::Status st = p.init(pp);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return p;
}

void append_all(Pager& p, int32_t n_rows) {
  for (int32_t l = 0; l < p.params().n_layer; ++l) {
    const wt::Status st = p.append_rows(l, n_rows);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
  }
}

std::vector<int32_t> active(const Pager& p, int32_t layer) {
  std::vector<int32_t> a;
  p.active_blocks(layer, &a);
  return a;
}

struct Step {
  std::vector<int32_t> candidate, pinned;
  double gamma = 0.9;
  bool force = false;
};

// One decision for the group [begin, end): current set from the group's first layer.
wt::Status decide_and_swap(Pager& p, int32_t begin, int32_t end, const Step& s, SwapDecision* d, SwapPlan* plan) {
  const std::vector<int32_t> cur = active(p, begin);
  wt::SwapInput in{cur, s.candidate, s.pinned, s.gamma, s.force};
  WT_TRY(wt::decide_swap(in, d));
  return p.swap(begin, end, *d, plan);
}

SwapPlan must_swap(Pager& p, int32_t begin, int32_t end, const Step& s) {
  SwapDecision d;
  SwapPlan plan;
  const wt::Status st = decide_and_swap(p, begin, end, s, &d, &plan);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  const wt::Status inv = p.check_invariants();
  REQUIRE_MESSAGE(inv.is_ok(), inv.message());
  return plan;
}

// Everything observable about the pager's state, to show a failed call changed nothing.
struct Snapshot {
  std::vector<int32_t> ints;
  std::vector<uint8_t> flags;
  wt::SwapAccount totals;
  bool operator==(const Snapshot&) const = default;
};

Snapshot snapshot(const Pager& p) {
  Snapshot s;
  for (int32_t l = 0; l < p.params().n_layer; ++l) {
    const wt::BlockTable& t = p.table(l);
    s.ints.push_back(t.n_tokens());
    for (int32_t b = 0; b < t.max_blocks(); ++b) {
      s.ints.push_back(t.at(b).device_slot);
      s.ints.push_back(t.at(b).host_slot);
      s.flags.push_back(t.at(b).device_valid);
      s.flags.push_back(t.at(b).host_valid);
    }
  }
  for (int32_t i = 0; i < p.device_pool().n_slots(); ++i) s.flags.push_back(p.device_pool().is_used(i));
  for (int32_t i = 0; i < p.host_pool().n_slots(); ++i) s.flags.push_back(p.host_pool().is_used(i));
  s.totals = p.totals();
  return s;
}

// The shadow model: per layer the resident blocks and the blocks with a valid host copy.
struct Shadow {
  std::vector<std::set<int32_t>> resident, host_valid;
  explicit Shadow(int32_t n_layer) : resident(n_layer), host_valid(n_layer) {}
};

// What the pager should account for a decision, from the shadow alone; updates the shadow.
wt::SwapAccount expect(Shadow& sh, const Pager& p, int32_t begin, int32_t end, const SwapDecision& d) {
  wt::SwapAccount a;
  a.n_decisions = 1;
  if (d.keep) {
    a.n_kept = 1;
    return a;
  }
  for (int32_t l = begin; l < end; ++l) {
    const wt::BlockTable& t = p.table(l);
    const size_t row_bytes = p.params().row_bytes;
    for (int32_t b : d.leaving) {
      if (!sh.resident[l].count(b)) continue;
      ++a.n_blocks_out;
      if (!sh.host_valid[l].count(b)) {
        ++a.n_write_backs;
        a.bytes_to_host += static_cast<uint64_t>(t.n_rows(b)) * row_bytes;
      }
      sh.resident[l].erase(b);
      sh.host_valid[l].insert(b);
    }
    for (int32_t b : d.entering) {
      if (sh.resident[l].count(b)) continue;
      ++a.n_blocks_in;
      a.bytes_to_device += static_cast<uint64_t>(t.n_rows(b)) * row_bytes;
      sh.resident[l].insert(b);
    }
  }
  return a;
}

void shadow_append(Shadow& sh, const Pager& p, int32_t layer, int32_t n_old, int32_t n_rows) {
  const int32_t bt = p.params().block_tokens;
  if (n_old % bt != 0) sh.host_valid[layer].erase(n_old / bt);
  for (int32_t b = (n_old + bt - 1) / bt; b < (n_old + n_rows + bt - 1) / bt; ++b) sh.resident[layer].insert(b);
}

void check_shadow(const Shadow& sh, const Pager& p) {
  for (int32_t l = 0; l < p.params().n_layer; ++l) {
    const std::vector<int32_t> a = active(p, l);
    CHECK(std::set<int32_t>(a.begin(), a.end()) == sh.resident[l]);
    const wt::BlockTable& t = p.table(l);
    for (int32_t b = 0; b < t.n_blocks(); ++b) CHECK(t.at(b).host_valid == (sh.host_valid[l].count(b) == 1));
  }
}

}  // namespace

TEST_CASE("pager: decide_swap computes overlap, leaving and entering, and rejects bad lists") {
  SwapDecision d;
  const std::vector<int32_t> cur{0, 1, 2, 3}, cand{0, 2, 5, 6}, pinned{0, 3};
  REQUIRE(wt::decide_swap({cur, cand, pinned, 0.9, false}, &d).is_ok());
  CHECK(d.overlap == doctest::Approx(0.5));
  CHECK_FALSE(d.keep);
  CHECK(d.leaving == std::vector<int32_t>{1});         // 3 is pinned
  CHECK(d.entering == std::vector<int32_t>{5, 6});
  REQUIRE(wt::decide_swap({cur, cand, pinned, 0.5, false}, &d).is_ok());
  CHECK(d.keep);
  CHECK(d.leaving.empty());
  CHECK(d.entering.empty());
  // A pinned block not yet active enters with the candidate.
  const std::vector<int32_t> pin9{9};
  REQUIRE(wt::decide_swap({cur, cand, pin9, 0.9, false}, &d).is_ok());
  CHECK(d.entering == std::vector<int32_t>{5, 6, 9});
  // An empty candidate is full overlap; force moves regardless.
  REQUIRE(wt::decide_swap({cur, {}, {}, 0.99, false}, &d).is_ok());
  CHECK(d.keep);
  REQUIRE(wt::decide_swap({cur, cur, {}, 0.99, true}, &d).is_ok());
  CHECK_FALSE(d.keep);
  CHECK(d.leaving.empty());
  CHECK(d.entering.empty());
  const std::vector<int32_t> unsorted{2, 1};
  CHECK(wt::decide_swap({cur, unsorted, {}, 0.9, false}, &d).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(wt::decide_swap({cur, cand, {}, 1.5, false}, &d).code() == WT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("pager: an active set that changes every step moves blocks every step, bytes accounted exactly") {
  const int32_t n_layer = 2, bt = 4, n_blocks = 8;
  const size_t row_bytes = 24;
  Pager p = make_pager(n_layer, bt * n_blocks, bt, row_bytes, n_layer * n_blocks, n_layer * n_blocks);
  append_all(p, bt * n_blocks);
  Shadow sh(n_layer);
  for (int32_t l = 0; l < n_layer; ++l) shadow_append(sh, p, l, 0, bt * n_blocks);
  wt::SwapAccount sum;
  for (int32_t t = 0; t < 20; ++t) {
    // A window of 3 blocks sliding by one: overlap 2/3 < gamma, so every step swaps.
    std::vector<int32_t> cand{t % n_blocks, (t + 1) % n_blocks, (t + 2) % n_blocks};
    std::sort(cand.begin(), cand.end());
    SwapDecision d;
    SwapPlan plan;
    const std::vector<int32_t> cur = active(p, 0);
    REQUIRE(wt::decide_swap({cur, cand, {}, 0.9, t == 0}, &d).is_ok());
    const wt::SwapAccount want = expect(sh, p, 0, n_layer, d);
    REQUIRE(p.swap(0, n_layer, d, &plan).is_ok());
    REQUIRE(p.check_invariants().is_ok());
    CAPTURE(t);
    CHECK_FALSE(d.keep);
    CHECK(plan.account == want);
    CHECK(plan.account.n_blocks_in == (t == 0 ? 0 : n_layer));  // the first step only shrinks
    CHECK(plan.account.n_blocks_out == (t == 0 ? n_layer * (n_blocks - 3) : n_layer));
    CHECK(plan.account.bytes_to_device == static_cast<uint64_t>(plan.account.n_blocks_in) * bt * row_bytes);
    CHECK(plan.copies.size() == static_cast<size_t>(plan.account.n_write_backs + plan.account.n_blocks_in));
    check_shadow(sh, p);
    sum.add(want);
  }
  CHECK(p.totals() == sum);
  // Every block left once with no host copy; after that every leave was free.
  CHECK(p.totals().n_write_backs == n_layer * n_blocks);
  CHECK(p.totals().bytes_to_host == static_cast<uint64_t>(n_layer * n_blocks) * bt * row_bytes);
}

TEST_CASE("pager: an active set that never changes moves nothing after the first decision") {
  Pager p = make_pager(3, 640, 64, 128, 30, 30);
  append_all(p, 640);
  const Step s{{0, 2, 5, 9}, {0, 9}, 0.9, false};
  SwapPlan first = must_swap(p, 0, 3, Step{s.candidate, s.pinned, 0.9, true});
  CHECK(first.account.n_blocks_out == 3 * 6);
  const wt::SwapAccount after_first = p.totals();
  for (int t = 0; t < 25; ++t) {
    SwapPlan plan = must_swap(p, 0, 3, s);
    CHECK(plan.copies.empty());
    CHECK(plan.account.n_kept == 1);
  }
  CHECK(p.totals().n_decisions == after_first.n_decisions + 25);
  CHECK(p.totals().n_kept == 25);
  CHECK(p.totals().bytes_to_device == after_first.bytes_to_device);
  CHECK(p.totals().bytes_to_host == after_first.bytes_to_host);
  for (int32_t l = 0; l < 3; ++l) CHECK(active(p, l) == s.candidate);
}

TEST_CASE("pager: overlap exactly at gamma keeps the current set") {
  for (int32_t n : {10, 20, 100}) {
    const double gamma = 1.0 - 1.0 / n;  // 0.9, 0.95, 0.99: n-1 of n candidates are current
    CAPTURE(n);
    std::vector<int32_t> cur(static_cast<size_t>(n)), cand(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) cur[static_cast<size_t>(i)] = i, cand[static_cast<size_t>(i)] = i + 1;
    SwapDecision d;
    REQUIRE(wt::decide_swap({cur, cand, {}, gamma, false}, &d).is_ok());
    CHECK(d.overlap == gamma);
    CHECK(d.keep);
    REQUIRE(wt::decide_swap({cur, cand, {}, std::nextafter(gamma, 1.0), false}, &d).is_ok());
    CHECK_FALSE(d.keep);
    CHECK(d.leaving == std::vector<int32_t>{0});
    CHECK(d.entering == std::vector<int32_t>{n});
  }
  // The literals a user writes hit the boundary the same way.
  const std::vector<int32_t> cur{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, cand{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  SwapDecision d;
  REQUIRE(wt::decide_swap({cur, cand, {}, 0.9, false}, &d).is_ok());
  CHECK(d.keep);
}

TEST_CASE("pager: gamma 0.9, 0.95 and 0.99 swap every 3rd, 2nd and every step of a one-block drift") {
  // 20 candidate blocks drifting by one block per step: against the kept set the overlap
  // falls 19/20, 18/20, 17/20, ... until it drops below gamma.
  struct Case {
    double gamma;
    int64_t n_swaps;
  };
  for (const Case c : {Case{0.9, 4}, Case{0.95, 6}, Case{0.99, 12}}) {
    CAPTURE(c.gamma);
    const int32_t bt = 8, n_blocks = 32, width = 20, steps = 12;
    Pager p = make_pager(1, bt * n_blocks, bt, 16, n_blocks, n_blocks);
    append_all(p, bt * n_blocks);
    auto window = [&](int32_t start) {
      std::vector<int32_t> w(width);
      for (int32_t i = 0; i < width; ++i) w[static_cast<size_t>(i)] = start + i;
      return w;
    };
    must_swap(p, 0, 1, Step{window(0), {}, c.gamma, true});
    const wt::SwapAccount base = p.totals();
    for (int32_t t = 1; t <= steps; ++t) must_swap(p, 0, 1, Step{window(t), {}, c.gamma, false});
    const int64_t n_swaps = p.totals().n_decisions - base.n_decisions - (p.totals().n_kept - base.n_kept);
    CHECK(n_swaps == c.n_swaps);
    CHECK(p.totals().n_kept - base.n_kept == steps - c.n_swaps);
    // Each swap catches up the whole drift, so the blocks moved in are the same.
    CHECK(p.totals().n_blocks_in - base.n_blocks_in == steps);
    CHECK(p.totals().bytes_to_device - base.bytes_to_device == static_cast<uint64_t>(steps) * bt * 16);
    CHECK(active(p, 0) == window(steps));
  }
}

TEST_CASE("pager: the ragged last block moves only the bytes of its rows") {
  const size_t row_bytes = 16;
  Pager p = make_pager(1, 64 * 8, 64, row_bytes, 8, 8);
  append_all(p, 64 * 3 + 10);
  const wt::BlockTable& t = p.table(0);
  REQUIRE(t.n_blocks() == 4);
  CHECK(t.n_rows(3) == 10);
  SwapPlan out = must_swap(p, 0, 1, Step{{0}, {}, 0.9, true});
  CHECK(out.account.bytes_to_host == (64 + 64 + 10) * row_bytes);
  REQUIRE(out.copies.size() == 3);
  CHECK(out.copies[2].block == 3);
  CHECK(out.copies[2].bytes == 10 * row_bytes);
  SwapPlan in = must_swap(p, 0, 1, Step{{0, 3}, {3}, 0.9, false});
  CHECK(in.account.bytes_to_device == 10 * row_bytes);
  std::vector<wt::PagedBlock> view;
  p.paged_view(0, &view);
  REQUIRE(view.size() == 2);
  CHECK(view[1].block == 3);
  CHECK(view[1].row_begin == 192);
  CHECK(view[1].n_rows == 10);
  CHECK(view[1].slot == in.entering[0].device_slot);
  // Rows appended to the resident ragged block make its host copy stale: 15 rows go back.
  REQUIRE(p.append_rows(0, 5).is_ok());
  CHECK_FALSE(t.at(3).host_valid);
  SwapPlan out2 = must_swap(p, 0, 1, Step{{0}, {}, 0.9, true});
  CHECK(out2.account.bytes_to_host == 15 * row_bytes);
  // Appending to a ragged last block that is not on the device is refused, changing nothing.
  const Snapshot before = snapshot(p);
  CHECK(p.append_rows(0, 1).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(snapshot(p) == before);
}

TEST_CASE("pager: pinned blocks never leave") {
  const int32_t bt = 4, n_blocks = 16;
  Pager p = make_pager(2, bt * n_blocks, bt, 8, 2 * n_blocks, 2 * n_blocks);
  append_all(p, bt * n_blocks - 1);  // the newest block is ragged
  std::mt19937 rng(7);
  const std::vector<int32_t> pinned{0, n_blocks - 1};
  for (int t = 0; t < 60; ++t) {
    std::vector<int32_t> cand;
    for (int32_t b = 1; b < n_blocks - 1; ++b)
      if (rng() % 4 == 0) cand.push_back(b);
    must_swap(p, 0, 2, Step{cand, pinned, 0.9, t == 0});
    for (int32_t l = 0; l < 2; ++l) {
      const std::vector<int32_t> a = active(p, l);
      CHECK(std::binary_search(a.begin(), a.end(), 0));
      CHECK(std::binary_search(a.begin(), a.end(), n_blocks - 1));
    }
  }
  CHECK(p.table(0).at(0).host_slot == -1);  // never left, so never written back
}

TEST_CASE("pager: write-back is skipped when the host copy is valid and done when it is missing") {
  const size_t row_bytes = 10;
  Pager p = make_pager(1, 64, 8, row_bytes, 8, 8);
  append_all(p, 20);  // blocks 0, 1, 2 (4 rows)
  SwapPlan a = must_swap(p, 0, 1, Step{{0, 2}, {}, 0.9, true});  // 1 leaves: no host copy yet
  REQUIRE(a.leaving.size() == 1);
  CHECK(a.leaving[0].write_back);
  CHECK(a.leaving[0].take_host);
  CHECK(a.account.bytes_to_host == 8 * row_bytes);
  const int32_t host_slot = p.table(0).at(1).host_slot;
  CHECK(p.table(0).at(1).host_valid);
  must_swap(p, 0, 1, Step{{0, 1, 2}, {}, 0.9, true});  // back
  CHECK(p.table(0).at(1).host_valid);                 // both copies valid now
  SwapPlan b = must_swap(p, 0, 1, Step{{0, 2}, {}, 0.9, true});  // leaves again: nothing to write
  REQUIRE(b.leaving.size() == 1);
  CHECK_FALSE(b.leaving[0].write_back);
  CHECK(b.copies.empty());
  CHECK(b.account.bytes_to_host == 0);
  CHECK(b.account.n_blocks_out == 1);
  CHECK(p.table(0).at(1).host_slot == host_slot);
  // Block 2 is the ragged newest one: it goes and comes back (valid host copy), then grows.
  must_swap(p, 0, 1, Step{{0}, {}, 0.9, true});
  must_swap(p, 0, 1, Step{{0, 2}, {}, 0.9, true});
  const int32_t host2 = p.table(0).at(2).host_slot;
  const int32_t host_used = p.host_pool().n_used();
  REQUIRE(p.append_rows(0, 1).is_ok());
  SwapPlan c = must_swap(p, 0, 1, Step{{0}, {}, 0.9, true});
  REQUIRE(c.leaving.size() == 1);
  CHECK(c.leaving[0].write_back);
  CHECK_FALSE(c.leaving[0].take_host);  // the stale copy's slot is reused
  CHECK(c.leaving[0].host_slot == host2);
  CHECK(c.account.bytes_to_host == 5 * row_bytes);
  CHECK(p.host_pool().n_used() == host_used);
}

// wt_context_truncate's step: the blocks past the rows kept give both their slots back, the
// block left ragged keeps its copies, and the layer grows again from there.
TEST_CASE("pager: truncate_rows frees the blocks past the rows kept and keeps the ragged one") {
  Pager p = make_pager(2, 64, 8, 10, 8, 8);
  append_all(p, 30);  // blocks 0..3 (6 rows in block 3) in each layer
  int32_t host_slot = -1;
  REQUIRE(p.write_through(0, 1, &host_slot).is_ok());
  REQUIRE(p.write_through(0, 2, &host_slot).is_ok());
  must_swap(p, 0, 1, Step{{0, 2, 3}, {}, 0.9, true});  // block 1 leaves the device (host copy valid)
  const int32_t device_used = p.device_pool().n_used(), host_used = p.host_pool().n_used();
  CHECK(p.truncate_rows(0, 31).code() == WT_ERR_INVALID_ARGUMENT);  // more than it holds
  CHECK(p.truncate_rows(2, 0).code() == WT_ERR_INVALID_ARGUMENT);   // no such layer
  CHECK(p.truncate_rows(0, -1).code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(p.table(0).n_tokens() == 30);
  REQUIRE(p.truncate_rows(0, 12).is_ok());  // block 1 ragged (4 rows), blocks 2 and 3 gone
  CHECK(p.table(0).n_tokens() == 12);
  CHECK(p.table(0).n_blocks() == 2);
  CHECK(p.device_pool().n_used() == device_used - 2);  // blocks 2 and 3 were on the device
  CHECK(p.host_pool().n_used() == host_used - 1);      // block 2's host copy
  CHECK(p.table(0).at(1).host_valid);                  // block 1 keeps its copy, off the device
  CHECK(p.table(0).at(1).device_slot < 0);
  CHECK(p.table(0).at(2).device_slot < 0);
  CHECK(p.table(0).at(2).host_slot < 0);
  CHECK(p.table(1).n_tokens() == 30);  // the other layer as it was
  const wt::Status ok = p.check_invariants();
  CHECK_MESSAGE(ok.is_ok(), ok.message());
  // Growing a ragged block that is not on the device is the caller's to fetch first.
  CHECK(p.append_rows(0, 1).code() == WT_ERR_INVALID_ARGUMENT);
  REQUIRE(p.truncate_rows(0, 8).is_ok());  // on a block boundary: block 1 goes too
  CHECK(p.host_pool().n_used() == host_used - 2);
  REQUIRE(p.append_rows(0, 9).is_ok());  // blocks 1 and 2 anew
  CHECK(p.table(0).n_tokens() == 17);
  REQUIRE(p.truncate_rows(0, 0).is_ok());
  CHECK(p.table(0).n_blocks() == 0);
  const wt::Status end = p.check_invariants();
  CHECK_MESSAGE(end.is_ok(), end.message());
}

TEST_CASE("pager: pool exhaustion returns a clear status and changes nothing") {
  SUBCASE("device pool, second layer of a group") {
    Pager p = make_pager(2, 64, 4, 8, 8, 8);
    append_all(p, 12);                                     // 3 blocks per layer: 6 slots
    must_swap(p, 0, 2, Step{{0}, {}, 0.9, true});          // 2 slots left each
    append_all(p, 8);                                      // blocks 3, 4: 6 used, 2 free
    const Snapshot before = snapshot(p);
    SwapDecision d;
    SwapPlan plan;
    const wt::Status st = decide_and_swap(p, 0, 2, Step{{0, 1, 2, 3, 4}, {}, 0.9, false}, &d, &plan);
    CHECK(st.code() == WT_ERR_OUT_OF_MEMORY);
    CHECK(st.message().find("device pool (8 slots") != std::string::npos);
    CHECK(st.message().find("layer 1") != std::string::npos);
    CHECK(st.message().find("2 more needed") != std::string::npos);
    CHECK(snapshot(p) == before);
    CHECK(plan.copies.empty());
    CHECK(p.check_invariants().is_ok());
  }
  SUBCASE("host pool, write-back") {
    Pager p = make_pager(1, 64, 4, 8, 8, 1);
    append_all(p, 12);
    const Snapshot before = snapshot(p);
    SwapDecision d;
    SwapPlan plan;
    const wt::Status st = decide_and_swap(p, 0, 1, Step{{0}, {}, 0.9, true}, &d, &plan);
    CHECK(st.code() == WT_ERR_OUT_OF_MEMORY);
    CHECK(st.message().find("host pool (1 slots") != std::string::npos);
    CHECK(st.message().find("layer 0") != std::string::npos);
    CHECK(snapshot(p) == before);
  }
  SUBCASE("device pool, append") {
    Pager p = make_pager(2, 64, 4, 8, 5, 8);
    append_all(p, 8);  // 4 slots
    const Snapshot before = snapshot(p);
    const wt::Status st = p.append_rows(1, 9);  // needs 3 new blocks, 1 free
    CHECK(st.code() == WT_ERR_OUT_OF_MEMORY);
    CHECK(st.message().find("layer 1") != std::string::npos);
    CHECK(snapshot(p) == before);
    CHECK(p.append_rows(0, 57).code() == WT_ERR_CONTEXT_FULL);
    CHECK(snapshot(p) == before);
  }
}

TEST_CASE("pager: blocks pruned then brought back keep their content (CPU backend copies)") {
  std::unique_ptr<wt::Backend> be;
  REQUIRE(wt::create_cpu_backend(wt::BackendOptions{}, &be).is_ok());
  const int32_t n_layer = 2, bt = 4, n_tokens = 18;  // 5 blocks, the last with 2 rows
  const size_t row_bytes = 24;
  Pager p = make_pager(n_layer, 32, bt, row_bytes, 10, 10);
  wt::PoolMemory mem;
  mem.slot_bytes = p.slot_bytes();
  REQUIRE(be->alloc(10 * mem.slot_bytes, wt::MemoryKind::device, &mem.device[0]).is_ok());
  REQUIRE(be->alloc(10 * mem.slot_bytes, wt::MemoryKind::host_pinned, &mem.host[0]).is_ok());
  auto at = [&](const wt::Buffer& b, int32_t slot) { return static_cast<uint8_t*>(b.host) + b.offset + slot * mem.slot_bytes; };
  auto pattern = [](int32_t layer, int32_t row, size_t i) { return static_cast<uint8_t>(layer * 131 + row * 17 + i * 3 + 1); };

  // Each step appends rows (written into their device slots, as prefill and decode would),
  // then moves to the candidate with the newest block pinned. Steps 2 and 4 write back a
  // block that leaves for the first time while an entering block reuses its slot: the copy
  // order (write-backs first) is what keeps the content.
  struct Round {
    int32_t n_append;
    std::vector<int32_t> candidate;
  };
  const std::vector<Round> rounds{{8, {0}},    {4, {0}},       {4, {0, 1}}, {2, {0, 2}},
                                  {0, {1, 3}}, {0, {0, 1, 2, 3}}, {0, {0}}, {1, {2}}};
  std::vector<wt::PagedBlock> view;
  for (size_t step = 0; step < rounds.size(); ++step) {
    CAPTURE(step);
    for (int32_t l = 0; l < n_layer; ++l) {
      const int32_t n_old = p.table(l).n_tokens();
      REQUIRE(p.append_rows(l, rounds[step].n_append).is_ok());
      p.paged_view(l, &view);
      for (const wt::PagedBlock& pb : view)
        for (int32_t r = std::max(n_old, pb.row_begin); r < pb.row_begin + pb.n_rows; ++r)
          for (size_t i = 0; i < row_bytes; ++i)
            at(mem.device[0], pb.slot)[(r - pb.row_begin) * row_bytes + i] = pattern(l, r, i);
    }
    const int32_t newest = p.table(0).n_blocks() - 1;
    const SwapPlan plan = must_swap(p, 0, n_layer, Step{rounds[step].candidate, {newest}, 0.9, true});
    wt::Event done;
    REQUIRE(wt::issue_copies(*be, plan, mem, nullptr, &done).is_ok());
    CHECK(done.stream == wt::Stream::copy);
    REQUIRE(be->wait_event(wt::Stream::compute, done).is_ok());
    // Scribble over every free device slot: content must come back from the host tier.
    for (int32_t s = 0; s < p.device_pool().n_slots(); ++s)
      if (!p.device_pool().is_used(s)) std::memset(at(mem.device[0], s), 0xAB, mem.slot_bytes);
    for (int32_t l = 0; l < n_layer; ++l) {
      p.paged_view(l, &view);
      std::vector<int32_t> blocks;
      for (const wt::PagedBlock& pb : view) {
        blocks.push_back(pb.block);
        for (int32_t r = 0; r < pb.n_rows; ++r)
          for (size_t i = 0; i < row_bytes; ++i)
            REQUIRE(at(mem.device[0], pb.slot)[r * row_bytes + i] == pattern(l, pb.row_begin + r, i));
      }
      std::vector<int32_t> want = rounds[step].candidate;
      if (want.back() != newest) want.push_back(newest);
      CHECK(blocks == want);
    }
  }
  CHECK(p.table(0).n_tokens() == n_tokens + 1);
  CHECK(p.totals().n_blocks_in > 0);
  // A plan naming a slot past the pool memory is refused before anything is issued.
  SwapPlan bad;
  bad.copies.push_back(wt::CopyCommand{0, 0, wt::Tier::host, 10, wt::Tier::device, 0, 8});
  wt::Event e;
  CHECK(wt::issue_copies(*be, bad, mem, nullptr, &e).code() == WT_ERR_INVALID_ARGUMENT);
  be->free(&mem.device[0]);
  be->free(&mem.host[0]);
}

TEST_CASE("pager: commands that continue each other slot by slot go as one copy per plane") {
  std::unique_ptr<wt::Backend> be;
  REQUIRE(wt::create_cpu_backend(wt::BackendOptions{}, &be).is_ok());
  wt::PoolMemory mem;
  mem.n_planes = 2;
  mem.slot_bytes = 40;  // per plane
  const int32_t n_slots = 12;
  for (int pl = 0; pl < 2; ++pl) {
    REQUIRE(be->alloc(n_slots * mem.slot_bytes, wt::MemoryKind::device, &mem.device[pl]).is_ok());
    REQUIRE(be->alloc(n_slots * mem.slot_bytes, wt::MemoryKind::host_pinned, &mem.host[pl]).is_ok());
  }
  auto base = [](const wt::Buffer& b) { return static_cast<uint8_t*>(b.host) + b.offset; };
  const size_t whole = 2 * mem.slot_bytes;  // a command's bytes cover both planes
  using wt::Tier;
  SwapPlan plan;
  // Write-backs device 0, 1 -> host 7, 8 (one run); prefetches host 2, 3, 4 -> device 5, 6, 7
  // with the last one ragged (one run); host 9, 10 -> device 0, 1 (a run of its own: device 0
  // does not follow 7), the second ragged; host 11 -> device 2 (after a ragged one: its own).
  plan.copies = {{0, 0, Tier::device, 0, Tier::host, 7, whole}, {0, 1, Tier::device, 1, Tier::host, 8, whole},
                 {0, 2, Tier::host, 2, Tier::device, 5, whole}, {0, 3, Tier::host, 3, Tier::device, 6, whole},
                 {0, 4, Tier::host, 4, Tier::device, 7, 2 * 16}, {1, 0, Tier::host, 9, Tier::device, 0, whole},
                 {1, 1, Tier::host, 10, Tier::device, 1, 2 * 24}, {1, 2, Tier::host, 11, Tier::device, 2, whole}};
  // Every byte of both tiers distinct; the expected result: each command alone, in order.
  std::vector<uint8_t> want[2][2];  // [plane][tier: 0 device, 1 host]
  for (int pl = 0; pl < 2; ++pl)
    for (int t = 0; t < 2; ++t) {
      uint8_t* b = base(t == 0 ? mem.device[pl] : mem.host[pl]);
      for (size_t i = 0; i < n_slots * mem.slot_bytes; ++i) b[i] = static_cast<uint8_t>(i * 7 + pl * 3 + t * 101);
      want[pl][t].assign(b, b + n_slots * mem.slot_bytes);
    }
  for (const wt::CopyCommand& c : plan.copies)
    for (int pl = 0; pl < 2; ++pl) {
      std::vector<uint8_t>& src = want[pl][c.src == Tier::device ? 0 : 1];
      std::vector<uint8_t>& dst = want[pl][c.dst == Tier::device ? 0 : 1];
      std::memcpy(dst.data() + c.dst_slot * mem.slot_bytes, src.data() + c.src_slot * mem.slot_bytes, c.bytes / 2);
    }
  wt::Event done;
  int64_t transfers = 0;
  REQUIRE(wt::issue_copies(*be, plan, mem, nullptr, &done, &transfers).is_ok());
  REQUIRE(be->synchronize(wt::Stream::copy).is_ok());
  CHECK(transfers == 2 * 4);  // 4 runs of 8 commands, 2 planes each
  for (int pl = 0; pl < 2; ++pl) {
    CHECK(std::memcmp(base(mem.device[pl]), want[pl][0].data(), want[pl][0].size()) == 0);
    CHECK(std::memcmp(base(mem.host[pl]), want[pl][1].data(), want[pl][1].size()) == 0);
  }
  for (int pl = 0; pl < 2; ++pl) {
    be->free(&mem.device[pl]);
    be->free(&mem.host[pl]);
  }
}

TEST_CASE("pager: invariants hold after random sequences of appends and swaps") {
  for (uint32_t seed : {1u, 2u, 3u, 42u}) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    const int32_t n_layer = 4, bt = 8, max_tokens = 200;
    const size_t row_bytes = 12;
    Pager p = make_pager(n_layer, max_tokens, bt, row_bytes, 4 * 7, 4 * 25);
    Shadow sh(n_layer);
    wt::SwapAccount sum;
    int n_oom = 0, n_swaps = 0;
    for (int step = 0; step < 300; ++step) {
      const int32_t n_tok = p.table(0).n_tokens();
      const int32_t nb = p.table(0).n_blocks();
      if (nb == 0 || rng() % 3 == 0) {  // append to every layer, all or nothing
        const int32_t rows = std::min<int32_t>(1 + static_cast<int32_t>(rng() % 12), max_tokens - n_tok);
        if (rows == 0) continue;
        const int32_t need = p.table(0).n_blocks_for(n_tok + rows) - nb;
        if (need * n_layer <= p.device_pool().n_free()) {
          for (int32_t l = 0; l < n_layer; ++l) {
            REQUIRE(p.append_rows(l, rows).is_ok());
            shadow_append(sh, p, l, n_tok, rows);
          }
        } else if (need > p.device_pool().n_free()) {
          const Snapshot before = snapshot(p);
          CHECK(p.append_rows(0, rows).code() == WT_ERR_OUT_OF_MEMORY);
          CHECK(snapshot(p) == before);
          ++n_oom;
        }
      } else {  // a decision for one of the two groups
        const int32_t g = static_cast<int32_t>(rng() % 2), begin = 2 * g, end = begin + 2;
        std::vector<int32_t> cand;
        for (int32_t b = 0; b < nb; ++b)
          if (rng() % std::max(1, nb / 3) == 0) cand.push_back(b);
        const std::vector<int32_t> pinned = nb > 1 ? std::vector<int32_t>{0, nb - 1} : std::vector<int32_t>{0};
        const double gammas[3] = {0.5, 0.9, 0.99};
        const Step s{cand, pinned, gammas[rng() % 3], rng() % 5 == 0};
        const Snapshot before = snapshot(p);
        Shadow sh_try = sh;
        SwapDecision d;
        SwapPlan plan;
        const wt::Status st = decide_and_swap(p, begin, end, s, &d, &plan);
        if (st.is_ok()) {
          const wt::SwapAccount want = expect(sh_try, p, begin, end, d);
          CHECK(plan.account == want);
          sum.add(want);
          sh = sh_try;
          n_swaps += d.keep ? 0 : 1;
        } else {
          CHECK(st.code() == WT_ERR_OUT_OF_MEMORY);
          CHECK(snapshot(p) == before);
          ++n_oom;
        }
      }
      const wt::Status inv = p.check_invariants();
      REQUIRE_MESSAGE(inv.is_ok(), inv.message());
      check_shadow(sh, p);
      // Each active block has one device slot, listed in logical order by paged_view.
      std::vector<wt::PagedBlock> view;
      for (int32_t l = 0; l < n_layer; ++l) {
        p.paged_view(l, &view);
        for (size_t i = 1; i < view.size(); ++i) CHECK(view[i - 1].row_begin + view[i - 1].n_rows <= view[i].row_begin);
      }
    }
    CHECK(p.totals() == sum);
    CHECK(n_swaps > 10);
    MESSAGE("seed " << seed << ": " << n_swaps << " swaps, " << n_oom << " refused for lack of slots");
  }
}

TEST_CASE("pager: decisions, swaps and paged views allocate nothing once their vectors are warm") {
  const int32_t bt = 8, n_blocks = 12;
  Pager p = make_pager(2, bt * n_blocks, bt, 32, 2 * n_blocks, 2 * n_blocks);
  append_all(p, bt * n_blocks - 3);
  const std::vector<int32_t> a{0, 1, 2, 3, 11}, b{0, 5, 6, 7, 11}, pinned{0, 11};
  SwapDecision d;
  SwapPlan plan;
  std::vector<int32_t> cur;
  std::vector<wt::PagedBlock> view;
  auto step = [&](const std::vector<int32_t>& cand, bool force) {
    p.active_blocks(0, &cur);
    wt::Status st = wt::decide_swap({cur, cand, pinned, 0.9, force}, &d);
    if (st.is_ok()) st = p.swap(0, 2, d, &plan);
    p.paged_view(1, &view);
    return st;
  };
  REQUIRE(step(a, true).is_ok());  // the first decision sizes the vectors
  REQUIRE(step(b, false).is_ok());
  REQUIRE(step(a, false).is_ok());
  wt::test::alloc_counter_arm(true);
  bool ok = true;
  for (int t = 0; t < 10; ++t) ok = step(t % 2 ? a : b, false).is_ok() && ok;
  wt::test::alloc_counter_arm(false);
  CHECK(ok);
  CHECK(wt::test::alloc_counter_count() == 0);
  CHECK(p.totals().n_decisions == 13);
}
