/* C wrappers for fuzz_api (c_caller.c): the library as a C application calls it. */
#ifndef WHITTLE_FUZZ_C_CALLER_H
#define WHITTLE_FUZZ_C_CALLER_H

#include <stdint.h>

#include "whittle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* wt_prune_method_name with any int as the method. */
const char* wt_fuzz_prune_method_name(int32_t method);

#ifdef __cplusplus
}
#endif

#endif
