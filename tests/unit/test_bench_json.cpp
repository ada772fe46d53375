// The tools' JSON reader (tools/common/json_parse.cpp: whittle-bench --resume) against hand-written
// documents: values and escapes decode to what the JSON grammar says, what the writer
// writes reads back equal, and malformed or hostile input is an error, not a crash.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "tools/common/json.h"

namespace {

wt_tools::Json parse_ok(const std::string& s) {
  wt_tools::Json j;
  std::string err;
  const bool ok = wt_tools::parse_json(s, &j, &err);
  INFO(s << " -> " << err);
  CHECK(ok);
  return j;
}

bool parse_fails(const std::string& s) {
  wt_tools::Json j;
  std::string err;
  const bool ok = wt_tools::parse_json(s, &j, &err);
  INFO(s);
  CHECK(!err.empty() == !ok);
  return !ok;
}

}  // namespace

TEST_CASE("bench json: values, escapes and surrogate pairs decode per the grammar") {
  const wt_tools::Json j = parse_ok(R"( {"a": [1, -2.5e3, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "big": 12345678901234} )");
  REQUIRE(j.type() == wt_tools::Json::Type::object);
  const wt_tools::Json* a = j.find("a");
  REQUIRE(a);
  REQUIRE(a->elems().size() == 5);
  CHECK(a->elems()[0].type() == wt_tools::Json::Type::integer);
  CHECK(a->elems()[0].number() == 1);
  CHECK(a->elems()[1].number() == -2500.0);
  CHECK(a->elems()[2].boolean());
  CHECK(a->elems()[3].type() == wt_tools::Json::Type::boolean);
  CHECK(a->elems()[4].type() == wt_tools::Json::Type::null);
  CHECK(j.find("s")->str() == "q\"\\/\n\xC3\xA9\xF0\x9F\x98\x80");  // é and U+1F600 in UTF-8
  CHECK(j.find("big")->number() == 12345678901234.0);
}

TEST_CASE("bench json: what the writer writes reads back equal") {
  wt_tools::Json r = wt_tools::Json::object();
  r.set("name", std::string("tab\there \x01 \"quoted\" \xE2\x82\xAC"));
  r.set("x", 0.1);
  r.set("n", static_cast<int64_t>(-7));
  r.set("nan", wt_tools::Json(std::nan("")));
  r.set("list", wt_tools::Json::array_of(std::vector<double>{1.5, 2.25, 1e-300}));
  const std::string text = r.dump();
  CHECK(parse_ok(text).dump() == text);
}

TEST_CASE("bench json: malformed and hostile documents are errors") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "tru", "01x", "\"abc", "\"\\x\"",
                          "\"\\ud800\"", "\"\\udc00\"", "\"\\u12\"", "[1] 2", "{1:2}", "-", "1.", "1e",
                          "\"a\nb\""})
    CHECK(parse_fails(bad));
  CHECK(parse_fails(std::string(100000, '[')));  // nesting past the limit, not a stack overflow
  // Grammatical, but the number does not fit a double: false, not an exception (fuzz_resume).
  CHECK(parse_fails("{\"ttft_ms\": 121E2416}"));
  CHECK(parse_fails("[1e999]"));
  CHECK(!parse_fails(std::string(60, '[') + std::string(60, ']')));
}
