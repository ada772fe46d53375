// The JSON reader behind wt_chat_apply_vars (runtime/model/jinja_json.h), checked against an
// independent one (nlohmann's) on the same texts: the same values where both read them, a
// refusal where both refuse, and Whittle's own refusals (repeats, limits) where it means to.

#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "runtime/model/chat_template.h"
#include "runtime/model/jinja_json.h"

namespace {

using Kind = wt::JinjaValue::Kind;
using Json = nlohmann::ordered_json;  // members in the text's order, as Python's dicts

// The same value, kind for kind: null, bool, int, float, string, list, dict in order.
bool same(const wt::JinjaValue& v, const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return v.is(Kind::none);
    case Json::value_t::boolean: return v.is(Kind::boolean) && v.b == j.get<bool>();
    case Json::value_t::number_integer: return v.is(Kind::integer) && v.i == j.get<int64_t>();
    case Json::value_t::number_unsigned:
      return v.is(Kind::integer) && v.i >= 0 && static_cast<uint64_t>(v.i) == j.get<uint64_t>();
    case Json::value_t::number_float: return v.is(Kind::number) && v.f == j.get<double>();
    case Json::value_t::string: return v.is(Kind::string) && v.s == j.get<std::string>();
    case Json::value_t::array: {
      if (!v.is(Kind::list) || v.list->size() != j.size()) return false;
      for (size_t k = 0; k < j.size(); ++k)
        if (!same((*v.list)[k], j[k])) return false;
      return true;
    }
    case Json::value_t::object: {
      if (!v.is(Kind::dict) || v.dict->size() != j.size()) return false;
      size_t k = 0;
      for (auto it = j.begin(); it != j.end(); ++it, ++k)
        if ((*v.dict)[k].first != it.key() || !same((*v.dict)[k].second, it.value())) return false;
      return true;
    }
    default: return false;
  }
}

bool nlohmann_reads(const std::string& text) { return Json::accept(text); }

// A random value: every kind, strings with escapes, control and non-ASCII characters.
Json random_value(std::mt19937& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 3 ? 5 : 7));
  switch (kind) {
    case 0: return nullptr;
    case 1: return rng() % 2 == 0;
    case 2: return static_cast<int64_t>(rng()) - (int64_t{1} << 31) + (rng() % 3 == 0 ? INT64_C(1) << 53 : 0);
    case 3: return std::ldexp(static_cast<double>(rng()) - 2e9, static_cast<int>(rng() % 200) - 100);
    case 4: {
      static const std::vector<std::string> pieces = {"a", "\"", "\\", "/", "\n", "\t", "\x01", "\x1f", "é",
                                                      "€", "😀", " ", "\u2028", "{", "}"};
      std::string s;
      for (size_t n = rng() % 8; n > 0; --n) s += pieces[rng() % pieces.size()];
      return s;
    }
    case 5: {
      Json a = Json::array();
      for (size_t n = rng() % 5; n > 0; --n) a.push_back(random_value(rng, depth + 1));
      return a;
    }
    default: {
      Json o = Json::object();
      for (size_t n = rng() % 5; n > 0; --n) o[std::string("k").append(std::to_string(n)).append(rng() % 2 ? "é" : "")] = random_value(rng, depth + 1);
      return o;
    }
  }
}

}  // namespace

TEST_CASE("jinja json: values as an independent reader has them") {
  const std::vector<std::string> texts = {
      "null", "true", "false", "0", "-0", "7", "-42", "9223372036854775807", "-9223372036854775808", "0.5", "-1.5e3",
      "1E-7", "2.5e+2", "1e308", "\"\"", "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "\"\\u00e9\\u20AC\\ud83d\\ude00\"",
      "\"é€😀\"", " \t\r\n[ 1 , [ ] , { } , \"x\" ] \n", "{\"enable_thinking\": false}",
      "{\"b\": 1, \"a\": [true, null, {\"c\": \"d\"}]}", "[[[[[[[[[[1]]]]]]]]]]"};
  for (const std::string& text : texts) {
    CAPTURE(text);
    wt::JinjaValue v;
    const wt::Status st = wt::jinja_from_json(text, &v);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    CHECK(same(v, Json::parse(text)));
  }
  std::mt19937 rng(12345);
  int n = 0;
  for (int k = 0; k < 2000; ++k) {
    const Json j = random_value(rng, 0);
    const int indent = static_cast<int>(rng() % 3) - 1;  // compact, 0 and 1 space
    for (const bool ascii : {false, true}) {
      const std::string text = j.dump(indent, ' ', ascii);
      CAPTURE(text);
      wt::JinjaValue v;
      const wt::Status st = wt::jinja_from_json(text, &v);
      REQUIRE_MESSAGE(st.is_ok(), st.message());
      CHECK(same(v, j));
      ++n;
    }
  }
  CHECK(n == 4000);
}

TEST_CASE("jinja json: malformed text is refused, naming the byte") {
  // Each refused by nlohmann's reader too.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "byte 0"}, {"   ", "byte 3"}, {"nul", "byte 0"}, {"True", "byte 0"}, {"[1,]", "byte 3"},
      {"[1 2]", "byte 3"}, {"{\"a\" 1}", "byte 5"}, {"{\"a\": 1,}", "byte 8"}, {"{a: 1}", "byte 1"},
      {"{'a': 1}", "byte 1"}, {"01", "byte 1"}, {"-", "byte 1"}, {"1.", "byte 2"}, {".5", "byte 0"},
      {"1e", "byte 2"}, {"+1", "byte 0"}, {"NaN", "byte 0"}, {"Infinity", "byte 0"}, {"\"a", "byte 2"},
      {"\"a\nb\"", "byte 2"}, {"\"\\x41\"", "byte 1"}, {"\"\\u12\"", "byte 3"}, {"\"\\ud83d\"", "byte 1"},
      {"\"\\ude00\"", "byte 1"}, {"\"x\\ud83d\\u0041\"", "byte 2"}, {"\"\xff\"", "byte 1"},
      {"\"\xc3\"", "byte 1"}, {"\"\xed\xa0\x80\"", "byte 1"}, {"[1] [2]", "byte 4"}, {"[", "byte 1"},
      {"{\"a\": 1} x", "byte 9"}, {std::string("[1,\0]", 5), "byte 3"},
      {"1e309", "outside double"}, {"-1e400", "outside double"}, {"[1e99999999999999999999]", "byte 1"},
      {"11e9223372036854775807", "outside double"}};
  for (const auto& item : bad) {  // not a structured binding: clang 14 cannot capture one
    const std::string& text = item.first;
    const std::string& where = item.second;
    CAPTURE(text);
    wt::JinjaValue v;
    const wt::Status st = wt::jinja_from_json(text, &v);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK_MESSAGE(st.message().find(where) != std::string::npos, st.message());
    CHECK(!nlohmann_reads(text));
  }
  // Read by nlohmann, refused here on purpose: a repeated name (json.loads would keep the last
  // silently), integers no int64 holds (a float where nlohmann reads them).
  // The byte named is the object's or the number's first.
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"{\"a\": 1, \"b\": 2, \"a\": 3}", "at byte 0"}, {"[{\"x\": {\"y\": 1, \"y\": 1}}]", "at byte 7"},
      {"9223372036854775808", "at byte 0"}, {"[-9223372036854775809]", "at byte 1"}};
  for (const auto& item : refused) {
    const std::string& text = item.first;
    CAPTURE(text);
    wt::JinjaValue v;
    const wt::Status st = wt::jinja_from_json(text, &v);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(nlohmann_reads(text));
    CHECK_MESSAGE(st.message().find(item.second) != std::string::npos, st.message());
  }
  // Bytes outside printable ASCII in a message are written as \xNN; a long name is cut.
  wt::JinjaValue v;
  wt::Status st = wt::jinja_from_json("\"\\\x01\"", &v);
  CHECK(st.message().find("\\x01") != std::string::npos);
  st = wt::jinja_from_json("{\"" + std::string(1000, 'n') + "\": 1, \"" + std::string(1000, 'n') + "\": 2}", &v);
  CHECK(st.message().find("twice") != std::string::npos);
  CHECK(st.message().size() < 200);
}

TEST_CASE("jinja json: floats below double's range read as zero, as json.loads reads them") {
  for (const char* text : {"1e-400", "-1e-400", "0.0000001e-99999", "1234.5e-400", "0.0e-99999999999999999999",
                           "0.01e-9223372036854775808"}) {
    CAPTURE(text);
    wt::JinjaValue v;
    const wt::Status st = wt::jinja_from_json(text, &v);
    REQUIRE_MESSAGE(st.is_ok(), st.message());
    CHECK(v.is(Kind::number));
    CHECK(v.f == 0.0);
    CHECK(std::signbit(v.f) == (text[0] == '-'));
  }
  wt::JinjaValue v;  // the smallest subnormal: read (as itself, or as zero where the library rounds it so)
  REQUIRE(wt::jinja_from_json("5e-324", &v).is_ok());
  CHECK((v.f == 0.0 || v.f == 5e-324));
  CHECK(wt::jinja_from_json("2.5e-308", &v).is_ok());
}

TEST_CASE("jinja json: what a template's value may hold, and no more") {
  wt::JinjaValue v;
  // 64 levels of arrays around a number: as deep as a template's own values go.
  const std::string deep = std::string(64, '[').append("1").append(64, ']');
  CHECK(wt::jinja_from_json(deep, &v).is_ok());
  CHECK(v.depth == 64);
  wt::Status st = wt::jinja_from_json(std::string("[").append(deep).append("]"), &v);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("64 deep") != std::string::npos);
  // A million levels: refused at the 65th, without recursing further.
  st = wt::jinja_from_json(std::string(1'000'000, '['), &v);
  CHECK(st.message().find("64 deep") != std::string::npos);
  std::string items = "[0";
  for (int k = 1; k < 100'000; ++k) items += ",0";
  CHECK(wt::jinja_from_json(std::string(items).append("]"), &v).is_ok());
  st = wt::jinja_from_json(std::string(items).append(",0]"), &v);
  CHECK(st.message().find("100000") != std::string::npos);
  // Past the cost a template's value may have (a unit a value): 11 lists of 100 000 items,
  // refused as it is read (the message's byte is inside the tenth list, not at its end).
  std::string lists = "[";
  for (int k = 0; k < 9; ++k) lists.append(k ? "," : "").append(items).append("]");
  CHECK(wt::jinja_from_json(std::string(lists).append("]"), &v).is_ok());  // 900 000 items
  st = wt::jinja_from_json(lists.append(",").append(items).append("],").append(items).append("]]"), &v);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("more than a template's value may hold") != std::string::npos);
  const size_t at = std::stoul(st.message().substr(st.message().rfind(' ') + 1));
  CHECK(at < 10 * (items.size() + 2));
  st = wt::jinja_from_json(std::string((8 << 20) + 1, ' '), &v);
  CHECK(st.message().find("8 MiB") != std::string::npos);
  // A failed read leaves *out as it was.
  v = wt::JinjaValue::integer(5);
  CHECK(!wt::jinja_from_json("[1, 2", &v).is_ok());
  CHECK((v.is(Kind::integer) && v.i == 5));
}

TEST_CASE("chat template: the caller's variables are a JSON object of names the call does not set") {
  wt::JinjaDict vars;
  CHECK(wt::read_chat_vars("{\"enable_thinking\": false, \"tools\": []}", &vars).is_ok());
  REQUIRE(vars.size() == 2);
  CHECK(vars[0].first == "enable_thinking");
  for (const char* text : {"[]", "false", "\"x\"", "null"}) {
    const wt::Status st = wt::read_chat_vars(text, &vars);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find("a JSON object expected") != std::string::npos);
  }
  for (const char* name : {"messages", "add_generation_prompt", "bos_token", "eos_token", "raise_exception",
                           "strftime_now"}) {
    CAPTURE(name);
    const wt::Status st = wt::read_chat_vars(std::string("{\"x\": 1, \"").append(name).append("\": 1}"), &vars);
    CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
    CHECK(st.message().find(std::string("'").append(name).append("'")) != std::string::npos);
  }
  // More than 1 MiB of variables (a valid object) is refused before it is read.
  const wt::Status big = wt::read_chat_vars(std::string("{\"x\": \"").append(1 << 20, 'a').append("\"}"), &vars);
  CHECK(big.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(big.message().find("1 MiB") != std::string::npos);
  std::string names = "{";
  for (size_t k = 0; k <= wt::kMaxChatVars; ++k) names.append(k ? ",\"v" : "\"v").append(std::to_string(k)).append("\": 0");
  const wt::Status st = wt::read_chat_vars(names.append("}"), &vars);
  CHECK(st.code() == WT_ERR_INVALID_ARGUMENT);
  CHECK(st.message().find("more than 256 names") != std::string::npos);
}
