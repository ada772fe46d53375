#include "flags.h"
#include "rope_flags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace wt_tools {

bool Flags::fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return false;
}

bool Flags::text(const char** out) {
  if (i_ + 1 >= argc_) return fail(std::string(argv_[i_]) + " needs a value");
  *out = argv_[++i_];
  return true;
}

bool Flags::text(std::string* out) {
  const char* v = nullptr;
  if (!text(&v)) return false;
  *out = v;
  return true;
}

bool Flags::number(double* out) {
  const std::string name = flag();
  const char* v = nullptr;
  if (!text(&v)) return false;
  char* end = nullptr;
  *out = std::strtod(v, &end);
  if (end == v || *end != '\0') return fail(name + " expects a number, got '" + v + "'");
  return true;
}

bool Flags::whole(long lo, long hi, int* out) {
  const std::string name = flag();
  const char* v = nullptr;
  if (!text(&v)) return false;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || x < lo || x > hi)
    return fail(name + " '" + v + "' is not a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  *out = static_cast<int>(x);
  return true;
}

bool Flags::key_value(std::pair<std::string, std::string>* out) {
  const std::string name = flag();
  const char* v = nullptr;
  if (!text(&v)) return false;
  const char* eq = std::strchr(v, '=');
  if (!eq || eq == v) return fail(name + " expects KEY=VALUE, got '" + v + "'");
  *out = {std::string(v, eq), std::string(eq + 1)};
  return true;
}

bool Flags::backend(wt_backend_kind* out) {
  const std::string name = flag();
  const char* v = nullptr;
  if (!text(&v)) return false;
  if (!std::strcmp(v, "cpu")) *out = WT_BACKEND_CPU;
  else if (!std::strcmp(v, "vulkan")) *out = WT_BACKEND_VULKAN;
  else if (!std::strcmp(v, "cuda")) *out = WT_BACKEND_CUDA;
  else return fail(name + " expects cpu, vulkan or cuda, got '" + v + "'");
  return true;
}

namespace {
// The KV cache types by the names the tools take, both directions from one table.
struct KvTypeName {
  const char* name;
  wt_kv_type type;
};
constexpr KvTypeName kKvTypeNames[] = {{"f32", WT_KV_F32}, {"f16", WT_KV_F16}, {"q8_0", WT_KV_Q8_0}};
}  // namespace

bool kv_type_from_name(const std::string& name, wt_kv_type* out) {
  for (const KvTypeName& k : kKvTypeNames)
    if (name == k.name) {
      *out = k.type;
      return true;
    }
  return false;
}

const char* kv_type_name(wt_kv_type type) {
  for (const KvTypeName& k : kKvTypeNames)
    if (type == k.type) return k.name;
  return "?";
}

bool Flags::kv_type(wt_kv_type* out) {
  const std::string name = flag();
  const char* v = nullptr;
  if (!text(&v)) return false;
  if (!kv_type_from_name(v, out)) return fail(name + " expects f32, f16 or q8_0, got '" + v + "'");
  return true;
}

bool Flags::rope(wt_model_params* mp) {
  const std::string name = flag();
  std::string v, error;
  if (!text(&v)) return false;
  return apply_rope_flag(name, v, mp, &error) || fail(error);
}

}  // namespace wt_tools
