// A minimal JSON reader for the planner's data files (board profiles, model descriptions):
// objects, arrays, strings (with \" \\ \/ \n \t \uXXXX escapes), numbers, true/false/null.
// Errors name the line and column. Not a general-purpose library: no streaming, no writer.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace wt {

struct JsonMember;

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<JsonMember> object;  // in file order

  // The member `key` of an object, or nullptr.
  const JsonValue* find(const std::string& key) const;
};

// One member of an object. Not a std::pair: a vector may hold the still incomplete
// JsonValue, a pair may not (clang with libstdc++ refuses to compile it).
struct JsonMember {
  std::string key;
  JsonValue value;
};

// Parses text; `what` names the source in error messages ("boards.json").
// WT_ERR_FORMAT with "what:line:col: ..." on malformed input.
Status parse_json(const std::string& text, const std::string& what, JsonValue* out);

// Reads a whole file. WT_ERR_IO when it cannot be read.
Status read_text_file(const std::string& path, std::string* out);

}  // namespace wt
