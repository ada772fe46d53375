// Full KV: no pruning, the baseline every method is measured against. No policy: the
// engine keeps every KV row and asks nothing.
#include "runtime/prune/registry.h"

namespace wt::prune_methods_registry {

const PruneMethodSpec& full() {
  static const PruneMethodSpec spec{.id = WT_PRUNE_FULL,
                                    .name = "full",
                                    .summary = "full KV: no pruning (the baseline)",
                                    .params = {},
                                    .window = 8,
                                    .pool_kernel = 7,
                                    .pool = WT_POOL_AVG,
                                    .resolve = nullptr,
                                    .check = nullptr,
                                    .make = nullptr};
  return spec;
}

}  // namespace wt::prune_methods_registry
