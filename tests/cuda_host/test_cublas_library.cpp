// cuBLAS is opened with dlopen when a CUDA backend is made, not linked
// (backends/cuda/cublas_library.h says why): a process of a CUDA build carries no cuBLAS
// until then. These run on the host: the
// toolkit's libcublas opens without a GPU. ctest runs each case in a process of its own, so
// the first one sees the process as the library leaves it at start.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/cublas_library.h"

namespace {

bool mapped(const char* name) {
  std::ifstream maps("/proc/self/maps");
  const std::string all((std::istreambuf_iterator<char>(maps)), std::istreambuf_iterator<char>());
  return all.find(name) != std::string::npos;
}

}  // namespace

TEST_CASE("cuda: cuBLAS is not in the process until cublas_library opens it") {
  // The backend's factory is referenced, so the test links the whole backend (a static
  // library's object that nothing references stays out, and with it any direct cuBLAS call).
  static auto* volatile factory = &wt::create_cuda_backend;
  (void)factory;
  REQUIRE_FALSE(mapped("libcublas"));  // neither libcublas nor libcublasLt: nothing links them
  const wt::cuda::CublasLibrary* lib = nullptr;
  const wt::Status st = wt::cuda::cublas_library(&lib);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  REQUIRE(lib);
  CHECK((lib->create != nullptr));
  CHECK((lib->destroy != nullptr));
  CHECK((lib->set_stream != nullptr));
  CHECK((lib->gemm_ex != nullptr));
  CHECK(mapped(wt::cuda::cublas_soname()));
  const wt::cuda::CublasLibrary* again = nullptr;
  REQUIRE(wt::cuda::cublas_library(&again).is_ok());
  CHECK(again == lib);  // opened once
  CHECK(std::string(wt::cuda::cublas_soname()) == "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR));
}

// The second place cublas_library() looks: libcudart's folder, found through the loader (this
// build links the toolkit's libcudart, whose folder holds its libcublas).
TEST_CASE("cuda: cuBLAS opens from libcudart's folder where the loader does not find it") {
  const std::string folder = wt::cuda::cudart_folder();
  REQUIRE_MESSAGE(!folder.empty(), "libcudart's folder");
  CHECK(folder.back() == '/');
  const std::string beside = folder + wt::cuda::cublas_soname();
  const char* names[] = {"libwt-no-such-cublas.so.99", beside.c_str(), nullptr};
  wt::cuda::CublasLibrary lib;
  const wt::Status st = wt::cuda::open_cublas(names, &lib);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  CHECK((lib.gemm_ex != nullptr));
}

TEST_CASE("cuda: a cuBLAS that cannot be opened, or lacks a function, is WT_ERR_UNSUPPORTED naming it") {
  wt::cuda::CublasLibrary lib;
  const char* none[] = {"libwt-no-such-cublas.so.99", "/nonexistent/libcublas.so.99", nullptr};
  wt::Status st = wt::cuda::open_cublas(none, &lib);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("libwt-no-such-cublas.so.99") != std::string::npos);
  CHECK(st.message().find("/nonexistent/libcublas.so.99") != std::string::npos);
  CHECK(st.message().find("LD_LIBRARY_PATH") != std::string::npos);
  CHECK((lib.create == nullptr));
  const char* not_blas[] = {"libm.so.6", nullptr};
  st = wt::cuda::open_cublas(not_blas, &lib);
  CHECK(st.code() == WT_ERR_UNSUPPORTED);
  CHECK(st.message().find("libm.so.6 has no cublasCreate_v2") != std::string::npos);
  CHECK((lib.create == nullptr));
}
