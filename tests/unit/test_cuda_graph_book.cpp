// The CUDA backend's step-graph bookkeeping (backends/cuda/graph_book.h), on the CPU: when a
// captured segment is replayed through an updated instance, when it is instantiated anew,
// and when an instance is remade because CUDA refused the update.
#include <doctest/doctest.h>

#include <cstdint>
#include <initializer_list>

#include "backends/cuda/graph_book.h"
#include "kernels/ops.h"

using wt::Op;
using wt::cuda::GraphBook;

namespace {

GraphBook::Decision segment(GraphBook& b, std::initializer_list<Op> ops) {
  b.begin();
  for (Op op : ops) b.add(static_cast<uint32_t>(op));
  return b.end();
}

// A decode layer's ops in order, as forward_llama.cpp launches them (no pager, no policy).
const std::initializer_list<Op> kLayer = {Op::rmsnorm, Op::matmul, Op::matmul, Op::matmul, Op::rope, Op::rope,
                                          Op::copy_rows, Op::copy_rows, Op::attention_decode, Op::matmul, Op::add,
                                          Op::rmsnorm, Op::matmul, Op::matmul, Op::swiglu, Op::matmul, Op::add};

}  // namespace

TEST_CASE("cuda graph book: a decode step is instantiated once, then updated and replayed") {
  GraphBook b;
  const GraphBook::Decision first = segment(b, kLayer);
  CHECK(first.action == GraphBook::Action::instantiate);
  CHECK_FALSE(first.evict);
  for (int step = 0; step < 5; ++step) {
    // Same ops; positions, lengths and key lists differ, which only the update sees.
    const GraphBook::Decision d = segment(b, kLayer);
    CHECK(d.action == GraphBook::Action::update);
    CHECK(d.slot == first.slot);
    b.updated(true);
  }
  CHECK(b.counters().segments == 6);
  CHECK(b.counters().launches == 6 * kLayer.size());
  CHECK(b.counters().instances == 1);
  CHECK(b.counters().replays == 5);
  CHECK(b.counters().recaptures == 0);
}

TEST_CASE("cuda graph book: a refused update is a recapture in the same slot") {
  GraphBook b;
  const int slot = segment(b, kLayer).slot;
  const GraphBook::Decision d = segment(b, kLayer);
  REQUIRE(d.action == GraphBook::Action::update);
  b.updated(false);  // e.g. an attention call with no keys: one kernel fewer
  CHECK(b.counters().recaptures == 1);
  CHECK(b.counters().replays == 0);
  // The slot keeps the key: the next step updates the remade instance.
  const GraphBook::Decision next = segment(b, kLayer);
  CHECK(next.action == GraphBook::Action::update);
  CHECK(next.slot == slot);
}

TEST_CASE("cuda graph book: other ops are another graph, never an update of this one") {
  GraphBook b;
  const GraphBook::Decision plain = segment(b, kLayer);
  // A policy that asks for scores in decode ends a segment where the host reads them: the
  // segments around it hold other ops, so they get instances of their own.
  const GraphBook::Decision before = segment(b, {Op::rmsnorm, Op::matmul, Op::matmul, Op::matmul, Op::rope});
  CHECK(before.action == GraphBook::Action::instantiate);
  CHECK(before.slot != plain.slot);
  const GraphBook::Decision scores = segment(b, {Op::window_scores, Op::block_scores});
  CHECK(scores.action == GraphBook::Action::instantiate);
  // Order matters: the same ops in another order are another key.
  GraphBook order;
  order.begin();
  order.add(static_cast<uint32_t>(Op::add));
  order.add(static_cast<uint32_t>(Op::rope));
  const uint64_t ab = order.key();
  order.begin();
  order.add(static_cast<uint32_t>(Op::rope));
  order.add(static_cast<uint32_t>(Op::add));
  CHECK(order.key() != ab);
}

TEST_CASE("cuda graph book: the pager's per-layer segments share slots; the least recently used is evicted") {
  GraphBook b;
  // Paged decode: every layer waits on the copy stream and records an event, so a step is
  // segments of two kinds, alternating; both keep their instance.
  const std::initializer_list<Op> attn = {Op::copy_rows, Op::copy_rows, Op::attention_decode};
  const std::initializer_list<Op> rest = {Op::matmul, Op::add, Op::rmsnorm, Op::matmul, Op::matmul, Op::swiglu};
  const int sa = segment(b, attn).slot, sr = segment(b, rest).slot;
  CHECK(sa != sr);
  for (int layer = 0; layer < 30; ++layer) {
    CHECK(segment(b, attn).action == GraphBook::Action::update);
    CHECK(segment(b, rest).action == GraphBook::Action::update);
  }
  CHECK(b.counters().evictions == 0);
  CHECK(b.counters().instances == 2);

  // Eight more kinds: the ninth distinct key evicts the least recently used (attn, then
  // rest were used last, so neither goes first).
  GraphBook::Decision last;
  for (int k = 0; k < GraphBook::kSlots - 2; ++k) {
    last = segment(b, {Op::argmax, Op::add, static_cast<Op>(k)});
    CHECK_FALSE(last.evict);
  }
  CHECK(segment(b, attn).action == GraphBook::Action::update);  // attn is now the most recent
  const GraphBook::Decision evicting = segment(b, {Op::pool1d, Op::topk});
  CHECK(evicting.action == GraphBook::Action::instantiate);
  CHECK(evicting.evict);
  CHECK(evicting.slot == sr);  // rest: the least recently used
  CHECK(b.counters().evictions == 1);
  CHECK(segment(b, rest).action == GraphBook::Action::instantiate);  // gone, so made anew
}

TEST_CASE("cuda graph book: a forgotten slot is instantiated again") {
  GraphBook b;
  const GraphBook::Decision d = segment(b, kLayer);
  b.forget(d.slot);  // instantiation failed
  const GraphBook::Decision again = segment(b, kLayer);
  CHECK(again.action == GraphBook::Action::instantiate);
  CHECK_FALSE(again.evict);
  b.forget(-1);  // out of range: ignored
  b.forget(GraphBook::kSlots);
  CHECK(segment(b, kLayer).action == GraphBook::Action::update);
}

TEST_CASE("cuda graph book: a step cut into segments keeps an instance per position") {
  // WT_CUDA_STEP_SEGMENT: a step's equal runs of ops (a layer after a layer) are separate
  // segments; their positions keep them on separate instances, and the next step updates
  // each in place instead of updating one instance twice while its first launch may still
  // be queued.
  GraphBook b;
  b.begin(1);
  for (Op op : kLayer) b.add(static_cast<uint32_t>(op));
  const GraphBook::Decision first = b.end();
  b.begin(2);
  for (Op op : kLayer) b.add(static_cast<uint32_t>(op));
  const GraphBook::Decision second = b.end();
  CHECK(first.action == GraphBook::Action::instantiate);
  CHECK(second.action == GraphBook::Action::instantiate);
  CHECK(first.slot != second.slot);
  for (uint32_t position : {1u, 2u}) {
    b.begin(position);
    for (Op op : kLayer) b.add(static_cast<uint32_t>(op));
    const GraphBook::Decision d = b.end();
    CHECK(d.action == GraphBook::Action::update);
    CHECK(d.slot == (position == 1 ? first.slot : second.slot));
    b.updated(true);
  }
  CHECK(b.counters().instances == 2);
  CHECK(b.counters().replays == 2);
  // Position 0 is the key of the ops alone: a whole step that is not cut.
  b.begin(0);
  for (Op op : kLayer) b.add(static_cast<uint32_t>(op));
  CHECK(b.end().action == GraphBook::Action::instantiate);
}
