// An enum a C caller stored (a params field, an argument) as the integer it holds: reading
// it as the enum type is undefined for values outside the enumerators' range, which is
// what a check for such values must be able to see.
#pragma once

#include <cstdint>
#include <cstring>

namespace wt {

template <typename E>
int32_t raw_value(const E& field) {
  static_assert(sizeof(E) == sizeof(int32_t));
  int32_t v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

}  // namespace wt
