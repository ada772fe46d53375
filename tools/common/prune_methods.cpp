#include "prune_methods.h"

#include "whittle.h"

namespace wt_tools {

std::vector<std::string> prune_method_names(bool without_full) {
  std::vector<std::string> names;
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method m = WT_PRUNE_FULL;
    if (wt_prune_method_at(i, &m) != WT_OK || (without_full && m == WT_PRUNE_FULL)) continue;
    names.emplace_back(wt_prune_method_name(m));
  }
  return names;
}

std::string prune_method_list(const char* sep) {
  std::string s;
  for (const std::string& n : prune_method_names()) s += (s.empty() ? "" : sep) + n;
  return s;
}

void print_prune_methods(std::FILE* out) {
  std::fprintf(out, "| method | what it does |\n|---|---|\n");
  for (int32_t i = 0; i < wt_prune_method_count(); ++i) {
    wt_prune_method m = WT_PRUNE_FULL;
    if (wt_prune_method_at(i, &m) == WT_OK)
      std::fprintf(out, "| %s | %s |\n", wt_prune_method_name(m), wt_prune_method_summary(m));
  }
  std::fprintf(out, "\n| parameter (--prune-param K=V) | method | default | range | meaning |\n|---|---|---|---|---|\n");
  for (int32_t i = 0; i < wt_prune_param_count(); ++i) {
    wt_prune_param_info p;
    p.struct_size = sizeof p;
    if (wt_prune_param_get(i, &p) != WT_OK) continue;
    const char* whose = p.method < 0 ? "all" : wt_prune_method_name(static_cast<wt_prune_method>(p.method));
    std::string def;
    if (p.type == WT_PRUNE_PARAM_METHOD) {
      def = wt_prune_method_name(static_cast<wt_prune_method>(static_cast<int32_t>(p.default_value)));
    } else if (p.type == WT_PRUNE_PARAM_POOL) {
      def = "default";
    } else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", p.default_value);
      def = buf;
    }
    std::fprintf(out, "| %s | %s | %s | %s | %s |\n", p.name, whose, def.c_str(), p.range, p.help);
  }
}

}  // namespace wt_tools
