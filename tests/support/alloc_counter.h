// Counts heap allocations made through operator new while armed (this test binary replaces
// the global operator new/delete to do so), to show that a hot path allocates nothing.
#pragma once

#include <cstdint>

namespace wt::test {

void alloc_counter_arm(bool on);
uint64_t alloc_counter_count();

}  // namespace wt::test
