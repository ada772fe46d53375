#include "json_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace wt {

Status parse_json(const std::string& text, const std::string& what, Json* out) {
  try {
    *out = Json::parse(text);
    return Status::ok();
  } catch (const Json::parse_error& e) {
    // e.byte: the 1-based offset where parsing stopped, as a line and column.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return error(WT_ERR_FORMAT, what + ":" + std::to_string(line) + ":" + std::to_string(col) + ": " + e.what());
  } catch (const Json::exception& e) {
    // The grammar holds but a value does not fit (a number such as 1e999: out_of_range),
    // found by fuzz_resume in the tools' copy of this reader.
    return error(WT_ERR_FORMAT, what + ": " + e.what());
  }
}

const Json* json_find(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

Status read_text_file(const std::string& path, std::string* out) {
  // A directory opens as a stream that reads nothing: say what it is, not "unexpected end".
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return error(WT_ERR_IO, "'" + path + "' is a directory, not a file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(WT_ERR_IO, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return error(WT_ERR_IO, "cannot read '" + path + "'");
  *out = ss.str();
  return Status::ok();
}

}  // namespace wt
