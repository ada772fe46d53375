// Counts heap allocations while armed (operator new, and under ASan every malloc), to show
// that a hot path allocates nothing. Outside ASan, where this binary replaces operator
// new/delete, it also keeps the number of live operator-new allocations (leak checks) and
// lets runtime/fault_injection.h fail any of them.
#pragma once

#include <cstdint>

namespace wt::test {

void alloc_counter_arm(bool on);
uint64_t alloc_counter_count();
// False under ASan: operator new is the sanitizer's, so neither live counts nor injected
// failures reach it.
bool alloc_counter_sees_operator_new();
// Live operator-new allocations of the whole process (0 under ASan).
int64_t alloc_counter_live();
// Whether an injected failure hit a nothrow operator new since the last call (and clears
// it): code that asks for nothrow memory may go on without it (std::stable_sort's buffer),
// so such a failure may leave the call successful.
bool alloc_counter_take_nothrow_failure();

}  // namespace wt::test
