#include "ops.h"

namespace wt {

const char* op_name(Op op) {
  switch (op) {
#define WT_OP(name) \
  case Op::name:    \
    return #name;
#include "ops.def"
#undef WT_OP
    case Op::count:
      break;
  }
  return "unknown";
}

}  // namespace wt
