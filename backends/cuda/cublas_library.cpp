// cuBLAS through dlopen (cublas_library.h).
#include "cublas_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace wt::cuda {

namespace {

// The pointer type names the C cublasGemmEx: the cast does not compile where the headers'
// differs. It is unevaluated (decltype), so it makes no reference to the symbol that a link
// would need.
using CheckedGemmEx = decltype(static_cast<CublasGemmExFn>(&cublasGemmEx));

// The exported name of a cuBLAS function: the header maps some to versioned symbols
// (cublasCreate is cublasCreate_v2), so the name is the macro's expansion.
#define WT_CUBLAS_NAME_(f) #f
#define WT_CUBLAS_NAME(f) WT_CUBLAS_NAME_(f)

template <typename F>
bool find(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

// Asked of the loader by the library's name: the address of a cudart function can be the
// executable's own stub (a non-PIE program), whose folder is not CUDA's.
std::string cudart_folder() {
  const std::string name = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  void* lib = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return "";
  char origin[4096] = {};  // PATH_MAX on Linux
  const bool found = dlinfo(lib, RTLD_DI_ORIGIN, origin) == 0 && origin[0] != '\0';
  dlclose(lib);  // the NOLOAD handle only counts a reference; the library stays
  return found ? std::string(origin) + "/" : "";
}

const char* cublas_soname() {
#define WT_CUBLAS_SONAME_(v) "libcublas.so." #v
#define WT_CUBLAS_SONAME(v) WT_CUBLAS_SONAME_(v)
  return WT_CUBLAS_SONAME(CUBLAS_VER_MAJOR);
}

Status open_cublas(const char* const* names, CublasLibrary* out) {
  std::string tried;
  for (const char* const* n = names; *n; ++n) {
    // RTLD_LOCAL: its symbols stay out of the process's namespace (an application may link
    // another cuBLAS of its own); RTLD_NOW: a missing symbol shows here, not mid-prefill.
    void* lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (why ? why : *n);
      continue;
    }
    CublasLibrary l;
    const char* missing = !find(lib, WT_CUBLAS_NAME(cublasCreate), &l.create)         ? WT_CUBLAS_NAME(cublasCreate)
                          : !find(lib, WT_CUBLAS_NAME(cublasDestroy), &l.destroy)     ? WT_CUBLAS_NAME(cublasDestroy)
                          : !find(lib, WT_CUBLAS_NAME(cublasSetStream), &l.set_stream) ? WT_CUBLAS_NAME(cublasSetStream)
                          : !find(lib, WT_CUBLAS_NAME(cublasGemmEx), &l.gemm_ex)      ? WT_CUBLAS_NAME(cublasGemmEx)
                                                                                       : nullptr;
    if (missing) {
      dlclose(lib);
      return error(WT_ERR_UNSUPPORTED, std::string("cuda: ") + *n + " has no " + missing + " (another cuBLAS than " +
                                           cublas_soname() + " of the build's headers?)");
    }
    *out = l;
    return Status::ok();
  }
  return error(WT_ERR_UNSUPPORTED, std::string("cuda: cannot open cuBLAS, which the CUDA backend needs (") + tried +
                                       "): install it, or put its folder on LD_LIBRARY_PATH");
}

Status cublas_library(const CublasLibrary** out) {
  static std::once_flag once;
  static CublasLibrary lib;
  static Status opened = Status::ok();
  std::call_once(once, [] {
    const std::string folder = cudart_folder(), beside_cudart = folder + cublas_soname();
    const char* names[] = {cublas_soname(), folder.empty() ? nullptr : beside_cudart.c_str(), nullptr};
    opened = open_cublas(names, &lib);
  });
  if (!opened.is_ok()) return opened;
  *out = &lib;
  return Status::ok();
}

}  // namespace wt::cuda
