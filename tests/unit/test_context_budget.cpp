// The memory a context may take (runtime/engine/context_budget.h): the caller's budget bounds
// every byte; the memory found free bounds what lives there — all of it on unified memory;
// on a discrete device the device's free memory the device parts and the host's the pinned
// host parts (the KV pager's host pool of every block among them). A pager whose host pool
// outgrows the device's free memory is what the pager is for, and must not be refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "runtime/engine/context_budget.h"
#include "runtime/model/gguf.h"
#include "runtime/model/model.h"
#include "support/gguf_writer.h"

namespace {

using namespace wt;

// An arena of 100 bytes (30 of them pinned host memory) and a pager: device pool 50, host
// pool 400 (every block).
ArenaBytes paged_arena() {
  ArenaBytes a;
  a.total_bytes = 100;
  a.host_bytes = 30;
  a.pager_device_bytes = 50;
  a.pager_host_bytes = 400;
  return a;
}

MemoryLimit found(uint64_t available, bool device_only, uint64_t budget = 0, uint64_t host_available = 0) {
  MemoryLimit m;
  m.budget_bytes = budget;
  m.available_bytes = available;
  m.device_only = device_only;
  m.host_available_bytes = host_available;
  m.source = "detect (test)";
  return m;
}

// The tiny Llama with two layers (tests/support/gguf_writer.h), loaded from memory.
std::unique_ptr<Model> two_layer_tiny() {
  test::TinyModelOptions o;
  o.n_layer = 2;
  const std::vector<uint8_t> bytes = test::make_tiny_llama(o).build();
  std::shared_ptr<GgufFile> file;
  REQUIRE(GgufFile::parse_memory(bytes.data(), bytes.size(), &file).is_ok());
  std::unique_ptr<Model> model;
  REQUIRE(load_model_from_gguf(file, LoadOptions{}, &model).is_ok());
  return model;
}

}  // namespace

TEST_CASE("budget: a discrete device's free memory bounds the device parts and the budget bounds all") {
  const ArenaBytes a = paged_arena();
  CHECK(device_bytes(a) == 120);
  CHECK(pinned_host_bytes(a) == 430);
  CHECK(a.all_bytes() == 550);
  // Discrete: 120 device bytes in 120 free; the host pool does not count.
  CHECK(found(120, true).fits(a));
  CHECK_FALSE(found(119, true).fits(a));
  // Unified: every byte is the same memory.
  CHECK_FALSE(found(549, false).fits(a));
  CHECK(found(550, false).fits(a));
  // The caller's budget bounds all of it, on any device.
  CHECK_FALSE(found(1000, true, 549).fits(a));
  CHECK(found(1000, true, 550).fits(a));
  CHECK(found(0, false, 550).fits(a));
  CHECK(MemoryLimit{}.fits(a));
  // The host's free memory bounds the pinned host parts of a discrete device's context.
  CHECK(found(120, true, 0, 430).fits(a));
  CHECK_FALSE(found(120, true, 0, 429).fits(a));
  CHECK(found(549, false, 0, 1).fits(a) == false);  // unified: no separate host bound
  CHECK(found(550, false, 0, 1).fits(a));
  // The bound a message names: the one exceeded most.
  const MemoryLimit::Bound device = found(100, true, 600, 1000).bound(a);
  CHECK(device.part == MemoryLimit::Part::device);
  CHECK(device.counted == 120);
  CHECK(device.limit == 100);
  CHECK(device.source.find("device memory available") != std::string::npos);
  const MemoryLimit::Bound budget = found(1000, true, 500, 1000).bound(a);
  CHECK(budget.part == MemoryLimit::Part::all);
  CHECK(budget.counted == 550);
  CHECK(budget.limit == 500);
  CHECK(budget.source == "memory_budget_bytes");
  const MemoryLimit::Bound host = found(1000, true, 600, 400).bound(a);
  CHECK(host.part == MemoryLimit::Part::host);
  CHECK(host.counted == 430);
  CHECK(host.limit == 400);
  // Both short: the larger shortfall (device 120 of 100, budget 550 of 540: 20 against 10).
  CHECK(found(100, true, 540).bound(a).part == MemoryLimit::Part::device);
}

TEST_CASE("budget: a context refused on a discrete device names its device memory and the parts that are short") {
  const std::unique_ptr<Model> model = two_layer_tiny();
  std::unique_ptr<Backend> cpu;
  REQUIRE(create_cpu_backend(BackendOptions{}, &cpu).is_ok());
  ArenaInputs in;
  in.hp = &model->hp;
  in.layers = &model->layers;
  in.output = &model->output;
  in.n_ctx = 256;
  in.n_batch_rows = 256;  // set: not lowered
  in.backend = cpu.get();
  const ArenaBytes a = lay_out_arena(in, ArenaBases{}, nullptr);
  REQUIRE(a.host_bytes > 0);  // logits and index arrays: pinned host memory on a device
  CHECK(check_arena_budget(in, a, found(device_bytes(a), true)).is_ok());
  CHECK_FALSE(check_arena_budget(in, a, found(a.all_bytes() - 1, false)).is_ok());
  const Status st = check_arena_budget(in, a, found(device_bytes(a) - 1, true));
  CHECK(st.code() == WT_ERR_BUDGET);
  CAPTURE(st.message());
  CHECK(st.message().find("of it device memory") != std::string::npos);
  CHECK(st.message().find("device memory available now") != std::string::npos);
  CHECK(st.message().find("short by 0.0 MiB") != std::string::npos);  // one byte
  // The logits and index arrays are pinned host memory: short there, the message says so.
  const Status host = check_arena_budget(in, a, found(device_bytes(a), true, 0, a.host_bytes - 1));
  CHECK(host.code() == WT_ERR_BUDGET);
  CAPTURE(host.message());
  CHECK(host.message().find("of it pinned host memory") != std::string::npos);
}

// A device part without a host address (a discrete GPU) takes pinned staging in the host
// part for what the host moves in and out of it: a layer's KV or the anchors, whichever is
// larger, at most kTransferBytes; the device part is the same size as without.
TEST_CASE("budget: an unmapped device part adds the transfer staging to the host part only") {
  const std::unique_ptr<Model> model = two_layer_tiny();
  std::unique_ptr<Backend> cpu;
  REQUIRE(create_cpu_backend(BackendOptions{}, &cpu).is_ok());
  const Hparams& hp = model->hp;
  for (const int32_t n_ctx : {256, 1 << 17}) {  // one layer's K: 16 KiB; 8 MiB, over the cap
    CAPTURE(n_ctx);
    ArenaInputs in;
    in.hp = &hp;
    in.layers = &model->layers;
    in.output = &model->output;
    in.n_ctx = n_ctx;
    in.n_batch_rows = 256;
    in.kv_type = DType::f16;
    in.backend = cpu.get();
    const ArenaBytes mapped = lay_out_arena(in, ArenaBases{}, nullptr);
    in.device_part_unmapped = true;
    const ArenaBytes unmapped = lay_out_arena(in, ArenaBases{}, nullptr);
    const uint64_t layer = 2ull * static_cast<uint64_t>(hp.head_dim) * static_cast<uint64_t>(hp.n_head_kv) *
                           static_cast<uint64_t>(n_ctx);  // f16 K of one layer
    const uint64_t staging = std::min<uint64_t>(kTransferBytes, (layer + 63) / 64 * 64);
    CHECK(unmapped.host_bytes - mapped.host_bytes == staging);
    CHECK(unmapped.total_bytes - mapped.total_bytes == staging);
    CHECK(unmapped.index_bytes - mapped.index_bytes == staging);
    // Placed: the staging lies in the host part.
    std::vector<char> dev(unmapped.total_bytes - unmapped.host_bytes), host(unmapped.host_bytes);
    ArenaViews v;
    lay_out_arena(in, ArenaBases{dev.data(), host.data()}, &v);
    REQUIRE(v.transfer != nullptr);
    CHECK(v.transfer_bytes == staging);
    CHECK(v.transfer >= host.data());
    CHECK(v.transfer + v.transfer_bytes <= host.data() + host.size());
  }
}
