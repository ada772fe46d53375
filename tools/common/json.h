// The tools' one JSON writer (and reader): a small JSON value built in memory, written as one
// JSON document, as JSON lines, or as CSV (one row per record, nested values as JSON text in
// the cell). Strings are written as valid UTF-8 whatever they hold (a model's name or output
// can hold any bytes). Object keys keep their insertion order so files diff cleanly between
// runs. whittle-bench writes its records with it, whittle-plan its --json plan.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace wt_tools {

class Json {
 public:
  enum class Type { null, boolean, integer, number, string, array, object };

  Json() = default;
  Json(bool b) : type_(Type::boolean), b_(b) {}
  Json(int v) : type_(Type::integer), i_(v) {}
  Json(int64_t v) : type_(Type::integer), i_(v) {}
  Json(uint64_t v) : type_(Type::integer), i_(static_cast<int64_t>(v)) {}
  Json(double v);  // NaN and infinities become null: JSON has no spelling for them
  Json(const char* s) : type_(Type::string), s_(s) {}
  Json(std::string s) : type_(Type::string), s_(std::move(s)) {}

  static Json array() { Json j; j.type_ = Type::array; return j; }
  static Json object() { Json j; j.type_ = Type::object; return j; }
  template <class T>
  static Json array_of(const std::vector<T>& v) {
    Json j = array();
    for (const T& x : v) j.push(Json(x));
    return j;
  }

  Type type() const { return type_; }
  Json& push(Json v);                                 // arrays
  Json& set(const std::string& key, Json v);          // objects: replaces an existing key
  const Json* find(const std::string& key) const;     // objects; nullptr when absent
  const std::vector<std::pair<std::string, Json>>& items() const { return items_; }
  const std::vector<Json>& elems() const { return elems_; }  // arrays
  bool boolean() const { return type_ == Type::boolean && b_; }
  const std::string& str() const { return s_; }  // strings
  double number() const;                          // numbers and integers; NaN otherwise

  std::string dump() const;  // compact, one line

 private:
  void dump_to(std::string& out) const;

  Type type_ = Type::null;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> elems_;
  std::vector<std::pair<std::string, Json>> items_;
};

// Reads one JSON document (json_parse.cpp: nlohmann's parser); false with *error naming the
// byte offset.
bool parse_json(const std::string& text, Json* out, std::string* error);
bool read_json_file(const std::string& path, Json* out, std::string* error);

// s with every invalid UTF-8 byte replaced by U+FFFD (model output can end mid-character).
std::string valid_utf8(const std::string& s);

// Writers; false with *error set when the file cannot be written.
bool write_json_document(const std::string& path, const Json& meta, const std::vector<Json>& records, std::string* error);
bool write_jsonl(const std::string& path, const std::vector<Json>& records, std::string* error);
bool write_csv(const std::string& path, const std::vector<Json>& records, std::string* error);

}  // namespace wt_tools
