// Board profiles (board.h): parsing the data files and detecting the running machine.
#include "board.h"

#include <cerrno>
#include <cmath>
#include <cstdio>

#include "backends/available_memory.h"
#include "base/host_memory.h"
#include "json_file.h"

namespace wt {

extern const char* const kBuiltinBoardsJson;  // boards_data.cpp, generated from boards/boards.json

namespace {

Status field_error(const std::string& what, const std::string& board, const std::string& msg) {
  return error(WT_ERR_FORMAT, what + ": board '" + board + "': " + msg);
}

Status get_bytes(const Json& b, const char* key, const std::string& what, const std::string& name,
                 uint64_t* out) {
  const Json* v = json_find(b, key);
  if (!v || !v->is_number())
    return field_error(what, name, std::string("'") + key + "' must be a number of bytes");
  if (!(v->get<double>() >= 0) || v->get<double>() > 9.0e15 || std::floor(v->get<double>()) != v->get<double>())
    return field_error(what, name, std::string("'") + key + "' must be a whole number of bytes >= 0");
  *out = static_cast<uint64_t>(v->get<double>());
  return Status::ok();
}

Status parse_board(const Json& b, const std::string& what, BoardProfile* out) {
  if (!b.is_object()) return error(WT_ERR_FORMAT, what + ": a board must be an object");
  const Json* name = json_find(b, "name");
  if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
    return error(WT_ERR_FORMAT, what + ": a board has no 'name' string");
  BoardProfile p;
  p.name = name->get_ref<const std::string&>();
  const Json* mem = json_find(b, "memory");
  if (!mem || !mem->is_string() || (mem->get_ref<const std::string&>() != "unified" && mem->get_ref<const std::string&>() != "discrete"))
    return field_error(what, p.name, "'memory' must be \"unified\" or \"discrete\"");
  p.unified = mem->get_ref<const std::string&>() == "unified";
  WT_TRY(get_bytes(b, "total_bytes", what, p.name, &p.total_bytes));
  WT_TRY(get_bytes(b, "reserve_bytes", what, p.name, &p.reserve_bytes));
  if (p.total_bytes == 0) return field_error(what, p.name, "'total_bytes' must be > 0");
  if (p.reserve_bytes >= p.total_bytes) return field_error(what, p.name, "'reserve_bytes' must be below 'total_bytes'");
  auto opt_number = [&](const char* key, double* dst) -> Status {
    const Json* v = json_find(b, key);
    if (!v) return Status::ok();
    if (!v->is_number() || !(v->get<double>() >= 0))
      return field_error(what, p.name, std::string("'") + key + "' must be a number >= 0");
    *dst = v->get<double>();
    return Status::ok();
  };
  WT_TRY(opt_number("bandwidth_gbps", &p.bandwidth_gbps));
  WT_TRY(opt_number("fp32_tflops", &p.fp32_tflops));
  WT_TRY(opt_number("fp16_tflops", &p.fp16_tflops));
  if (const Json* v = json_find(b, "reserve_note"); v && v->is_string()) p.reserve_note = v->get_ref<const std::string&>();
  if (const Json* v = json_find(b, "figures"); v && v->is_string()) p.figures = v->get_ref<const std::string&>();
  *out = std::move(p);
  return Status::ok();
}

}  // namespace

Status parse_board_profiles(const std::string& json_text, const std::string& what, std::vector<BoardProfile>* out) {
  Json doc;
  WT_TRY(parse_json(json_text, what, &doc));
  out->clear();
  if (!doc.is_object()) return error(WT_ERR_FORMAT, what + ": expected an object");
  const Json* boards = json_find(doc, "boards");
  if (!boards) {
    BoardProfile p;
    WT_TRY(parse_board(doc, what, &p));
    out->push_back(std::move(p));
    return Status::ok();
  }
  if (!boards->is_array() || boards->empty())
    return error(WT_ERR_FORMAT, what + ": 'boards' must be a non-empty array");
  for (const Json& b : *boards) {
    BoardProfile p;
    WT_TRY(parse_board(b, what, &p));
    // Two entries of one name: which one a --board picks would be an accident of order.
    for (const BoardProfile& earlier : *out)
      if (earlier.name == p.name)
        return error(WT_ERR_FORMAT, what + ": two boards are named '" + p.name + "'");
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
