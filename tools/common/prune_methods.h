// The pruning methods and parameters the linked library has, as the tools list them (in
// --help, for --method all, in --list-methods): read through the C API
// (wt_prune_method_count, wt_prune_param_get), so a method added to the library appears
// in every tool without a change here.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace wt_tools {

// Every method's name in id order (full KV first); without_full: the pruning methods only.
std::vector<std::string> prune_method_names(bool without_full = false);
// "full, streaming, snapkv, ..." (joined with sep).
std::string prune_method_list(const char* sep = ", ");
// A markdown table of the methods (name, summary) and one of the parameters (name, whose,
// default, range, help).
void print_prune_methods(std::FILE* out);

}  // namespace wt_tools
