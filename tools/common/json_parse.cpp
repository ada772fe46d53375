// The reader for what json.cpp writes (and any other valid JSON): --resume reads the
// records of an earlier, interrupted run back. nlohmann's parser (the project's one JSON
// reader) reads the text; the result becomes a wt_tools::Json with a depth limit, so a hostile
// file cannot exhaust the stack.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <system_error>

#include "json.h"

namespace wt_tools {
namespace {

constexpr int kMaxDepth = 64;

// Objects keep the file's key order, as the writer keeps insertion order.
using Parsed = nlohmann::ordered_json;

bool convert(const Parsed& j, int depth, Json* out, std::string* error) {
  if (depth > kMaxDepth) {
    *error = "nesting too deep (more than " + std::to_string(kMaxDepth) + " levels)";
    return false;
  }
  switch (j.type()) {
    case Parsed::value_t::null: *out = Json(); return true;
    case Parsed::value_t::boolean: *out = Json(j.get<bool>()); return true;
    case Parsed::value_t::number_integer: *out = Json(j.get<int64_t>()); return true;
    case Parsed::value_t::number_unsigned: {
      const uint64_t u = j.get<uint64_t>();
      *out = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? Json(static_cast<int64_t>(u))
                                                                             : Json(static_cast<double>(u));
      return true;
    }
    case Parsed::value_t::number_float: *out = Json(j.get<double>()); return true;
    case Parsed::value_t::string: *out = Json(j.get<std::string>()); return true;
    case Parsed::value_t::array: {
      *out = Json::array();
      for (const Parsed& e : j) {
        Json v;
        if (!convert(e, depth + 1, &v, error)) return false;
        out->push(std::move(v));
      }
      return true;
    }
    case Parsed::value_t::object: {
      *out = Json::object();
      for (const auto& [key, e] : j.items()) {
        Json v;
        if (!convert(e, depth + 1, &v, error)) return false;
        out->set(key, std::move(v));
      }
      return true;
    }
    default:
      *error = "a value JSON text cannot hold";
      return false;
  }
}

}  // namespace

bool parse_json(const std::string& text, Json* out, std::string* error) {
  Parsed j;
  try {
    j = Parsed::parse(text);
  } catch (const Parsed::parse_error& e) {
    *error = std::string(e.what()) + " (byte " + std::to_string(e.byte) + ")";
    return false;
  } catch (const Parsed::exception& e) {
    // The grammar holds but a value does not fit (a number such as 1e999: out_of_range).
    *error = e.what();
    return false;
  }
  return convert(j, 0, out, error);
}

bool read_json_file(const std::string& path, Json* out, std::string* error) {
  // A directory opens as a stream that reads nothing: say what it is, not "unexpected end".
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    *error = path + " is a directory, not a JSON file";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = "cannot read " + path;
    return false;
  }
  std::ostringstream ss;
  ss << f.rdbuf();
  if (!parse_json(ss.str(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

}  // namespace wt_tools
