// Board profiles (board.h): parsing the data files and detecting the running machine.
#include "board.h"

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "backends/available_memory.h"
#include "base/host_memory.h"
#include "json_reader.h"

namespace wt {

extern const char* const kBuiltinBoardsJson;  // boards_data.cpp, generated from boards/boards.json

namespace {

Status field_error(const std::string& what, const std::string& board, const std::string& msg) {
  return error(WT_ERR_FORMAT, what + ": board '" + board + "': " + msg);
}

Status get_bytes(const JsonValue& b, const char* key, const std::string& what, const std::string& name,
                 uint64_t* out) {
  const JsonValue* v = b.find(key);
  if (!v || v->kind != JsonValue::Kind::number)
    return field_error(what, name, std::string("'") + key + "' must be a number of bytes");
  if (!(v->number >= 0) || v->number > 9.0e15 || std::floor(v->number) != v->number)
    return field_error(what, name, std::string("'") + key + "' must be a whole number of bytes >= 0");
  *out = static_cast<uint64_t>(v->number);
  return Status::ok();
}

Status parse_board(const JsonValue& b, const std::string& what, BoardProfile* out) {
  if (b.kind != JsonValue::Kind::object) return error(WT_ERR_FORMAT, what + ": a board must be an object");
  const JsonValue* name = b.find("name");
  if (!name || name->kind != JsonValue::Kind::string || name->string.empty())
    return error(WT_ERR_FORMAT, what + ": a board has no 'name' string");
  BoardProfile p;
  p.name = name->string;
  const JsonValue* mem = b.find("memory");
  if (!mem || mem->kind != JsonValue::Kind::string || (mem->string != "unified" && mem->string != "discrete"))
    return field_error(what, p.name, "'memory' must be \"unified\" or \"discrete\"");
  p.unified = mem->string == "unified";
  WT_TRY(get_bytes(b, "total_bytes", what, p.name, &p.total_bytes));
  WT_TRY(get_bytes(b, "reserve_bytes", what, p.name, &p.reserve_bytes));
  if (p.total_bytes == 0) return field_error(what, p.name, "'total_bytes' must be > 0");
  if (p.reserve_bytes >= p.total_bytes) return field_error(what, p.name, "'reserve_bytes' must be below 'total_bytes'");
  auto opt_number = [&](const char* key, double* dst) -> Status {
    const JsonValue* v = b.find(key);
    if (!v) return Status::ok();
    if (v->kind != JsonValue::Kind::number || !(v->number >= 0))
      return field_error(what, p.name, std::string("'") + key + "' must be a number >= 0");
    *dst = v->number;
    return Status::ok();
  };
  WT_TRY(opt_number("bandwidth_gbps", &p.bandwidth_gbps));
  WT_TRY(opt_number("fp32_tflops", &p.fp32_tflops));
  WT_TRY(opt_number("fp16_tflops", &p.fp16_tflops));
  if (const JsonValue* v = b.find("reserve_note"); v && v->kind == JsonValue::Kind::string) p.reserve_note = v->string;
  if (const JsonValue* v = b.find("figures"); v && v->kind == JsonValue::Kind::string) p.figures = v->string;
  *out = std::move(p);
  return Status::ok();
}

}  // namespace

Status parse_board_profiles(const std::string& json_text, const std::string& what, std::vector<BoardProfile>* out) {
  JsonValue doc;
  WT_TRY(parse_json(json_text, what, &doc));
  out->clear();
  if (doc.kind != JsonValue::Kind::object) return error(WT_ERR_FORMAT, what + ": expected an object");
  const JsonValue* boards = doc.find("boards");
  if (!boards) {
    BoardProfile p;
    WT_TRY(parse_board(doc, what, &p));
    out->push_back(std::move(p));
    return Status::ok();
  }
  if (boards->kind != JsonValue::Kind::array || boards->array.empty())
    return error(WT_ERR_FORMAT, what + ": 'boards' must be a non-empty array");
  for (const JsonValue& b : boards->array) {
    BoardProfile p;
    WT_TRY(parse_board(b, what, &p));
    out->push_back(std::move(p));
  }
  return Status::ok();
}

Status load_board_profiles(const std::string& path, std::vector<BoardProfile>* out) {
  std::string text;
  WT_TRY(read_text_file(path, &text));
  return parse_board_profiles(text, path, out);
}

const std::vector<BoardProfile>& builtin_boards() {
  static const std::vector<BoardProfile> boards = [] {
    std::vector<BoardProfile> v;
    // The embedded file is checked by the tests; a broken one leaves the list empty.
    if (!parse_board_profiles(kBuiltinBoardsJson, "boards.json", &v).is_ok()) v.clear();
    return v;
  }();
  return boards;
}

Status find_board(const std::string& name, BoardProfile* out) {
  std::string known;
  for (const BoardProfile& b : builtin_boards()) {
    if (b.name == name) {
      *out = b;
      return Status::ok();
    }
    known += (known.empty() ? "" : ", ") + b.name;
  }
  return error(WT_ERR_INVALID_ARGUMENT, "unknown board '" + name + "' (known: " + known + ", detect, or a profile file)");
}

Status detect_host_board(BoardProfile* out) {
  HostMemory h;
  WT_TRY(read_host_memory(&h));
  BoardProfile p;
  p.name = "detect (host)";
  p.unified = true;
  p.total_bytes = h.total_bytes;
  p.reserve_bytes = h.total_bytes - h.available_bytes;
  p.reserve_note = "in use now: MemTotal - MemAvailable from /proc/meminfo";
  *out = std::move(p);
  return Status::ok();
}

Status detect_backend_board(const Backend& backend, BoardProfile* out) {
  AvailableMemory a;
  WT_TRY(available_memory(backend, &a));
  BoardProfile p;
  p.name = a.source;
  p.unified = a.unified;
  p.total_bytes = a.total_bytes;
  p.reserve_bytes = a.total_bytes - a.available_bytes;
  p.reserve_note = a.how;
  *out = std::move(p);
  return Status::ok();
}

}  // namespace wt
