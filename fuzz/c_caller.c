/* Calls that only C may make: an enum argument holding any int. C converts the int to the
 * enum type as it is; C++ (the harnesses) cannot pass such a value without undefined
 * behaviour of its own. */
#include "c_caller.h"

const char* wt_fuzz_prune_method_name(int32_t method) { return wt_prune_method_name((wt_prune_method)method); }
