#include "support/tokenizer_fixture.h"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace wt::test {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<TokenizerCase> read_tokenizer_cases(const std::string& name) {
  const std::string path = std::string(WT_TEST_DATA_DIR) + "/tokenizer/" + name + ".txt";
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<TokenizerCase> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    REQUIRE_MESSAGE((t1 == 1 && t2 != std::string::npos), "bad fixture line: " << line);
    TokenizerCase c;
    c.parse_special = line[0] == 'S';
    c.text = from_hex(line.substr(t1 + 1, t2 - t1 - 1));
    std::istringstream ids(line.substr(t2 + 1));
    for (int32_t id; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

std::string ids_string(const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';  // not " " + to_string(...): GCC 12 warns of a false overlap (-Wrestrict)
    s += std::to_string(ids[i]);
  }
  return s + "]";
}

std::string escaped(const std::string& text) {
  std::string s;
  for (const unsigned char c : text) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      s.push_back(static_cast<char>(c));
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      s += buf;
    }
  }
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

std::unique_ptr<Tokenizer> make_tokenizer(const Vocab& vocab) {
  std::unique_ptr<Tokenizer> t;
  const Status st = Tokenizer::create(vocab, &t);
  REQUIRE_MESSAGE(st.is_ok(), st.message());
  return t;
}

std::vector<int32_t> encode(const Tokenizer& t, const std::string& text, bool add_special, bool parse_special) {
  std::vector<int32_t> ids;
  REQUIRE(t.encode(text, add_special, parse_special, &ids).is_ok());
  return ids;
}

std::string detokenize(const Tokenizer& t, const std::vector<int32_t>& ids) {
  std::string s;
  for (const int32_t id : ids) s += t.token_bytes(id);
  return s;
}

}  // namespace wt::test
