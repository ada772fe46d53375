#include "support/gguf_load.h"

#include <doctest/doctest.h>

#include <cstring>

#include "runtime/model/gguf.h"

namespace wt::test {

ExactBuffer::ExactBuffer(const std::vector<uint8_t>& bytes)
    : size(bytes.size()), data(new uint8_t[bytes.empty() ? 1 : bytes.size()]) {
  if (!bytes.empty()) std::memcpy(data.get(), bytes.data(), bytes.size());
}

Status parse_bytes(const std::vector<uint8_t>& bytes) {
  ExactBuffer buf(bytes);
  std::shared_ptr<GgufFile> file;
  return GgufFile::parse_memory(buf.data.get(), buf.size, &file);
}

Loaded load_bytes(const std::vector<uint8_t>& bytes, const LoadOptions& options) {
  Loaded out;
  out.buf = std::make_unique<ExactBuffer>(bytes);
  std::shared_ptr<GgufFile> file;
  out.status = GgufFile::parse_memory(out.buf->data.get(), out.buf->size, &file);
  if (out.status.is_ok()) out.status = load_model_from_gguf(file, options, &out.model);
  return out;
}

Status load_status(const GgufWriter& w) { return load_bytes(w.build()).status; }

void expect_error(const Status& st, wt_status code, const std::string& needle) {
  INFO("status: " << wt_status_string(st.code()) << " message: " << st.message());
  CHECK(st.code() == code);
  CHECK(st.message().find(needle) != std::string::npos);
}

void set_u32(GgufWriter& w, const std::string& key, uint32_t v) {
  w.remove_kv(key);
  w.add_u32(key, v);
}

}  // namespace wt::test
