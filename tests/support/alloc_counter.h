// Counts heap allocations while armed (operator new, and under ASan every malloc), to show
// that a hot path allocates nothing.
#pragma once

#include <cstdint>

namespace wt::test {

void alloc_counter_arm(bool on);
uint64_t alloc_counter_count();

}  // namespace wt::test
