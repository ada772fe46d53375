// Freeing at exit after the driver's teardown (issue 28). On NVIDIA's driver a static object
// that owned a Vulkan model crashed the process after main returned: it was constructed
// before the first Vulkan call, so exit() destroyed it after the driver had torn itself
// down, and its free waited on a semaphore inside the dead driver. lavapipe survives such
// calls, so this test kills the driver itself (dead_driver.h): from the moment exit() would
// have torn a driver down, any Vulkan call of the library fails the process.
//
//   whittle_vulkan_exit [--validation]  a model and a context in a global constructed before
//       main, freed by its destructor at exit; a second context, in a static constructed
//       after the load, is freed at exit before the driver's teardown, through the driver.
//       --validation: under VK_LAYER_KHRONOS_validation (VK_INSTANCE_LAYERS).
//   whittle_vulkan_exit --backend [--validation]  the backend alone: with copies queued on
//       both streams, the exit flag set (backends/vulkan/process_exit.h), buffers are freed
//       and the backend destroyed with no Vulkan call; a free before it goes to the driver.
//
// Exit status 0: passed (the model case prints its PASS line at exit); 1: failed; 77:
// skipped, with the reason (no Vulkan device, no model file, no validation layer, or a
// shared libwhittle whose Vulkan calls the test cannot intercept).
#include <vulkan/vulkan.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/process_exit.h"
#include "dead_driver.h"
#include "whittle.h"

namespace {

constexpr int kSkip = 77;

int skip(const std::string& why) {
  std::printf("SKIPPED: %s\n", why.c_str());
  return kSkip;
}

int fail(const std::string& why) {
  std::fprintf(stderr, "FAIL: %s\n", why.c_str());
  return 1;
}

// A global: constructed before main, so before any Vulkan call, and destroyed by exit()
// after every handler registered later, the driver's teardown among them.
struct EarlyHolder {
  wt_model* model = nullptr;
  wt_context* ctx = nullptr;
  ~EarlyHolder() {
    if (!model) return;
    wt_context_free(ctx);
    wt_model_free(model);
    std::printf("PASS: a model and a context freed at exit after the driver's teardown made no Vulkan call\n");
  }
} g_early;

// Constructed after the load: exit() destroys it before the library's exit handler runs,
// so its context is freed through the (live) driver as before.
struct LateHolder {
  wt_context* ctx = nullptr;
  ~LateHolder() {
    const uint64_t before = wt::test::driver_memory_frees();
    wt_context_free(ctx);
    if (wt::test::driver_memory_frees() == before) {
      std::fprintf(stderr, "FAIL: a context freed at exit while the driver is up released no device memory\n");
      std::_Exit(1);
    }
  }
};

// What exit() does to a driver loaded after g_early was made: kill_driver is registered
// before the first Vulkan call, so it runs after the library's exit handler (registered at
// device creation) and before g_early's destructor, where NVIDIA's own teardown runs.
void driver_teardown() { wt::test::kill_driver(); }

bool have_validation_layer() {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (const VkLayerProperties& l : layers)
    if (std::strcmp(l.layerName, "VK_LAYER_KHRONOS_validation") == 0) return true;
  return false;
}

wt_status run_tokens(wt_context* ctx, const std::vector<wt_token>& prompt) {
  wt_status st = wt_context_prefill(ctx, prompt.data(), prompt.size());
  if (st != WT_OK) return st;
  return wt_context_decode(ctx, prompt.back());
}

int run_model() {
  const std::string path = std::string(WT_MODELS_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::ifstream(path).good()) return skip(path + " not present (scripts/fetch-model.sh fetches it)");
  std::atexit(&driver_teardown);
  wt_model_params mp = wt_model_default_params();
  mp.backend = WT_BACKEND_VULKAN;
  const wt_status st = wt_model_load(path.c_str(), &mp, &g_early.model);
  if (st == WT_ERR_UNSUPPORTED) {
    g_early.model = nullptr;
    return skip(std::string("no Vulkan model: ") + wt_last_error());
  }
  if (st != WT_OK) return fail(std::string("wt_model_load: ") + wt_last_error());

  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.n_threads = 2;
  wt_context* late_ctx = nullptr;
  if (wt_context_create(g_early.model, &cp, &g_early.ctx) != WT_OK ||
      wt_context_create(g_early.model, &cp, &late_ctx) != WT_OK)
    return fail(std::string("wt_context_create: ") + wt_last_error());
  const char text[] = "The quick brown fox jumps over the lazy dog";
  std::vector<wt_token> prompt(64);
  size_t n = 0;
  wt_tokenize_params tp = wt_tokenize_default_params();
  if (wt_tokenize(g_early.model, text, sizeof text - 1, &tp, prompt.data(), prompt.size(), &n) != WT_OK || n == 0)
    return fail(std::string("wt_tokenize: ") + wt_last_error());
  prompt.resize(n);
  // Both contexts have run, so each stream has submitted work and pipelines exist.
  if (run_tokens(g_early.ctx, prompt) != WT_OK || run_tokens(late_ctx, prompt) != WT_OK)
    return fail(std::string("prefill/decode: ") + wt_last_error());
  if (wt::test::driver_submits() == 0) {
    wt_context_free(late_ctx);
    return skip("the library's Vulkan calls do not reach this test's wrappers (a shared libwhittle?)");
  }
  static LateHolder late;
  late.ctx = late_ctx;
  std::printf("ran %zu prompt tokens and a decode step on two contexts; freeing at exit\n", n);
  return 0;
}

int run_backend(bool validation) {
  wt::BackendOptions o;
  o.validation = validation;
  std::unique_ptr<wt::Backend> b;
  const wt::Status st = wt::create_vulkan_backend(o, &b);
  if (st.code() == WT_ERR_UNSUPPORTED) return skip("no usable Vulkan device: " + st.message());
  if (!st.is_ok()) return fail("create_vulkan_backend: " + st.message());
  if (wt::test::driver_submits() != 0) return fail("a submit before any work");

  constexpr size_t kBytes = 1 << 20;
  wt::Buffer a, c, tmp;
  if (!b->alloc(kBytes, wt::MemoryKind::device, &a).is_ok() || !b->alloc(kBytes, wt::MemoryKind::device, &c).is_ok() ||
      !b->alloc(kBytes, wt::MemoryKind::device, &tmp).is_ok())
    return fail("alloc");
  std::memset(a.host, 1, kBytes);
  // Queued work on both streams, the compute copy waiting for the copy stream's.
  wt::Event e;
  if (!b->copy_async(wt::Stream::copy, c, a, kBytes).is_ok() || !b->record_event(wt::Stream::copy, &e).is_ok() ||
      !b->wait_event(wt::Stream::compute, e).is_ok() || !b->copy_async(wt::Stream::compute, a, c, kBytes).is_ok() ||
      !b->record_event(wt::Stream::compute, &e).is_ok())
    return fail("queueing copies");
  if (wt::test::driver_submits() == 0)
    return skip("the library's Vulkan calls do not reach this test's wrappers (a shared libwhittle?)");

  // Before the flag a free goes to the driver (and waits for the queued copies).
  const uint64_t frees = wt::test::driver_memory_frees();
  b->free(&tmp);
  if (wt::test::driver_memory_frees() != frees + 1) return fail("a free before exit did not release device memory");

  wt::vk::mark_process_exiting();  // what the library's exit handler does
  wt::test::kill_driver();         // and what exit() then does to the driver
  b->free(&a);
  if (a.host) return fail("free left the buffer set");
  b->free(&c);
  if (!b->synchronize(wt::Stream::compute).is_ok()) return fail("synchronize once exiting");
  b.reset();
  std::printf("PASS: with the exit flag set, free, synchronize and the backend's destruction made no Vulkan call\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bool backend = false, validation = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--backend") == 0) {
      backend = true;
    } else if (std::strcmp(argv[i], "--validation") == 0) {
      validation = true;
    } else {
      std::fprintf(stderr, "usage: %s [--backend] [--validation]\n", argv[0]);
      return 2;
    }
  }
  if (validation && !have_validation_layer())
    return skip("VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)");
  if (backend) return run_backend(validation);
  // The C API has no validation switch: the loader enables the layer for every instance.
  if (validation) setenv("VK_INSTANCE_LAYERS", "VK_LAYER_KHRONOS_validation", 1);
  return run_model();
}
