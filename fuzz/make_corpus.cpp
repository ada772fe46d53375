// Writes the seed corpora: fuzz_make_corpus OUT_DIR [REAL_MODEL] writes OUT_DIR/<harness>/*
// (fuzz/corpus/ in the repository is its output). The tokenizer's seeds are the texts of
// the HF fixture the tokenizer tests check against and a quarter of the SentencePiece one's,
// each behind the harness's two leading bytes, plus a few token-id inputs; the other harnesses' seeds are in corpus_*.cpp.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "corpus.h"
#include "support/gguf_writer.h"

namespace wt::fuzz {

namespace {

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// Input layout (fuzz_tokenizer.cpp): mode byte (bit 0 parse special, bit 6 SentencePiece,
// bit 7 token ids), a byte choosing buffer sizes, then the text. Every `keep`th case of the
// fixture becomes a seed named <prefix>_NNN, its mode byte or'd with `mode`.
void add_text_seeds(const std::string& fixture_path, const char* prefix, uint8_t mode, int keep, Seeds* s) {
  std::ifstream in(fixture_path);
  if (!in) {
    std::fprintf(stderr, "make_corpus: cannot read %s\n", fixture_path.c_str());
    return;
  }
  std::string line;
  int n = 0, seen = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    if (t1 != 1 || t2 == std::string::npos) continue;
    const std::string text = from_hex(line.substr(t1 + 1, t2 - t1 - 1));
    if (text.empty() || seen++ % keep != 0) continue;
    std::vector<uint8_t> seed = {static_cast<uint8_t>((line[0] == 'S' ? 1 : 0) | mode), static_cast<uint8_t>(n * 7)};
    seed.insert(seed.end(), text.begin(), text.end());
    char name[32];
    std::snprintf(name, sizeof name, "%s_%03d", prefix, n++);
    (*s)[name] = seed;
  }
}

}  // namespace

Seeds tokenizer_seeds(const std::string& source_dir) {
  Seeds s;
  add_text_seeds(source_dir + "/tests/data/tokenizer/smollm.txt", "fixture", 0, 1, &s);
  add_text_seeds(source_dir + "/tests/data/tokenizer/spm-llama.txt", "spm", 0x40, 4, &s);
  // Token ids (uint16 after a selector byte < 224, or any int32 after one >= 224): ids of
  // "Hello world", a run that splits characters across tokens, and ids out of range.
  FdpEncoder ids;
  for (const int id : {19556, 905, 216, 30, 0, 1, 2}) ids.byte(0).range(0, 65535, id);
  ids.byte(255).range(INT32_MIN, INT32_MAX, -1).byte(255).range(INT32_MIN, INT32_MAX, 49152);
  std::vector<uint8_t> seed = {0x80, 3};
  const std::vector<uint8_t> body = ids.bytes();
  seed.insert(seed.end(), body.begin(), body.end());
  s["ids_mixed"] = seed;
  return s;
}

}  // namespace wt::fuzz

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: fuzz_make_corpus OUT_DIR [REAL_MODEL.gguf]\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const fs::path root = argv[1];
  const fs::path source = WT_SOURCE_DIR;
  const std::string model = argc == 3 ? argv[2] : (source / "models/SmolLM2-135M-Instruct.Q4_1.gguf").string();
  const std::pair<const char*, wt::fuzz::Seeds> sets[] = {
      {"fuzz_gguf", wt::fuzz::gguf_seeds(model)},
      {"fuzz_tokenizer", wt::fuzz::tokenizer_seeds(source.string())},
      {"fuzz_chat", wt::fuzz::chat_seeds(source.string())},
      {"fuzz_chat_reply", wt::fuzz::reply_seeds()},
      {"fuzz_api", wt::fuzz::api_seeds()},
      {"fuzz_tool_args", wt::fuzz::tool_args_seeds()},
      {"fuzz_resume", wt::fuzz::resume_seeds()},
      {"fuzz_state", wt::fuzz::state_seeds()},
  };
  size_t total = 0, files = 0;
  for (const auto& [harness, seeds] : sets) {
    const fs::path dir = root / harness;
    fs::create_directories(dir);
    for (const auto& [name, bytes] : seeds) {
      if (!wt::test::write_file((dir / name).string(), bytes)) {
        std::fprintf(stderr, "make_corpus: cannot write %s\n", (dir / name).c_str());
        return 1;
      }
      total += bytes.size(), ++files;
    }
  }
  std::printf("make_corpus: %zu files, %zu bytes in %s\n", files, total, root.c_str());
  return 0;
}
