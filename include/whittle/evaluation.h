/* whittle/evaluation.h — part of whittle.h, which includes it; never include it on its own.
 * What the pruning of a context did, and the evaluation taps: the tokens it ranked, kept
 * and attended.
 * The types, conventions and extern "C" block are whittle.h's. */
#ifndef WHITTLE_EVALUATION_H
#define WHITTLE_EVALUATION_H
#ifndef WHITTLE_H
#error "include whittle.h: it includes this part where it belongs"
#endif

/* What the pruning policy did in the last pruned prefill (and the decodes after it). The
 * arrays have n_layer entries and stay valid until the next prefill, reset or free. */
typedef struct wt_prune_stats {
  WT_OUT_STRUCT_SIZE(wt_prune_stats); /* set by the caller; since API 5 */
  wt_prune_method method;
  int32_t n_prompt;          /* L, prompt tokens of the pruned prefill                       */
  int32_t n_layer;
  int32_t selection_layer;   /* the layer whose scores chose the kept tokens (TSP, ASL,
                                CLAA, GemFilter filter, SlimInfer's last stage); -1 = none  */
  bool triggered;            /* ASL: the variance test fired (false: no selection, or forced
                                at asl_max_layer); others: a selection happened             */
  int32_t n_selected;        /* hidden rows after the selection (L when none)               */
  const int32_t* kv_rows;    /* [n_layer] prompt KV rows kept per layer (per KV head)       */
  const int32_t* hidden_rows;/* [n_layer] rows each layer computed in the (last) pass       */
  const uint64_t* kv_bytes;  /* [n_layer] bytes of the kept prompt KV per layer             */
  int64_t n_attention_skipped; /* (token, layer) pairs whose attention was skipped          */
  int32_t n_block_swaps;     /* SlimInfer: decode steps x groups whose active set changed    */
  double asl_min_ratio;      /* ASL: the smallest V_l / V_init of the variance test, and the */
  int32_t asl_min_ratio_layer; /* layer where it was seen (-1: never evaluated)            */
  double score_ms;           /* time in scoring and selection ops                           */
  double pass1_ms;           /* two-pass methods: the filter pass (oracle: prefill + answer) */
  double prefill_ms;         /* the whole pruned prefill, both passes                       */
  /* Since API 7. ASL: [n_layer] V_l / V_init at each layer where the variance test ran (1 at
   * the first, whose V is V_init: max(asl_min_layer, asl_obs_layers - 1)); NaN where it did
   * not run (before that layer, after the selection, every layer when the prompt fit the
   * budget or V_init was 0). NULL for the other methods and before ASL's first pruned
   * prefill. The curve asl_tau is compared with: a run with a tiny asl_tau (1e-6: it does not
   * fire) shows where each tau would select. */
  const double* asl_ratios;
} wt_prune_stats;

/* WT_ERR_INVALID_ARGUMENT: NULL arguments, or an out_stats->struct_size the library does
 * not write. */
WT_API wt_status wt_context_get_prune_stats(const wt_context* ctx, wt_prune_stats* out_stats);

/* The importance by which the method of the last pruned prefill ranked the prompt's tokens
 * (an evaluation tap: needs prune.record_ranking = 1). layer in [0, n_layer): the scores
 * the method computed at that layer; layer -1: the final ranking it selected its kept
 * tokens / KV by. out_scores[j] is prompt position j's score, for j in [0, *out_n) with
 * *out_n = n_prompt of the last pruned prefill (original positions, also after GemFilter's
 * re-indexing); higher = more important. NaN where that layer ranked nothing for the token:
 * window tokens (never scored), tokens already dropped, layers where the method computed no
 * score, and every row when the prompt fit the budget. runtime/prune/README.md says what
 * each method records. The pointer stays valid until the next prefill, reset or free.
 * WT_ERR_INVALID_ARGUMENT: NULL arguments, layer outside [-1, n_layer), recording off (the
 * message says to set prune.record_ranking = 1), or no pruned prefill since the last
 * reset. */
WT_API wt_status wt_context_get_token_ranking(const wt_context* ctx, int32_t layer,
                                              const float** out_scores, int32_t* out_n);

/* Which tokens' KV a layer holds (an evaluation tap; any context, pruned or not): the
 * original position of each KV row that `layer`, KV head `kv_head` holds now, in the order
 * the rows are stored. A prompt token's position is its index in the prompt (also after
 * GemFilter's re-indexed re-prefill, whose rotary positions are 0..K-1); the t-th token after
 * a prompt of L tokens is at L + t. *out_n is the number of rows (0 on a fresh or reset
 * context). The pointer stays valid until the next prefill, decode, reset or free.
 * WT_ERR_INVALID_ARGUMENT: NULL arguments, layer outside [0, n_layer), kv_head outside
 * [0, n_head_kv). */
WT_API wt_status wt_context_get_kv_positions(const wt_context* ctx, int32_t layer, int32_t kv_head,
                                             const int32_t** out_positions, int32_t* out_n);

/* Which KV rows a layer's attention read in the last decode step (an evaluation tap: needs
 * prune.record_ranking = 1): after a pruned prefill, a method may attend only some of a
 * layer's rows at each step (decode_topk: the best blocks by the step's own attention;
 * SlimInfer: its active blocks). out_rows[i] indexes the rows wt_context_get_kv_positions
 * lists for that layer (the same rows for every KV head; map them through its list for a
 * head's positions), in the order the method gives them (decode_topk: the chosen prompt rows
 * ascending, then every row generated since); *out_n of them. Every row the layer held,
 * 0..n-1, when the method chose none at that step.
 * The pointer stays valid until the next prefill, decode, reset or free.
 * WT_ERR_INVALID_ARGUMENT: NULL arguments, layer outside [0, n_layer), recording off (the
 * message says to set prune.record_ranking = 1), or the last call that ran the model was not
 * a decode step after a pruned prefill. */
WT_API wt_status wt_context_get_attended_rows(const wt_context* ctx, int32_t layer, const int32_t** out_rows,
                                              int32_t* out_n);

#endif /* WHITTLE_EVALUATION_H */
