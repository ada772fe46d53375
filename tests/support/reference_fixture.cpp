#include "reference_fixture.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace wt::test {

bool read_reference_case(const std::string& path, ReferenceCase* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open " + path;
    return false;
  }
  out->name = std::filesystem::path(path).stem().string();
  std::string line;
  int32_t n_tokens = -1;
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "whittle-reference") {
      int version = 0;
      ss >> version;
      if (version != 1) {
        *error = path + ": unknown fixture version";
        return false;
      }
    } else if (key == "model") {
      ss >> out->model;
    } else if (key == "n_tokens") {
      ss >> n_tokens;
    } else if (key == "tokens") {
      int32_t t;
      while (ss >> t) out->tokens.push_back(t);
    } else if (key == "n_vocab") {
      ss >> out->n_vocab;
    } else if (key == "subset") {
      int32_t k, id;
      ss >> k;
      while (ss >> id) out->subset.push_back(id);
      if (static_cast<int32_t>(out->subset.size()) != k) {
        *error = path + ": subset count mismatch";
        return false;
      }
    } else if (key == "row") {
      ReferenceRow row;
      int32_t p;
      std::string word;
      ss >> p >> word >> row.argmax >> word >> row.margin >> word;  // "argmax", "margin", "top"
      while (ss >> word && word != "sub") {
        const size_t colon = word.find(':');
        row.top.emplace_back(std::stoi(word.substr(0, colon)), std::stof(word.substr(colon + 1)));
      }
      float v;
      while (ss >> v) row.sub.push_back(v);
      if (p != static_cast<int32_t>(out->rows.size()) || row.sub.size() != out->subset.size()) {
        *error = path + ": malformed row " + std::to_string(p);
        return false;
      }
      out->rows.push_back(std::move(row));
    }
  }
  if (n_tokens <= 0 || static_cast<int32_t>(out->tokens.size()) != n_tokens ||
      static_cast<int32_t>(out->rows.size()) != n_tokens || out->model.empty()) {
    *error = path + ": incomplete fixture";
    return false;
  }
  return true;
}

std::vector<std::string> list_reference_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".ref") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace wt::test
