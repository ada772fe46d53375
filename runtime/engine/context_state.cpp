// A context's state as bytes (wt_context_state_*): save it after a long prompt, load it
// into a fresh context of the same model and KV type, and continue as if the prompt had
// just been prefilled there. The format (version 1, little-endian, the hosts Whittle runs on):
//
//   header      StateHeader, 80 bytes: magic, format version, the model's fingerprint, the
//               pruning parameters' fingerprint, the KV type and shape, n_past, the policy
//               and re-indexing facts, the policy state's size
//   logits      n_vocab f32, the last row's (flag kLogits: there was a prefill or decode)
//   origin      reindexed i32: GemFilter's prompt position of each re-indexed rotary position
//   anchors     2 * n_layer * n_head_kv * head_dim f32 (flag kDecoding: Token Filtering's)
//   policy      policy_bytes: what the policy's later decode steps need (SlimInfer's active
//               blocks, Token Filtering's thresholds), as the policy writes it (policy.h)
//   per layer   i32 kv_len; i32 positions [n_head_kv][kv_len]; K rows, then V rows, kv_len
//               each, in the cache's type (only the rows the layer holds: a pruned prompt's
//               state is its kept KV)
//   trailer     u64 hash of every byte before it (state_io.h)
//
// Nothing depends on the backend: rows are the cache's element type, in logical order (the
// pager's blocks are gathered), so a state saved on one backend loads on another. A load
// first reads the whole state once without changing anything (every size against this
// context, the checksum), so a state that does not fit is refused and the context keeps
// what it held; only then does the second pass write the context.
#include <cstring>
#include <string>
#include <vector>

#include "context.h"
#include "op_runner.h"
#include "runtime/prune/registry.h"
#include "runtime/model/rope_scaling.h"
#include "state_io.h"

namespace wt {

namespace {

constexpr char kMagic[8] = {'W', 'T', 'S', 'T', 'A', 'T', 'E', '\0'};
constexpr uint32_t kFormat = 1;
constexpr uint32_t kDecoding = 1;  // the last prefill was pruned: decode steps ask the policy
constexpr uint32_t kLogits = 2;    // the last row's logits follow the header

struct StateHeader {
  char magic[8];
  uint32_t format;
  uint32_t header_bytes;
  uint64_t model_hash;
  uint64_t prune_hash;
  int32_t kv_type;  // wt_kv_type
  int32_t n_layer, n_head_kv, head_dim, n_vocab;
  int32_t n_past;
  int32_t prune_method;  // wt_prune_method
  uint32_t flags;
  int32_t reindexed, reindexed_from;
  uint64_t policy_bytes;
};
static_assert(sizeof(StateHeader) == 80, "the state header is 80 bytes, no padding");

void hash_bytes(StreamHash& h, const void* p, size_t n) { h.update(p, n); }
template <typename T>
void hash_value(StreamHash& h, const T& v) {
  h.update(&v, sizeof v);
}
void hash_tensor(StreamHash& h, const Tensor& t) {
  hash_value(h, static_cast<uint32_t>(t.type));
  hash_value(h, t.n_dims);
  for (int i = 0; i < 4; ++i) hash_value(h, t.ne[i]);
}

// The model, as far as the KV depends on it: architecture, shape, rotary setup, and every
// weight tensor's type and shape (a model quantized otherwise computes other KV).
uint64_t model_fingerprint(const Model& m, int32_t n_ctx) {
  StreamHash h;
  const Hparams& hp = m.hp;
  hash_bytes(h, m.arch_name.data(), m.arch_name.size());
  for (int32_t v : {static_cast<int32_t>(hp.arch), hp.n_layer, hp.n_embd, hp.n_ff, hp.n_head, hp.n_head_kv,
                    hp.head_dim, hp.n_rot, hp.n_vocab, static_cast<int32_t>(hp.rope_type),
                    static_cast<int32_t>(hp.rope_scaling), hp.rope_orig_ctx})
    hash_value(h, v);
  for (float v : {hp.rms_eps, hp.rope_theta, hp.rope_factor, hp.rope_low_freq_factor, hp.rope_high_freq_factor})
    hash_value(h, v);
  // YaRN's own parameters only under YaRN: the other scalings' states keep their fingerprint.
  if (hp.rope_scaling == RopeScaling::yarn)
    for (float v : {hp.yarn_beta_fast, hp.yarn_beta_slow, hp.yarn_attn_factor}) hash_value(h, v);
  // Sliding windows (gemma3) likewise only where there are any.
  if (hp.swa_window > 0) {
    for (int32_t v : {hp.swa_window, hp.swa_pattern, hp.attn_scale_dim}) hash_value(h, v);
    hash_value(h, hp.rope_theta_swa);
  }
  // LongRoPE's factors, those of the context's size (a state made with the long ones means
  // nothing in a context that ropes with the short ones), and a factor on cos and sin, only
  // where there are any: the other states keep their fingerprint.
  if (const std::vector<float>* f = longrope_factors(m, n_ctx)) hash_bytes(h, f->data(), f->size() * sizeof(float));
  // The factor has been on the keys' rotated dims since 2026-12-07 (RopeOp::mscale; before,
  // on q.k as a whole): a marker, so a state saved before, whose keys lack it, is refused.
  if (hp.rope_attn_factor != 1.0f) {
    hash_value(h, hp.rope_attn_factor);
    hash_value(h, int32_t{2});
  }
  for (const Tensor* t : {&m.tok_embd, &m.output_norm, &m.output, &m.rope_freqs}) hash_tensor(h, *t);
  for (const LayerWeights& lw : m.layers) {
    for (const Tensor* t : {&lw.attn_norm, &lw.wq, &lw.wk, &lw.wv, &lw.bq, &lw.bk, &lw.bv, &lw.wo, &lw.ffn_norm,
                            &lw.w_gate, &lw.w_up, &lw.w_down})
      hash_tensor(h, *t);
    // qwen3's head norms, only where present: the states of the other architectures keep
    // the fingerprint they were saved with.
    if (!lw.q_norm.empty())
      for (const Tensor* t : {&lw.q_norm, &lw.k_norm}) hash_tensor(h, *t);
    if (!lw.attn_post_norm.empty())  // gemma3's
      for (const Tensor* t : {&lw.attn_post_norm, &lw.ffn_post_norm}) hash_tensor(h, *t);
  }
  return h.value();
}

// The resolved pruning parameters: a policy's decode state means something only under the
// parameters that made it.
uint64_t prune_fingerprint(const wt_prune_params& p) {
  StreamHash h;
  hash_value(h, static_cast<int32_t>(p.method));
  auto add = [&](const PruneParamSpec& s) {
    hash_bytes(h, s.name, std::strlen(s.name));
    hash_value(h, prune_param_value(p, s));
  };
  for (const PruneParamSpec& s : shared_prune_params()) add(s);
  if (const PruneMethodSpec* m = find_prune_method(static_cast<int32_t>(p.method)))
    for (const PruneParamSpec& s : m->params) add(s);
  return h.value();
}

int32_t kv_type_value(DType t) { return t == DType::f16 ? WT_KV_F16 : t == DType::q8_0 ? WT_KV_Q8_0 : WT_KV_F32; }

const char* kv_name(int32_t t) {
  return t == WT_KV_F32 ? "f32" : t == WT_KV_F16 ? "f16" : t == WT_KV_Q8_0 ? "q8_0" : "an unknown type";
}

// The header's facts against the context: the format, the model, the KV type, n_past, the
// policy. Everything the payload holds is checked by read_state.
Status check_header(const StateHeader& h, const Context& c) {
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return error(WT_ERR_FORMAT, "not a Whittle context state (no WTSTATE magic)");
  if (h.format > kFormat)
    return error(WT_ERR_UNSUPPORTED, "the state's format version " + std::to_string(h.format) +
                                         " is newer than this library's (" + std::to_string(kFormat) + ")");
  if (h.format == 0 || h.header_bytes != sizeof(StateHeader))
    return error(WT_ERR_FORMAT, "the state's header is malformed (format " + std::to_string(h.format) + ", " +
                                    std::to_string(h.header_bytes) + " header bytes)");
  if (h.model_hash != model_fingerprint(c.model(), c.n_ctx()) || h.n_layer != c.model().hp.n_layer || h.n_head_kv != c.model().hp.n_head_kv ||
      h.head_dim != c.model().hp.head_dim || h.n_vocab != c.model().hp.n_vocab)
    return error(WT_ERR_INVALID_ARGUMENT, "the state was saved from another model (" + std::to_string(h.n_layer) +
                                              " layers, " + std::to_string(h.n_head_kv) + " KV heads of " +
                                              std::to_string(h.head_dim) + ", vocabulary " + std::to_string(h.n_vocab) +
                                              "; or the same shape with other weight types" +
                                              (c.model().rope_factors_long.empty()
                                                   ? std::string()
                                                   : "; or in a context whose size picks the other LongRoPE factors") +
                                              ")");
  if (h.kv_type != kv_type_value(c.kv_type()))
    return error(WT_ERR_INVALID_ARGUMENT, std::string("the state's KV cache is ") + kv_name(h.kv_type) +
                                              "; this context keeps " + kv_name(kv_type_value(c.kv_type())) +
                                              " (create it with the state's kv_type)");
  if ((h.flags & ~(kDecoding | kLogits)) != 0) return error(WT_ERR_FORMAT, "the state's flags are unknown");
  if (h.n_past < 0 || h.n_past > c.n_ctx())
    return error(h.n_past < 0 ? WT_ERR_FORMAT : WT_ERR_CONTEXT_FULL,
                 "the state holds " + std::to_string(h.n_past) + " tokens; this context is created for " +
                     std::to_string(c.n_ctx()));
  if (h.reindexed < 0 || h.reindexed > h.n_past || h.reindexed_from < h.reindexed || h.reindexed_from > c.n_ctx())
    return error(WT_ERR_FORMAT, "the state's re-indexing is malformed");
  const bool decoding = (h.flags & kDecoding) != 0;
  if (decoding) {
    const PruneMethodSpec* saved = find_prune_method(h.prune_method);
    if (!c.policy() || h.prune_method != static_cast<int32_t>(c.prune_params().method) || h.prune_hash != prune_fingerprint(c.prune_params()))
      return error(WT_ERR_INVALID_ARGUMENT,
                   std::string("the state was saved after a prompt pruned by ") + (saved ? saved->name : "an unknown method") +
                       ", whose later decode steps need the same method and parameters; this context prunes with " +
                       wt_prune_method_name(c.prune_params().method) + (h.prune_method == static_cast<int32_t>(c.prune_params().method)
                                                                  ? " under other parameters" : ""));
  } else if (h.policy_bytes != 0) {
    return error(WT_ERR_FORMAT, "the state has a policy part but no pruned prompt");
  }

  return Status::ok();
}

}  // namespace

uint64_t Context::state_bytes() const {
  const Hparams& hp = model_.hp;
  uint64_t n = sizeof(StateHeader) + sizeof(uint64_t);  // header, trailer
  if (last_rows_ > 0) n += sizeof(float) * static_cast<uint64_t>(hp.n_vocab);
  n += sizeof(int32_t) * static_cast<uint64_t>(reindexed_);
  if (policy_decoding_ && policy_) {
    n += sizeof(float) * 2 * static_cast<uint64_t>(hp.n_layer) * hp.n_head_kv * hp.head_dim;
    n += policy_->decode_state_bytes();
  }
  const uint64_t half = kv_row_bytes() / 2;  // one token's K (or V) in one layer
  for (int32_t len : kv_len_)
    n += sizeof(int32_t) + static_cast<uint64_t>(len) * (sizeof(int32_t) * hp.n_head_kv + 2 * half);
  return n;
}

Status Context::save_state(StateSink& out) {
  const Hparams& hp = model_.hp;
  std::unique_lock<std::mutex> lock = claim_backend();
  WT_TRY(backend_->synchronize(Stream::compute));
  const bool decoding = policy_decoding_ && policy_;
  StateHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kFormat;
  h.header_bytes = sizeof(StateHeader);
  h.model_hash = model_fingerprint(model_, n_ctx_);
  h.prune_hash = prune_fingerprint(prune_);
  h.kv_type = kv_type_value(options_.kv_type);
  h.n_layer = hp.n_layer;
  h.n_head_kv = hp.n_head_kv;
  h.head_dim = hp.head_dim;
  h.n_vocab = hp.n_vocab;
  h.n_past = n_past_;
  h.prune_method = static_cast<int32_t>(prune_.method);
  h.flags = (decoding ? kDecoding : 0u) | (last_rows_ > 0 ? kLogits : 0u);
  h.reindexed = reindexed_;
  h.reindexed_from = reindexed_from_;
  h.policy_bytes = decoding ? policy_->decode_state_bytes() : 0;
  WT_TRY(out.put(h));
  if (last_rows_ > 0) WT_TRY(out.write(logits(-1), sizeof(float) * static_cast<size_t>(hp.n_vocab)));
  WT_TRY(out.write(origin_, sizeof(int32_t) * static_cast<size_t>(reindexed_)));
  if (decoding) {
    WT_TRY(save_device_bytes(out, anchors_, anchor_bytes(hp)));
    const size_t before = out.written();
    WT_TRY(policy_->save_decode_state(out));
    if (out.written() - before != h.policy_bytes)
      return error(WT_ERR_INTERNAL, "the policy wrote another size of decode state than it said");
  }
  const size_t half = static_cast<size_t>(kv_row_bytes() / 2);
  OpRunner run(*backend_, options_.f32_activations);
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    const int32_t len = kv_len_[static_cast<size_t>(l)];
    WT_TRY(out.put(len));
    for (int32_t kh = 0; kh < hp.n_head_kv; ++kh)
      WT_TRY(out.write(kv_positions(l, kh), sizeof(int32_t) * static_cast<size_t>(len)));
    size_t slot = static_cast<size_t>(l);
    if (kv_) {  // the layer's blocks, in logical order, into the staging
      WT_TRY(kv_->require(l, nullptr, 0));
      WT_TRY(kv_->gather(run, l, k_cache_[0], v_cache_[0]));
      WT_TRY(backend_->synchronize(Stream::compute));
      slot = 0;
    }
    WT_TRY(save_device_bytes(out, k_cache_[slot].data, half * static_cast<size_t>(len)));
    WT_TRY(save_device_bytes(out, v_cache_[slot].data, half * static_cast<size_t>(len)));
  }
  return out.finish();
}

// Both passes of a load read the same fields in the same order; `apply` false only checks
// (nothing of the context changes but scratch), true writes them into the context.
Status Context::read_state(StateSource& in, bool apply) {
  const Hparams& hp = model_.hp;
  StateHeader h{};
  WT_TRY(in.get(&h));
  WT_TRY(check_header(h, *this));
  const bool decoding = (h.flags & kDecoding) != 0;

  if (apply) {  // from here on the context holds the state's tokens
    WT_TRY(backend_->synchronize(Stream::compute));
    reset();
  }
  if (h.flags & kLogits) {
    const size_t bytes = sizeof(float) * static_cast<size_t>(hp.n_vocab);
    WT_TRY(apply ? in.read(act_.logits.row<float>(0), bytes) : in.pass_over(bytes));
  }
  WT_TRY(in.read(apply ? origin_ : row_tmp_, sizeof(int32_t) * static_cast<size_t>(h.reindexed)));
  if (decoding) {
    const size_t bytes = anchor_bytes(hp);
    WT_TRY(apply ? load_device_bytes(in, anchors_, bytes) : in.pass_over(bytes));
    // Read, and checked by the policy, in both passes: a malformed policy part is refused
    // before the applying pass resets anything.
    const size_t before = in.consumed();
    WT_TRY(policy_->load_decode_state(in, h.policy_bytes, apply));
    if (in.consumed() - before != h.policy_bytes)
      return error(WT_ERR_FORMAT, "the state's policy part is not the size its header says");
  }
  const size_t half = static_cast<size_t>(kv_row_bytes() / 2);
  OpRunner run(*backend_, options_.f32_activations);
  for (int32_t l = 0; l < hp.n_layer; ++l) {
    int32_t len = 0;
    WT_TRY(in.get(&len));
    const int32_t cap = kv_cap_[static_cast<size_t>(l)];
    if (len < 0 || len > h.n_past)
      return error(WT_ERR_FORMAT, "layer " + std::to_string(l) + "'s row count " + std::to_string(len) + " is malformed");
    if (len > cap)
      return error(WT_ERR_CONTEXT_FULL, "layer " + std::to_string(l) + " of the state holds " + std::to_string(len) +
                                            " KV rows; this context's is sized for " + std::to_string(cap) +
                                            " (create it with a larger n_ctx, or max_new_tokens 0)");
    for (int32_t kh = 0; kh < hp.n_head_kv; ++kh) {
      int32_t* pos = apply ? kv_pos_of(l, kh) : row_tmp_;  // len <= the layer's rows (checked above)
      WT_TRY(in.read(pos, sizeof(int32_t) * static_cast<size_t>(len)));
      for (int32_t i = 0; i < len; ++i)
        if (pos[i] < 0 || pos[i] >= n_ctx_ + h.reindexed_from)
          return error(WT_ERR_FORMAT, "layer " + std::to_string(l) + " has a KV row at position " + std::to_string(pos[i]));
      // A model with sliding-window layers reads every layer's rows by row, so they must be
      // the last positions in order: all of them, or in a sliding layer at least its window's.
      if (hp.swa_window > 0) {
        bool last = h.reindexed == 0 && (slides(l) ? len >= std::min(h.n_past, hp.swa_window - 1) : len == h.n_past);
        for (int32_t i = 0; i < len && last; ++i) last = pos[i] == h.n_past - len + i;
        if (!last)
          return error(WT_ERR_FORMAT, "layer " + std::to_string(l) + "'s KV rows are not the last positions in order, "
                                          "which a model with sliding-window layers needs");
      }
    }
    const size_t bytes = half * static_cast<size_t>(len);
    if (!apply) {
      WT_TRY(in.pass_over(2 * bytes));
      continue;
    }
    const size_t slot = kv_ ? 0 : static_cast<size_t>(l);
    WT_TRY(load_device_bytes(in, k_cache_[slot].data, bytes));
    WT_TRY(load_device_bytes(in, v_cache_[slot].data, bytes));
    if (kv_ && len > 0) {  // into the layer's blocks; the copies finish before the staging is reused
      WT_TRY(kv_->append(run, l, k_cache_[0], v_cache_[0], len));
      WT_TRY(backend_->synchronize(Stream::compute));
    }
    kv_len_[static_cast<size_t>(l)] = len;
  }
  // The checking pass ran after verify(), so the trailer is known good, and it must start
  // right here; the applying one hashed what it wrote, so a file changed between the passes
  // is caught here.
  if (!apply) return in.expect_trailer();
  WT_TRY(in.finish());
  if (kv_) WT_TRY(kv_->finish_prefill(bounded_from_layer()));
  n_past_ = h.n_past;
  reindexed_ = h.reindexed;
  reindexed_from_ = h.reindexed_from;
  policy_decoding_ = decoding;
  pruned_end_ = decoding ? n_past_ : 0;
  last_rows_ = (h.flags & kLogits) ? 1 : 0;
  last_row_only_ = true;
  return Status::ok();
}

Status Context::load_state(StateSource& in) {
  std::unique_lock<std::mutex> lock = claim_backend();
  // The header's facts first (another model, KV type, version: the specific reasons), then
  // the checksum over every byte (a damaged or cut state, before its sizes are believed),
  // then every size against this context; the context is as it was if any fails.
  StateHeader h{};
  WT_TRY(in.get(&h));
  WT_TRY(check_header(h, *this));
  WT_TRY(in.verify());
  WT_TRY(read_state(in, false));
  WT_TRY(in.rewind());
  const Status st = read_state(in, true);
  if (!st.is_ok()) reset();  // a read error half way (the file changed under us): start over
  return st;
}

}  // namespace wt
