// The planner's data files (board profiles, model descriptions) are JSON, read with
// nlohmann's parser (Debian's header-only nlohmann-json3-dev), the project's one JSON reader.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "base/status.h"

namespace wt {

using Json = nlohmann::json;

// Parses text; `what` names the source in error messages ("boards.json").
// WT_ERR_FORMAT with "what:line:col: ..." on malformed input.
Status parse_json(const std::string& text, const std::string& what, Json* out);

// The member `key` of an object, or nullptr (also when j is not an object).
const Json* json_find(const Json& j, const char* key);

// Reads a whole file. WT_ERR_IO when it cannot be read.
Status read_text_file(const std::string& path, std::string* out);

}  // namespace wt
