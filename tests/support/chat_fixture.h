// The chat fixtures of tests/data/chat/ (tests/reference/make_chat_fixtures.py and
// make_jinja_fixtures.py): the folder and a reader of its templates and case lists.
#pragma once

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace wt::test {

inline const std::string kChatDir = std::string(WT_TEST_DATA_DIR) + "/chat/";

// The file's bytes; the test fails when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace wt::test
