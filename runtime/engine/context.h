// A context: one conversation's state (KV cache, activations) over a shared Model, and the
// forward loop that runs prefill and decode. Everything is allocated in create(); prefill
// and decode only launch ops on views of the arena.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "../../backends/backend.h"
#include "../model/model.h"
#include "../status.h"

namespace wt {

struct ContextOptions {
  int32_t n_ctx = 0;        // 0 = model's training context
  int32_t n_threads = 0;    // 0 = all cores
  bool logits_all = false;  // keep logits for every row of a prefill
  bool f32_activations = false;  // matmuls without int8 activation quantization
  bool (*progress)(float, void*) = nullptr;
  void* progress_user = nullptr;
};

struct ContextStats {
  int32_t n_prefill_tokens = 0;
  double prefill_ms = 0;
  int32_t n_decode_tokens = 0;
  double decode_ms = 0;
  uint64_t arena_bytes = 0;
  uint64_t kv_bytes = 0;
};

class Context {
 public:
  static Status create(const Model& model, const ContextOptions& options, std::unique_ptr<Context>* out);
  ~Context();

  Status prefill(const int32_t* tokens, int32_t n_tokens);
  Status decode(int32_t token);
  // Logits row `row` of the last call (-1 = last row); nullptr if not kept.
  const float* logits(int32_t row) const;
  int32_t n_logit_rows() const { return n_logit_rows_; }

  void reset();
  int32_t n_past() const { return n_past_; }
  int32_t n_ctx() const { return n_ctx_; }
  const ContextStats& stats() const { return stats_; }
  const Model& model() const { return model_; }
  const Backend& backend() const { return *backend_; }

 private:
  Context(const Model& model, const ContextOptions& options) : model_(model), options_(options) {}
  Status allocate();
  Status forward(const int32_t* tokens, int32_t n_tokens, bool report_progress);
  Status check_tokens(const int32_t* tokens, int32_t n_tokens) const;

  // Activations of the forward pass, each a view of the arena sized for n_ctx rows.
  struct Activations {
    Tensor x;         // [n_embd, n]          residual stream
    Tensor xn;        // [n_embd, n]          normed input of a block / block output
    Tensor q;         // [head_dim, n_head, n]
    Tensor k;         // [head_dim, n_head_kv, n]
    Tensor v;         // [head_dim, n_head_kv, n]
    Tensor attn;      // [head_dim, n_head, n] attention output
    Tensor gate;      // [n_ff, n]
    Tensor up;        // [n_ff, n]
    Tensor logits;    // [n_vocab, n_logit_rows]
  };

  const Model& model_;
  ContextOptions options_;
  std::unique_ptr<Backend> backend_;
  Buffer arena_;
  Activations act_;
  std::vector<Tensor> k_cache_;  // per layer [head_dim, n_head_kv, n_ctx]
  std::vector<Tensor> v_cache_;
  int32_t* positions_ = nullptr; // [n_ctx] in the arena
  int32_t* token_ids_ = nullptr; // [n_ctx] in the arena
  float* rope_divisors_ = nullptr;
  int32_t n_ctx_ = 0;
  int32_t n_past_ = 0;
  int32_t n_logit_rows_ = 0;  // rows the logits buffer holds
  int32_t last_rows_ = 0;     // rows of the last prefill/decode (0: no logits yet)
  ContextStats stats_;
};

}  // namespace wt
