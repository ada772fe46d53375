/* whittle/state.h — part of whittle.h, which includes it; never include it on its own.
 * A context's state saved to bytes or a file and loaded into a fresh context.
 * The types, conventions and extern "C" block are whittle.h's. */
#ifndef WHITTLE_STATE_H
#define WHITTLE_STATE_H
#ifndef WHITTLE_H
#error "include whittle.h: it includes this part where it belongs"
#endif

/* A context's state as bytes: every layer's KV rows (in the context's KV type: only the rows
 * the layer holds, so a pruned prompt's state is its kept KV, with their original positions),
 * n_past, the last row's logits, and what the pruning policy's later decode steps need
 * (SlimInfer's active blocks, Token Filtering's thresholds). Load it into a fresh context of
 * the same model and KV type (any backend: the format does not depend on it, nor on the KV
 * pager) and continue: prefill more tokens, decode, generate, with the results of the
 * context that was saved (bit for bit on the CPU backend). A state made after a pruned
 * prefill needs a context with the same pruning method and parameters; one without a
 * pruned prefill loads into any context of the model and KV type. The format carries a
 * version, the model's fingerprint (shape, rotary setup, every weight's type and shape) and
 * a checksum of its bytes.
 *
 * Size in bytes of the state now (it changes with every prefill and decode).
 * WT_ERR_INVALID_ARGUMENT: NULL arguments. */
WT_API wt_status wt_context_state_size(const wt_context* ctx, size_t* out_bytes);

/* Writes the state into buffer[0, capacity); *out_bytes = bytes written.
 * WT_ERR_BUFFER_TOO_SMALL: buffer NULL or capacity below wt_context_state_size, and
 * *out_bytes receives the size needed (nothing written). WT_ERR_INVALID_ARGUMENT: NULL ctx or
 * out_bytes. WT_ERR_BACKEND: reading the KV back from the device failed. */
WT_API wt_status wt_context_state_save(wt_context* ctx, void* buffer, size_t capacity, size_t* out_bytes);

/* The same into a file: written to "<path>.tmp", then renamed over path, so path is either
 * the old file or the whole new state. WT_ERR_IO: the file cannot be created, written or
 * renamed (the .tmp file is removed). */
WT_API wt_status wt_context_state_save_file(wt_context* ctx, const char* path);

/* Replaces ctx's tokens with a saved state. The whole state is read and checked first; if a
 * check fails, ctx is unchanged (tokens, KV, logits) and the status says why:
 * WT_ERR_FORMAT: not a state, truncated, damaged (checksum), or inconsistent;
 * WT_ERR_UNSUPPORTED: a newer format version than this library reads;
 * WT_ERR_INVALID_ARGUMENT: NULL arguments, a state of another model, of another KV type, or
 * made after a prefill pruned by another method or other parameters than ctx's;
 * WT_ERR_CONTEXT_FULL: more tokens than ctx's n_ctx, or a layer with more KV rows than ctx
 * is sized for (max_new_tokens). Nothing is allocated: the state goes into ctx's own memory.
 * A read that fails after the checks passed (the file changed meanwhile) resets ctx as
 * wt_context_reset does. After a load, wt_context_logits(ctx, -1, ...) is the last row's
 * logits of the saved context (none if it had none); wt_context_get_stats counts from zero. */
WT_API wt_status wt_context_state_load(wt_context* ctx, const void* state, size_t n_bytes);

/* The same from a file. WT_ERR_IO: the file cannot be opened or read. */
WT_API wt_status wt_context_state_load_file(wt_context* ctx, const char* path);

#endif /* WHITTLE_STATE_H */
