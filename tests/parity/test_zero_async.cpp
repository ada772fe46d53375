// Every device backend's zero_async (backend.h) through the shared check
// (tests/support/zero_async_check.h; the CPU's is a unit test): Vulkan's vkCmdFillBuffer on
// mapped memory and on unmapped device_only memory, CUDA's cudaMemsetAsync.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "backend_open.h"
#include "harness.h"
#include "tests/support/zero_async_check.h"

namespace {

using namespace wt;

TEST_CASE("zero_async: whole words of a view zeroed in stream order on every device backend" *
          doctest::test_suite("parity")) {
  struct Variant {
    parity::BackendMaker maker;
    bool unmapped;
  };
  std::vector<Variant> variants;
  for (const parity::BackendMaker& mk : parity::compiled_backends()) {
    variants.push_back({mk, false});
    // lavapipe maps device_only memory unless told not to; a discrete card's is unmapped.
    if (std::string(mk.name) == "vulkan") variants.push_back({mk, true});
  }
  for (const Variant& v : variants) {
    const std::string name = std::string(v.maker.name) + (v.unmapped ? " (device_only unmapped)" : "");
    CAPTURE(name);
    BackendOptions o;
    o.validation = name.rfind("vulkan", 0) == 0 && parity::validation_requested();
    o.unmapped_device_only = v.unmapped;
    std::unique_ptr<Backend> b;
    if (!parity::open_backend(v.maker, o, name, &b)) continue;
    test::check_zero_async(*b);
    REQUIRE(b->synchronize(Stream::compute).is_ok());  // reports what the validation layer found
  }
}

}  // namespace
