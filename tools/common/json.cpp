#include "json.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <fstream>

namespace wt_tools {

Json::Json(double v) {
  if (std::isfinite(v)) {
    type_ = Type::number;
    d_ = v;
  }
}

double Json::number() const {
  if (type_ == Type::number) return d_;
  if (type_ == Type::integer) return static_cast<double>(i_);
  return std::nan("");
}

Json& Json::push(Json v) {
  elems_.push_back(std::move(v));
  return *this;
}

Json& Json::set(const std::string& key, Json v) {
  for (auto& kv : items_) {
    if (kv.first == key) {
      kv.second = std::move(v);
      return *this;
    }
  }
  items_.emplace_back(key, std::move(v));
  return *this;
}

const Json* Json::find(const std::string& key) const {
  for (const auto& kv : items_)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 (a model can emit a partial sequence).
// Strict, as Python's decoder: no overlong forms, surrogates or code points past U+10FFFF.
size_t utf8_len(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  if (n == 0 || i + n > s.size()) return 0;
  const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if (c1 < lo || c1 > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return 0;
  return n;
}

void escape_to(const std::string& s, std::string& out) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_len(s, i);
    if (n == 0) {
      out += "\\ufffd";  // invalid UTF-8 byte: the replacement character
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(s, i, n);
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
    i += n;
  }
  out += '"';
}

// %.17g always round-trips a double; shorter spellings are tried first for readability.
void number_to(double d, std::string& out) {
  char buf[32];
  for (int prec = 10; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  out += buf;
}

bool open_for_write(const std::string& path, std::ofstream& f, std::string* error) {
  f.open(path, std::ios::binary | std::ios::trunc);
  if (!f) *error = "cannot write " + path;
  return static_cast<bool>(f);
}

bool finish(std::ofstream& f, const std::string& path, std::string* error) {
  f.flush();
  if (!f) *error = "error writing " + path;
  return static_cast<bool>(f);
}

// A CSV cell: scalars as text (null empty, booleans true/false), nested values as JSON;
// quoted when it holds a comma, quote or line break.
std::string csv_cell(const Json& v) {
  if (v.type() == Json::Type::null) return "";
  const std::string s = v.type() == Json::Type::string ? v.str() : v.dump();
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

}  // namespace

std::string valid_utf8(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s, i, n);
      i += n;
    }
  }
  return out;
}

void Json::dump_to(std::string& out) const {
  switch (type_) {
    case Type::null: out += "null"; break;
    case Type::boolean: out += b_ ? "true" : "false"; break;
    case Type::integer: out += std::to_string(i_); break;
    case Type::number: number_to(d_, out); break;
    case Type::string: escape_to(s_, out); break;
    case Type::array:
      out += '[';
      for (size_t i = 0; i < elems_.size(); ++i) {
        if (i) out += ',';
        elems_[i].dump_to(out);
      }
      out += ']';
      break;
    case Type::object:
      out += '{';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += ',';
        escape_to(items_[i].first, out);
        out += ':';
        items_[i].second.dump_to(out);
      }
      out += '}';
      break;
  }
}

std::string Json::dump() const {
  std::string s;
  dump_to(s);
  return s;
}

bool write_json_document(const std::string& path, const Json& meta, const std::vector<Json>& records, std::string* error) {
  std::ofstream f;
  if (!open_for_write(path, f, error)) return false;
  f << "{\"meta\":" << meta.dump() << ",\n\"records\":[\n";
  for (size_t i = 0; i < records.size(); ++i) f << records[i].dump() << (i + 1 < records.size() ? ",\n" : "\n");
  f << "]}\n";
  return finish(f, path, error);
}

bool write_jsonl(const std::string& path, const std::vector<Json>& records, std::string* error) {
  std::ofstream f;
  if (!open_for_write(path, f, error)) return false;
  for (const Json& r : records) f << r.dump() << "\n";
  return finish(f, path, error);
}

bool write_csv(const std::string& path, const std::vector<Json>& records, std::string* error) {
  std::vector<std::string> columns;  // the union of keys, in first-seen order
  for (const Json& r : records)
    for (const auto& kv : r.items())
      if (std::find(columns.begin(), columns.end(), kv.first) == columns.end()) columns.push_back(kv.first);
  std::ofstream f;
  if (!open_for_write(path, f, error)) return false;
  for (size_t c = 0; c < columns.size(); ++c) f << (c ? "," : "") << csv_cell(Json(columns[c]));
  f << "\n";
  for (const Json& r : records) {
    for (size_t c = 0; c < columns.size(); ++c) {
      const Json* v = r.find(columns[c]);
      f << (c ? "," : "") << (v ? csv_cell(*v) : std::string());
    }
    f << "\n";
  }
  return finish(f, path, error);
}

}  // namespace wt_tools
