// cuBLAS through dlopen (cublas_library.h).
#include "cublas_library.h"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <type_traits>

// The exported name of a cuBLAS function: the header maps some to versioned symbols
// (cublasCreate is cublasCreate_v2), so the name is the macro's expansion.
#define WT_CUBLAS_NAME_(f) #f
#define WT_CUBLAS_NAME(f) WT_CUBLAS_NAME_(f)
// "libcublas.so.<major>" from the headers' CUBLAS_VER_MAJOR.
#define WT_CUBLAS_SONAME_(v) "libcublas.so." #v
#define WT_CUBLAS_SONAME(v) WT_CUBLAS_SONAME_(v)

namespace wt::cuda {

namespace {

// The pointer type names the C cublasGemmEx: the cast does not compile where the headers'
// differs. It is unevaluated (decltype), so it makes no reference to the symbol that a link
// would need.
using CheckedGemmEx = decltype(static_cast<CublasGemmExFn>(&cublasGemmEx));

}  // namespace

std::string cudart_folder() {
  // By the library's name rather than by the address of a cudart function (dladdr), which
  // in a non-PIE program resolves to the program's own PLT entry, whose folder is the
  // program's, not libcudart's.
  const std::string name = "libcudart.so." + std::to_string(CUDART_VERSION / 1000);
  void* lib = dlopen(name.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (!lib) return "";
  char origin[4096] = {};  // PATH_MAX on Linux
  const bool found = dlinfo(lib, RTLD_DI_ORIGIN, origin) == 0 && origin[0] != '\0';
  dlclose(lib);  // the NOLOAD handle only counts a reference; the library stays
  return found ? std::string(origin) + "/" : "";
}

const char* cublas_soname() { return WT_CUBLAS_SONAME(CUBLAS_VER_MAJOR); }

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
    const char* missing = nullptr;  // the first function the library lacks
    auto find = [&](const char* name, auto* fn) {
      *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(dlsym(lib, name));
      if (!*fn && !missing) missing = name;
    };
    find(WT_CUBLAS_NAME(cublasCreate), &l.create);
    find(WT_CUBLAS_NAME(cublasDestroy), &l.destroy);
    find(WT_CUBLAS_NAME(cublasSetStream), &l.set_stream);
    find(WT_CUBLAS_NAME(cublasGemmEx), &l.gemm_ex);
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
