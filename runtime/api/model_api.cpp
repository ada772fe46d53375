// wt_model_*, tokenizer and chat entry points.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "offload/copy_probe.h"
#include "runtime/engine/model_device.h"
#include "runtime/model/gguf.h"
#include "runtime/model/rope_scaling.h"
#include "handles.h"
#include "params_abi.h"

using wt::Status;
using wt::api::guarded;
using wt::api::require;

namespace {

// Copies text into a caller buffer with a NUL; reports the needed length either way.
Status copy_out(const std::string& text, char* buf, size_t capacity, size_t* out_len) {
  *out_len = text.size();
  if (!buf || capacity < text.size() + 1)
    return wt::error(WT_ERR_BUFFER_TOO_SMALL, "buffer of " + std::to_string(capacity) + " bytes, need " +
                                                  std::to_string(text.size() + 1));
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  return Status::ok();
}

Status check_token(const wt_model* m, wt_token token) {
  if (token < 0 || token >= m->model->hp.n_vocab)
    return wt::error(WT_ERR_INVALID_ARGUMENT, "token id " + std::to_string(token) + " outside [0, " +
                                                  std::to_string(m->model->hp.n_vocab) + ")");
  return Status::ok();
}

// What wt_chat_apply_vars and wt_chat_apply_json share once the messages are read: the
// caller's errors (roles, variables) before the model's template status, then the render.
Status format_chat(const wt_model* model, const std::vector<wt::ChatMessage>& msgs, bool add_assistant,
                   const char* vars_json, char* buf, size_t capacity, size_t* out_len) {
  WT_TRY(wt::check_chat_roles(msgs));
  wt::JinjaDict vars;
  if (vars_json && *vars_json) WT_TRY(wt::read_chat_vars(vars_json, &vars));
  WT_TRY(model->chat_status);  // after the caller's arguments, which are wrong whatever the model
  std::string text;
  WT_TRY(wt::apply_chat_template(model->chat, msgs, add_assistant, &text, nullptr, &vars));
  return copy_out(text, buf, capacity, out_len);
}

}  // namespace

namespace wt::api {

Status make_model(std::shared_ptr<GgufFile> file, const LoadOptions& options, std::unique_ptr<Backend> device,
                  std::unique_ptr<wt_model>* out) {
  auto m = std::make_unique<wt_model>();
  WT_TRY(load_model_from_gguf(std::move(file), options, &m->model));
  if (device) WT_TRY(ModelDevice::place(std::move(device), m->model.get()));
  WT_TRY(Tokenizer::create(m->model->vocab, &m->tokenizer));
  const wt::Vocab& v = m->model->vocab;
  m->chat_status = parse_chat_template(v.chat_template, v.bos >= 0 ? v.tokens[v.bos] : std::string(),
                                       v.eos >= 0 ? v.tokens[v.eos] : std::string(), &m->chat);
  m->reply = reply_style_of(v.chat_template);
  *out = std::move(m);
  return Status::ok();
}

}  // namespace wt::api

extern "C" {

wt_model_params wt_model_default_params(void) {
  wt_model_params p;
  p.struct_size = sizeof p;
  p.backend = WT_BACKEND_CPU;
  p.progress = nullptr;
  p.progress_user = nullptr;
  p.rope_scaling = WT_ROPE_SCALING_FILE;
  p.rope_scaling_factor = 1.0f;
  p.rope_orig_ctx = 0;
  return p;
}

wt_status wt_model_load(const char* path, const wt_model_params* params, wt_model** out_model) {
  return guarded([&]() -> Status {
    WT_TRY(require(path, "path"));
    WT_TRY(require(out_model, "out_model"));
    wt_model_params p;
    WT_TRY(wt::api::read_params(params, &p));
    const int32_t backend = wt::api::raw_value(p.backend);
    if (backend != WT_BACKEND_CPU && backend != WT_BACKEND_VULKAN && backend != WT_BACKEND_CUDA)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "unknown backend kind " + std::to_string(backend));
    wt::RopeOverride rope;
    WT_TRY(wt::rope_override_from(wt::api::raw_value(p.rope_scaling), p.rope_scaling_factor, p.rope_orig_ctx, &rope));
    // The device first: a build without Vulkan or CUDA, or a machine without a device, is
    // refused before the file is read.
    std::unique_ptr<wt::Backend> device;
    if (backend == WT_BACKEND_VULKAN) {
      const Status st = wt::create_vulkan_backend(wt::BackendOptions{}, &device);
      if (!st.is_ok()) return wt::error(st.code(), "cannot load for WT_BACKEND_VULKAN: " + st.message());
    } else if (backend == WT_BACKEND_CUDA) {
      const Status st = wt::create_cuda_backend(wt::BackendOptions{}, &device);
      if (!st.is_ok()) return wt::error(st.code(), "cannot load for WT_BACKEND_CUDA: " + st.message());
    }
    wt::LoadOptions lo;
    lo.progress = p.progress;
    lo.progress_user = p.progress_user;
    lo.rope = rope;
    std::shared_ptr<wt::GgufFile> file;
    WT_TRY(wt::GgufFile::open(path, &file));
    std::unique_ptr<wt_model> m;
    WT_TRY(wt::api::make_model(std::move(file), lo, std::move(device), &m));
    const wt::Model& mm = *m->model;
    wt::api::log(WT_LOG_INFO, "loaded " + std::string(path) + ": " + mm.arch_name + ", " +
                                  std::to_string(mm.hp.n_layer) + " layers, " + std::to_string(mm.n_params) +
                                  " params, " + std::to_string(mm.weight_bytes) + " weight bytes on " +
                                  (mm.device ? mm.device->backend().caps().device_name : std::string("the CPU")));
    if (!m->chat_status.is_ok()) wt::api::log(WT_LOG_DEBUG, "chat template: " + m->chat_status.message());
    *out_model = m.release();
    return Status::ok();
  });
}

void wt_model_free(wt_model* model) { delete model; }

wt_status wt_model_get_info(const wt_model* model, wt_model_info* out_info) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_info, "out_info"));
    const wt::Model& m = *model->model;
    wt_model_info info{};
    info.architecture = m.arch_name.c_str();
    info.name = m.name.c_str();
    info.n_layer = m.hp.n_layer;
    info.n_embd = m.hp.n_embd;
    info.n_ff = m.hp.n_ff;
    info.n_head = m.hp.n_head;
    info.n_head_kv = m.hp.n_head_kv;
    info.head_dim = m.hp.head_dim;
    info.n_vocab = m.hp.n_vocab;
    info.n_ctx_train = m.hp.n_ctx_train;
    info.n_params = m.n_params;
    info.weight_bytes = m.weight_bytes;
    info.backend = m.device ? m.device->backend().caps().name : "cpu";
    info.device = m.device ? m.device->backend().caps().device_name.c_str() : "";
    return wt::api::write_output(info, out_info);
  });
}

wt_status wt_model_copy_bandwidth(const wt_model* model, uint64_t bytes, double* out_gbs) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_gbs, "out_gbs"));
    if (bytes > (uint64_t{1} << 30))  // before the size_t conversion (32-bit hosts)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "copy bandwidth: bytes is " + std::to_string(bytes) + ", outside [1 MiB, 1 GiB]");
    wt::ModelDevice* dev = model->model->device.get();
    if (dev) {
      // The backend serves one caller at a time; waiting here from a callback of a call
      // that holds the device would never end.
      const auto lock = dev->try_lock();
      if (!lock.owns_lock())
        return wt::error(WT_ERR_BUSY, "copy bandwidth: a call of one of the model's contexts holds its device");
      return wt::measure_copy_bandwidth(dev->backend(), static_cast<size_t>(bytes), out_gbs);
    }
    std::unique_ptr<wt::Backend> cpu;  // weights in host memory: a CPU backend of one thread
    wt::BackendOptions one;
    one.n_threads = 1;
    WT_TRY(wt::create_cpu_backend(one, &cpu));
    return wt::measure_copy_bandwidth(*cpu, static_cast<size_t>(bytes), out_gbs);
  });
}

wt_token wt_token_bos(const wt_model* model) { return model ? model->model->vocab.bos : -1; }
wt_token wt_token_eos(const wt_model* model) { return model ? model->model->vocab.eos : -1; }

bool wt_token_is_end(const wt_model* model, wt_token token) {
  if (!model) return false;
  return model->model->vocab.is_end(token);
}

wt_tokenize_params wt_tokenize_default_params(void) {
  wt_tokenize_params p;
  p.struct_size = sizeof p;
  p.add_special = true;
  p.parse_special = false;
  return p;
}

wt_status wt_tokenize(const wt_model* model, const char* text, size_t text_len, const wt_tokenize_params* params,
                      wt_token* tokens, size_t capacity, size_t* out_n_tokens) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_n_tokens, "out_n_tokens"));
    if (!text && text_len > 0) return wt::error(WT_ERR_INVALID_ARGUMENT, "text is NULL");
    if (!tokens && capacity > 0)
      return wt::error(WT_ERR_INVALID_ARGUMENT, "tokens is NULL with a capacity of " + std::to_string(capacity) +
                                                    " (pass capacity 0 to ask for the count)");
    if (text_len > static_cast<size_t>(PTRDIFF_MAX))
      return wt::error(WT_ERR_INVALID_ARGUMENT, "text_len " + std::to_string(text_len) + " is larger than any text can be");
    wt_tokenize_params p;
    WT_TRY(wt::api::read_params(params, &p));
    std::vector<int32_t> ids;
    WT_TRY(model->tokenizer->encode(std::string_view(text ? text : "", text_len), p.add_special, p.parse_special, &ids));
    *out_n_tokens = ids.size();
    if (!tokens || capacity < ids.size())
      return wt::error(WT_ERR_BUFFER_TOO_SMALL, std::to_string(ids.size()) + " tokens do not fit a buffer of " +
                                                    std::to_string(capacity));
    std::copy(ids.begin(), ids.end(), tokens);
    return Status::ok();
  });
}

wt_status wt_token_to_bytes(const wt_model* model, wt_token token, char* buf, size_t capacity, size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_len, "out_len"));
    WT_TRY(check_token(model, token));
    const std::string& bytes = model->tokenizer->token_bytes(token);
    *out_len = bytes.size();
    if (!buf || capacity < bytes.size())
      return wt::error(WT_ERR_BUFFER_TOO_SMALL, "token needs " + std::to_string(bytes.size()) + " bytes");
    std::memcpy(buf, bytes.data(), bytes.size());
    return Status::ok();
  });
}

wt_status wt_detokenizer_create(const wt_model* model, wt_detokenizer** out_detok) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_detok, "out_detok"));
    auto d = std::make_unique<wt_detokenizer>();
    d->owner = model;
    *out_detok = d.release();
    return Status::ok();
  });
}

void wt_detokenizer_free(wt_detokenizer* detok) { delete detok; }

wt_status wt_detokenizer_push(wt_detokenizer* detok, wt_token token, char* buf, size_t capacity, size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(detok, "detok"));
    WT_TRY(require(out_len, "out_len"));
    WT_TRY(check_token(detok->owner, token));
    wt::Utf8Stream trial = detok->stream;  // commit only if the text fits
    std::string text;
    trial.push(detok->owner->tokenizer->token_bytes(token), &text);
    WT_TRY(copy_out(text, buf, capacity, out_len));
    detok->stream = trial;
    return Status::ok();
  });
}

wt_status wt_detokenizer_flush(wt_detokenizer* detok, char* buf, size_t capacity, size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(detok, "detok"));
    WT_TRY(require(out_len, "out_len"));
    wt::Utf8Stream trial = detok->stream;
    std::string text;
    trial.flush(&text);
    WT_TRY(copy_out(text, buf, capacity, out_len));
    detok->stream = trial;
    return Status::ok();
  });
}

wt_status wt_chat_apply(const wt_model* model, const wt_chat_message* messages, size_t n_messages, bool add_assistant,
                        char* buf, size_t capacity, size_t* out_len) {
  return wt_chat_apply_vars(model, messages, n_messages, add_assistant, nullptr, buf, capacity, out_len);
}

wt_status wt_chat_apply_vars(const wt_model* model, const wt_chat_message* messages, size_t n_messages,
                             bool add_assistant, const char* vars_json, char* buf, size_t capacity, size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_len, "out_len"));
    if (n_messages > 0) WT_TRY(require(messages, "messages"));
    if (n_messages > static_cast<size_t>(PTRDIFF_MAX) / sizeof(wt_chat_message))
      return wt::error(WT_ERR_INVALID_ARGUMENT, "n_messages " + std::to_string(n_messages) +
                                                    " is more than any array of messages can hold");
    std::vector<wt::ChatMessage> msgs;
    msgs.reserve(n_messages);
    for (size_t i = 0; i < n_messages; ++i) {
      if (!messages[i].role || !messages[i].content)
        return wt::error(WT_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + " has a NULL role or content");
      msgs.push_back({messages[i].role, messages[i].content});
    }
    return format_chat(model, msgs, add_assistant, vars_json, buf, capacity, out_len);
  });
}

wt_status wt_chat_parse_reply(const wt_model* model, const char* reply, char* buf, size_t capacity,
                              size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_len, "out_len"));
    WT_TRY(require(reply, "reply"));
    // A reply longer than the bound is refused before strlen walks all of it.
    const size_t n = strnlen(reply, wt::kMaxReplyBytes + 1);
    wt::JinjaValue message;
    WT_TRY(wt::parse_chat_reply(model->reply, std::string_view(reply, n), &message));
    wt::JinjaJsonStyle style;
    style.max_bytes = size_t{64} << 20;  // 8 MiB of reply, each byte escaped at most 6 times over
    std::string json;
    if (!wt::jinja_json(message, style, &json))
      return wt::error(WT_ERR_INTERNAL, "reply: the message could not be written as JSON");
    return copy_out(json, buf, capacity, out_len);
  });
}

wt_status wt_chat_apply_json(const wt_model* model, const char* messages_json, bool add_assistant,
                             const char* vars_json, char* buf, size_t capacity, size_t* out_len) {
  return guarded([&]() -> Status {
    WT_TRY(require(model, "model"));
    WT_TRY(require(out_len, "out_len"));
    WT_TRY(require(messages_json, "messages_json"));
    std::vector<wt::ChatMessage> msgs;
    WT_TRY(wt::read_chat_messages(messages_json, &msgs));
    return format_chat(model, msgs, add_assistant, vars_json, buf, capacity, out_len);
  });
}

}  // extern "C"
