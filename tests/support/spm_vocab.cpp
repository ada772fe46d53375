#include "support/spm_vocab.h"

#include <fstream>
#include <sstream>

namespace wt::test {

bool read_spm_vocab(const std::string& path, Vocab* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  Vocab v;
  v.model = "llama";
  v.unk = 0, v.bos = 1, v.eos = 2;
  v.add_bos = true;
  std::string line;
  while (std::getline(in, line)) {
    const std::string header = "# add_space_prefix ";
    if (line.compare(0, header.size(), header) == 0) v.add_space_prefix = line[header.size()] == '1';
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    int type = 0;
    float score = 0;
    std::string hex;
    if (!(fields >> type >> score >> hex) || hex.size() % 2 != 0 || type < 0 || type > 6) {
      *error = path + ": bad line: " + line;
      return false;
    }
    std::string piece;
    for (size_t i = 0; i < hex.size(); i += 2) piece.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    v.tokens.push_back(std::move(piece));
    v.token_types.push_back(static_cast<TokenType>(type));
    v.scores.push_back(score);
  }
  if (v.tokens.size() < 3) {
    *error = path + ": fewer than 3 tokens";
    return false;
  }
  *out = std::move(v);
  return true;
}

}  // namespace wt::test
