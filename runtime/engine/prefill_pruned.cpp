// The pruned prefill: a prompt's first pass with the context's policy, then — for two-pass
// and answer-informed methods — the re-prefill of the tokens the policy chose. Decode then
// continues at the original position L (GemFilter's re-indexing: at K).
#include <algorithm>
#include <chrono>
#include <cstring>

#include "context.h"
#include "op_runner.h"

namespace wt {

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Status Context::prefill_pruned(const int32_t* tokens, int32_t n) {
  const Hparams& hp = model_.hp;
  const auto t0 = std::chrono::steady_clock::now();
  prune_stats_.n_prompt = n;
  prune_stats_.score_ms = prune_stats_.pass1_ms = 0;
  std::fill(prune_stats_.hidden_rows.begin(), prune_stats_.hidden_rows.end(), 0);
  WT_TRY(zero_device_bytes(anchors_, anchor_bytes(hp)));
  for (int32_t& len : kv_len_) len = 0;
  reindexed_ = reindexed_from_ = 0;

  begin_ranking(n);
  policy_->begin(n, 0);
  for (int32_t i = 0; i < n; ++i) tok_tmp_[i] = i;
  Decision restart;
  WT_TRY(forward(tokens, tok_tmp_, n, policy_.get(), &restart));
  n_past_ = n;

  if (!restart.restart && policy_->answer_tokens() > 0) {
    // Answer-informed: generate greedily with full KV while the policy watches the answer's
    // attention, then let it choose.
    policy_decoding_ = true;
    OpRunner run(*backend_, options_.f32_activations);
    const int32_t n_answer = std::min(policy_->answer_tokens(), n_ctx_ - n);
    for (int32_t a = 0; a < n_answer; ++a) {
      int32_t tok = 0;
      WT_TRY(run.argmax(first_rows(act_.logits, 1), &tok));
      if (model_.vocab.is_end(tok)) break;
      const int32_t pos = n_past_;
      WT_TRY(forward(&tok, &pos, 1, nullptr, nullptr));
      ++n_past_;
    }
    policy_decoding_ = false;
    BackendSelector selector(*backend_, arena_, host_arena_, topk_in_, score_capacity_);
    WT_TRY(policy_->after_answer(selector, &restart));
  }
  // The ranking is the first pass's (and the answer's): the re-prefill sees only the chosen
  // tokens, and decodes are not the prompt.
  policy_->set_ranking_sink(nullptr);

  if (restart.restart) {
    prune_stats_.pass1_ms = ms_since(t0);
    const int32_t k = restart.n_keep_rows;
    if (k < 1 || k > n) return error(WT_ERR_INTERNAL, "a policy restarted with " + std::to_string(k) + " tokens");
    // Rows of the first pass are the prompt's own indices (it never shrinks before a restart).
    for (int32_t i = 0; i < k; ++i) {
      tok_tmp_[i] = tokens[restart.keep_rows[i]];
      row_tmp_[i] = restart.reindex ? i : restart.keep_rows[i];
    }
    std::memmove(positions_, row_tmp_, sizeof(int32_t) * static_cast<size_t>(k));
    if (restart.reindex) {
      std::memcpy(origin_, restart.keep_rows, sizeof(int32_t) * static_cast<size_t>(k));
      reindexed_ = k;
      reindexed_from_ = n;
    }
    WT_TRY(zero_device_bytes(anchors_, anchor_bytes(hp)));
    policy_->begin(k, 1);
    Decision unused;
    WT_TRY(forward(tok_tmp_, positions_, k, policy_.get(), &unused));
    if (unused.restart) return error(WT_ERR_INTERNAL, "a policy restarted its second pass");
    n_past_ = restart.reindex ? k : n;
  }
  policy_decoding_ = true;
  pruned_end_ = n_past_;

  const uint64_t row_bytes = kv_row_bytes();
  for (size_t l = 0; l < kv_len_.size(); ++l) {
    prune_stats_.kv_rows[l] = kv_len_[l];
    prune_stats_.kv_bytes[l] = row_bytes * static_cast<uint64_t>(kv_len_[l]);
  }
  prune_stats_.report = policy_->report();
  prune_stats_.prefill_ms = ms_since(t0);
  return Status::ok();
}

}  // namespace wt
