// Model shapes for the planner (model_shape.h).
#include "model_shape.h"

#include <cmath>

#include "kernels/dtype.h"
#include "json_file.h"

namespace wt {

ModelShape model_shape_from_model(const Model& model) {
  ModelShape s;
  s.name = model.name;
  s.hp = model.hp;
  s.layers = model.layers;
  s.tok_embd = model.tok_embd;
  s.output = model.output;
  s.weight_bytes = model.weight_bytes;
  s.n_params = model.n_params;
  return s;
}

namespace {

Status dtype_from_name(const std::string& name, const std::string& what, const char* field, DType* out) {
  for (uint32_t id = 0; id < 64; ++id) {
    const DTypeTraits* t = dtype_traits(id);
    if (t && name == t->name) {
      *out = t->type;
      return Status::ok();
    }
  }
  return error(WT_ERR_FORMAT, what + ": '" + field + "' names an unknown type '" + name + "'");
}

// A tensor of type t and shape [ne0, ne1] without data; adds its bytes and elements.
Status described_tensor(DType t, int64_t ne0, int64_t ne1, const std::string& what, const char* role, ModelShape* s,
                        Tensor* out) {
  size_t row = 0;
  if (!dtype_row_bytes(t, ne0, &row))
    return error(WT_ERR_FORMAT, what + ": " + role + " rows of " + std::to_string(ne0) + " elements do not fit " +
                                    dtype_name(t) + " blocks");
  const int64_t ne[2] = {ne0, ne1};
  *out = make_tensor(nullptr, t, ne1 > 1 ? 2 : 1, ne);
  s->weight_bytes += static_cast<uint64_t>(row) * static_cast<uint64_t>(ne1);
  s->n_params += static_cast<uint64_t>(ne0 * ne1);
  return Status::ok();
}

}  // namespace

Status parse_model_description(const std::string& json_text, const std::string& what, ModelShape* out) {
  Json doc;
  WT_TRY(parse_json(json_text, what, &doc));
  if (!doc.is_object()) return error(WT_ERR_FORMAT, what + ": expected an object");
  ModelShape s;
  s.described = true;
  auto get_int = [&](const char* key, int32_t lo, int32_t hi, bool required, int32_t* dst) -> Status {
    const Json* v = json_find(doc, key);
    if (!v) return required ? error(WT_ERR_FORMAT, what + ": missing '" + key + "'") : Status::ok();
    if (!v->is_number() || std::floor(v->get<double>()) != v->get<double>() || v->get<double>() < lo || v->get<double>() > hi)
      return error(WT_ERR_FORMAT, what + ": '" + key + "' must be a whole number in [" + std::to_string(lo) + ", " +
                                      std::to_string(hi) + "]");
    *dst = static_cast<int32_t>(v->get<double>());
    return Status::ok();
  };
  auto get_string = [&](const char* key, std::string* dst) -> Status {
    const Json* v = json_find(doc, key);
    if (!v) return Status::ok();
    if (!v->is_string()) return error(WT_ERR_FORMAT, what + ": '" + key + "' must be a string");
    *dst = v->get_ref<const std::string&>();
    return Status::ok();
  };
  Hparams& hp = s.hp;
  std::string arch = "llama", weight_type, output_type, embed_type;
  WT_TRY(get_string("name", &s.name));
  WT_TRY(get_string("arch", &arch));
  if (arch == "llama" || arch == "smollm3") {
    hp.arch = arch == "llama" ? Arch::llama : Arch::smollm3;
    hp.no_rope_step = arch == "llama" ? 0 : 4;
  } else if (arch == "qwen2" || arch == "qwen3" || arch == "phi3") {  // phi3's fused matrices weigh the same
    hp.arch = arch == "qwen2" ? Arch::qwen2 : arch == "qwen3" ? Arch::qwen3 : Arch::phi3;
    hp.rope_type = RopeType::neox;
  } else if (arch == "gemma3") {  // as the loader reads it: the window is the description's
    hp.arch = Arch::gemma3;
    hp.rope_type = RopeType::neox;
    hp.gelu = true;
    hp.swa_pattern = 6;
  } else {
    return error(WT_ERR_FORMAT, what + ": 'arch' must be \"llama\", \"qwen2\", \"qwen3\", \"smollm3\", \"gemma3\" or "
                                       "\"phi3\", not \"" + arch + "\"");
  }
  WT_TRY(get_int("n_layer", 1, 1024, true, &hp.n_layer));
  WT_TRY(get_int("n_embd", 1, 1 << 20, true, &hp.n_embd));
  WT_TRY(get_int("n_ff", 1, 1 << 22, true, &hp.n_ff));
  WT_TRY(get_int("n_head", 1, 1024, true, &hp.n_head));
  WT_TRY(get_int("n_head_kv", 1, 1024, true, &hp.n_head_kv));
  WT_TRY(get_int("n_vocab", 1, 1 << 24, true, &hp.n_vocab));
  WT_TRY(get_int("n_ctx_train", 0, 1 << 24, false, &hp.n_ctx_train));
  if (hp.arch == Arch::gemma3) {
    WT_TRY(get_int("sliding_window", 1, 1 << 24, true, &hp.swa_window));
    hp.embed_scale = std::sqrt(static_cast<float>(hp.n_embd));
  }
  // Without 'head_dim' the heads split n_embd evenly; a split that leaves a remainder (or
  // no dimensions at all, n_head > n_embd) is no model this planner can size.
  hp.head_dim = 0;
  WT_TRY(get_int("head_dim", 1, 1024, false, &hp.head_dim));
  if (hp.head_dim == 0) {
    const std::string heads = "'n_head' " + std::to_string(hp.n_head) + " and 'n_embd' " + std::to_string(hp.n_embd);
    if (hp.n_head > hp.n_embd)
      return error(WT_ERR_FORMAT, what + ": " + heads + " would give heads of 0 dimensions; give 'head_dim'");
    if (hp.n_embd % hp.n_head != 0)
      return error(WT_ERR_FORMAT, what + ": " + heads + " do not split evenly into heads; give 'head_dim'");
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  hp.n_rot = hp.head_dim;
  if (hp.n_head % hp.n_head_kv != 0)
    return error(WT_ERR_FORMAT, what + ": 'n_head' " + std::to_string(hp.n_head) + " is not a multiple of 'n_head_kv' " +
                                    std::to_string(hp.n_head_kv));
  bool tied = false;
  if (const Json* v = json_find(doc, "tied_output")) {
    if (!v->is_boolean()) return error(WT_ERR_FORMAT, what + ": 'tied_output' must be true or false");
    tied = v->get<bool>();
  }
  WT_TRY(get_string("weight_type", &weight_type));
  if (weight_type.empty()) return error(WT_ERR_FORMAT, what + ": missing 'weight_type'");
  WT_TRY(get_string("output_type", &output_type));
  WT_TRY(get_string("embed_type", &embed_type));
  DType wt_type, out_type, emb_type;
  WT_TRY(dtype_from_name(weight_type, what, "weight_type", &wt_type));
  WT_TRY(dtype_from_name(output_type.empty() ? weight_type : output_type, what, "output_type", &out_type));
  WT_TRY(dtype_from_name(embed_type.empty() ? weight_type : embed_type, what, "embed_type", &emb_type));

  const int64_t e = hp.n_embd, q = int64_t{hp.n_head} * hp.head_dim, kv = int64_t{hp.n_head_kv} * hp.head_dim;
  s.layers.resize(static_cast<size_t>(hp.n_layer));
  for (LayerWeights& lw : s.layers) {
    WT_TRY(described_tensor(DType::f32, e, 1, what, "attn_norm", &s, &lw.attn_norm));
    WT_TRY(described_tensor(wt_type, e, q, what, "wq", &s, &lw.wq));
    WT_TRY(described_tensor(wt_type, e, kv, what, "wk", &s, &lw.wk));
    WT_TRY(described_tensor(wt_type, e, kv, what, "wv", &s, &lw.wv));
    if (hp.arch == Arch::qwen2) {
      WT_TRY(described_tensor(DType::f32, q, 1, what, "bq", &s, &lw.bq));
      WT_TRY(described_tensor(DType::f32, kv, 1, what, "bk", &s, &lw.bk));
      WT_TRY(described_tensor(DType::f32, kv, 1, what, "bv", &s, &lw.bv));
    }
    if (hp.arch == Arch::qwen3 || hp.arch == Arch::gemma3) {
      WT_TRY(described_tensor(DType::f32, hp.head_dim, 1, what, "q_norm", &s, &lw.q_norm));
      WT_TRY(described_tensor(DType::f32, hp.head_dim, 1, what, "k_norm", &s, &lw.k_norm));
    }
    if (hp.arch == Arch::gemma3) {
      WT_TRY(described_tensor(DType::f32, e, 1, what, "attn_post_norm", &s, &lw.attn_post_norm));
      WT_TRY(described_tensor(DType::f32, e, 1, what, "ffn_post_norm", &s, &lw.ffn_post_norm));
    }
    WT_TRY(described_tensor(wt_type, q, e, what, "wo", &s, &lw.wo));
    WT_TRY(described_tensor(DType::f32, e, 1, what, "ffn_norm", &s, &lw.ffn_norm));
    WT_TRY(described_tensor(wt_type, e, hp.n_ff, what, "w_gate", &s, &lw.w_gate));
    WT_TRY(described_tensor(wt_type, e, hp.n_ff, what, "w_up", &s, &lw.w_up));
    WT_TRY(described_tensor(wt_type, hp.n_ff, e, what, "w_down", &s, &lw.w_down));
  }
  Tensor embd, norm;
  WT_TRY(described_tensor(emb_type, e, hp.n_vocab, what, "token_embd", &s, &embd));
  WT_TRY(described_tensor(DType::f32, e, 1, what, "output_norm", &s, &norm));
  s.tok_embd = embd;
  if (tied) {
    s.output = embd;
  } else {
    WT_TRY(described_tensor(out_type, e, hp.n_vocab, what, "output", &s, &s.output));
  }
  if (s.name.empty()) s.name = what;
  *out = std::move(s);
  return Status::ok();
}

Status load_model_description(const std::string& path, ModelShape* out) {
  std::string text;
  WT_TRY(read_text_file(path, &text));
  return parse_model_description(text, path, out);
}

}  // namespace wt
