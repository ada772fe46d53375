// create_cuda_backend in builds without CUDA: always declared, so callers need no #if.
#include "backend.h"

#if !defined(WHITTLE_CUDA)
namespace wt {

Status create_cuda_backend(const BackendOptions&, std::unique_ptr<Backend>*) {
  return error(WT_ERR_UNSUPPORTED, "cuda: this build has no CUDA backend (configure with -DWHITTLE_CUDA=ON)");
}

}  // namespace wt
#endif
