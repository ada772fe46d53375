/* whittle.h — the one public header of the Whittle inference runtime.
 *
 * Conventions
 * - Ownership: a *_create / *_load call hands the caller a handle that the caller owns and
 *   releases with the matching *_free. Every other call borrows its arguments; pointers
 *   returned by accessors stay valid until the owning handle changes or is freed.
 * - Errors: every fallible call returns wt_status (WT_OK is zero). On failure,
 *   wt_last_error() gives a message naming what was wrong; it is per thread and valid until
 *   the next Whittle call on that thread. Output parameters (named out_*, always last) are
 *   written only on success (the exceptions say so: a needed size with
 *   WT_ERR_BUFFER_TOO_SMALL, wt_generate's count). No call aborts the process or lets a C++
 *   exception escape: a host allocation that fails anywhere in a call makes it return
 *   WT_ERR_OUT_OF_MEMORY, with everything it made freed and the objects it was given as
 *   usable as before (a context: see wt_context_prefill). wt_*_free(NULL) does nothing.
 * - Threading: a wt_model is immutable once loaded and may be shared by contexts on several
 *   threads. A wt_context (and a wt_sampler) is used by one thread at a time: a call on
 *   it while another thread is inside a call on it returns WT_ERR_BUSY (wt_context_abort
 *   excepted; wt_context_reset and the *_free calls cannot report it and must not race).
 *   Calls made from a callback on the thread already inside a call pass, except those that
 *   run the model on the same context: wt_context_prefill, wt_context_decode and
 *   wt_generate return WT_ERR_BUSY there (they would change the KV and logits under the
 *   running call), and wt_context_reset does nothing there.
 *   Contexts of a model loaded for a device (WT_BACKEND_VULKAN, WT_BACKEND_CUDA) share its
 *   one device and take turns on it: a prefill or decode holds the device for its whole
 *   duration.
 * - Units: sizes in bytes end in _bytes, counts start with n_, times are in milliseconds.
 * - Parameters: fill a params struct with its wt_*_default_params() function, then change
 *   the fields you care about.
 * - Binary compatibility: every params struct (wt_model_params, wt_tokenize_params,
 *   wt_prune_params, wt_context_params, wt_sampler_params) starts with `size_t
 *   struct_size`, which its default function sets to the struct's size in the header the
 *   application was compiled with; leave it as it is. New fields are only ever appended,
 *   and a library reads a caller's struct by its struct_size: an application built against
 *   an older whittle.h keeps working with a newer library, which reads only the fields the
 *   older struct has and gives the newer ones their defaults. A struct_size smaller than the
 *   oldest layout the library reads (0: a struct not filled by its default function), larger
 *   than the library's own (a header newer than the library) or between two layouts is
 *   WT_ERR_INVALID_ARGUMENT; the message names the struct, its struct_size and the sizes the
 *   library accepts. wt_prune_params inside wt_context_params carries its own struct_size,
 *   and the context fields after it are read where the caller's prune layout puts them.
 *   WT_API_VERSION grows by one whenever a params struct gains fields; the fields added
 *   after version 1 say since when they exist. A default may change without a new layout,
 *   and then applies to applications built against older headers too: kv_type's became
 *   WT_KV_F16 on 2026-12-02 (WT_KV_F32 before).
 * - The structs the library fills (wt_model_info, wt_context_plan_info, wt_context_stats,
 *   wt_prune_stats) start with `size_t struct_size` too (since API 5), which the caller
 *   sets to the struct's size before the call: `st.struct_size = sizeof st;` in C
 *   (in C++ the member's initializer sets it). The library writes no byte beyond it: an
 *   application built against an older header gets the fields its struct has, the newer
 *   ones left out. A caller's struct larger than the library's (a newer header) gets the
 *   library's fields and the rest untouched. On return struct_size is the number of bytes
 *   written, so a caller can tell which fields were filled. A struct_size smaller than the
 *   oldest layout (0: not set) or between two layouts is WT_ERR_INVALID_ARGUMENT, nothing
 *   written. Before API 5 these structs had no size: an application built against an
 *   API 1-4 header must be rebuilt for API 5.
 */
#ifndef WHITTLE_H
#define WHITTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32) && defined(WHITTLE_SHARED)
#  if defined(WHITTLE_BUILD)
#    define WT_API __declspec(dllexport)
#  else
#    define WT_API __declspec(dllimport)
#  endif
#elif defined(WHITTLE_SHARED)
#  define WT_API __attribute__((visibility("default")))
#else
#  define WT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==== Version ========================================================================= */

#define WHITTLE_VERSION_MAJOR 0
#define WHITTLE_VERSION_MINOR 1
#define WHITTLE_VERSION_PATCH 0

/* The version of the params structs' layouts (Binary compatibility above): 1 the first; 2
 * memory_budget_bytes; 3 the KV pager fields; 4 wt_prune_params.extra and the calls listing
 * methods and parameters; 5 struct_size in the structs the library fills; 6 kv_type; 7
 * asl_ratios; 8 kv_pager_flags; 9 pager_transfers, wt_model_copy_bandwidth; 10 n_batch_rows
 * (n_ffn_rows until 2026-12-04); 11 batch_rows in the plan and stats; 12 the sampler's min_p,
 * repetition penalties, wt_sampler_accept and _reset; 13 wt_model_params.rope_*; 14
 * cpu_flags and threads_per_op. */
#define WT_API_VERSION 14

/* "MAJOR.MINOR.PATCH" of the linked library (may differ from the macros above). */
WT_API const char* wt_version(void);
/* WT_API_VERSION of the linked library: it reads params structs of every version from 1 up
 * to this one, and fills output structs of every version from 5 up. */
WT_API int32_t wt_api_version(void);

/* ==== Status ========================================================================== */

typedef enum wt_status {
  WT_OK = 0,
  WT_ERR_INVALID_ARGUMENT = 1, /* a NULL handle, a parameter out of range, a bad token id  */
  WT_ERR_FORMAT = 2,           /* a malformed or inconsistent model file                    */
  WT_ERR_UNSUPPORTED = 3,      /* valid input this build cannot run (architecture, type,
                                  chat template, backend not compiled in)                   */
  WT_ERR_IO = 4,               /* a file could not be opened, mapped or read                */
  WT_ERR_OUT_OF_MEMORY = 5,    /* an allocation failed (host or device)                     */
  WT_ERR_BUDGET = 6,           /* the plan does not fit the memory it is given              */
  WT_ERR_CONTEXT_FULL = 7,     /* more tokens than the context was created for              */
  WT_ERR_BUFFER_TOO_SMALL = 8, /* a caller buffer is too small; the needed size is reported */
  WT_ERR_BACKEND = 9,          /* the device or its driver failed                           */
  WT_ERR_ABORTED = 10,         /* a callback asked to stop                                  */
  WT_ERR_INTERNAL = 11,        /* a broken invariant inside Whittle: please report it       */
  WT_ERR_BUSY = 12             /* the context or sampler is in a call on another thread     */
} wt_status;

/* A static, never-NULL name for a status ("WT_ERR_FORMAT"). */
WT_API const char* wt_status_string(wt_status status);
/* The detail of the last failure on this thread ("" when there was none). */
WT_API const char* wt_last_error(void);

/* ==== Logging ========================================================================= */

typedef enum wt_log_level { WT_LOG_ERROR = 0, WT_LOG_WARN = 1, WT_LOG_INFO = 2, WT_LOG_DEBUG = 3 } wt_log_level;

typedef void (*wt_log_callback)(wt_log_level level, const char* text, void* user);

/* Routes the library's log lines (process-wide). NULL restores the default, which prints
 * warnings and errors to stderr. */
WT_API void wt_set_log_callback(wt_log_callback callback, void* user);

/* The first member of a struct the library fills: in C++ it sets itself to the struct's size
 * (a default member initializer: still an aggregate, the same layout); in C the caller sets it. */
#ifdef __cplusplus
#  define WT_OUT_STRUCT_SIZE(type) size_t struct_size = sizeof(type)
#else
#  define WT_OUT_STRUCT_SIZE(type) size_t struct_size
#endif

/* ==== Handles and basic types ========================================================= */

typedef struct wt_model wt_model;
typedef struct wt_context wt_context;
typedef struct wt_sampler wt_sampler;
typedef struct wt_detokenizer wt_detokenizer;
typedef int32_t wt_token;

typedef enum wt_backend_kind { WT_BACKEND_CPU = 0, WT_BACKEND_VULKAN = 1, WT_BACKEND_CUDA = 2 } wt_backend_kind;

/* Rope scaling asked for at load (API 13), for a model read past its trained context. FILE:
 * the file's; LINEAR: positions / factor; YARN as HF and llama.cpp: betas 32 and 1, q.k times
 * (0.1 ln factor + 1)^2 (Qwen2.5, Qwen3: factor 4 over 32768; Qwen3's files say 40960). */
typedef enum wt_rope_scaling {
  WT_ROPE_SCALING_FILE = 0, WT_ROPE_SCALING_NONE = 1, WT_ROPE_SCALING_LINEAR = 2, WT_ROPE_SCALING_YARN = 3
} wt_rope_scaling;

/* Returns false to abort the operation (which then returns WT_ERR_ABORTED). */
typedef bool (*wt_progress_callback)(float progress, void* user);

/* ==== Model =========================================================================== */

typedef struct wt_model_params {
  size_t struct_size;            /* sizeof(wt_model_params): set by the default function  */
  wt_backend_kind backend;       /* where the weights are placed and every context of the
                                    model runs; default WT_BACKEND_CPU. WT_BACKEND_VULKAN
                                    uploads the weights to the best Vulkan device once;
                                    WT_BACKEND_CUDA to CUDA device 0 (a build configured
                                    with -DWHITTLE_CUDA=ON)                               */
  wt_progress_callback progress; /* load progress in [0,1]; may be NULL                    */
  void* progress_user;
  /* Since API 13: a scaling other than FILE (the default) replaces the file's (refused over
     a rope_freqs.weight tensor); with YARN, n_ctx_train becomes >= factor x rope_orig_ctx. */
  wt_rope_scaling rope_scaling;
  float rope_scaling_factor;     /* LINEAR, YARN: in [1, 1024] (default 1)                  */
  int32_t rope_orig_ctx;         /* YARN: the trained context; 0 (default): context_length  */
} wt_model_params;

WT_API wt_model_params wt_model_default_params(void);

/* Loads a GGUF model. params may be NULL (the defaults).
 * WT_ERR_INVALID_ARGUMENT: NULL path or out_model, a struct_size the library does not read,
 * a rope_scaling or rope_scaling_factor out of range, a negative rope_orig_ctx.
 * WT_ERR_IO: cannot open or map the file.
 * WT_ERR_FORMAT: the file is malformed (the message names the field).
 * WT_ERR_UNSUPPORTED: an architecture, tensor type, tokenizer or backend this build lacks,
 * a rope scaling Whittle does not compute (YaRN's variants; the message names it),
 * WT_BACKEND_VULKAN with no usable Vulkan device, or WT_BACKEND_CUDA in a build without
 * CUDA or on a machine without a CUDA GPU and driver (the message says which). A device
 * backend also refuses weight types its kernels do not read, naming the tensor.
 * WT_ERR_ABORTED: the progress callback returned false. */
WT_API wt_status wt_model_load(const char* path, const wt_model_params* params,
                               wt_model** out_model);
/* Frees the model and its device memory; free its contexts first, and all before exit.
 * Freeing while the process exits (a static object's destructor, an atexit handler, even one
 * made before the first Vulkan use) is safe too: once exit() may have torn the Vulkan driver
 * down, a Vulkan model or context frees only its host memory and calls nothing in the driver
 * (the device memory goes with the process); the CUDA runtime answers calls after its own
 * teardown with an error, which a free ignores. */
WT_API void wt_model_free(wt_model* model);

typedef struct wt_model_info {
  WT_OUT_STRUCT_SIZE(wt_model_info); /* set by the caller; since API 5 */
  const char* architecture; /* "llama", "qwen2", "qwen3", "smollm3", "gemma3", "phi3"    */
  const char* name;         /* general.name, or "" when absent                            */
  int32_t n_layer;
  int32_t n_embd;
  int32_t n_ff;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t head_dim;
  int32_t n_vocab;
  int32_t n_ctx_train;
  uint64_t n_params;
  uint64_t weight_bytes;
  const char* backend;      /* where the weights live and the model runs: "cpu", "vulkan",
                               "cuda"                                                     */
  const char* device;       /* that backend's device ("llvmpipe (LLVM 15.0.6, 256 bits)");
                               "" for the CPU backend. Strings live as long as the model.  */
} wt_model_info;

/* WT_ERR_INVALID_ARGUMENT: NULL model or out_info, or an out_info->struct_size the
 * library does not write (see Binary compatibility). */
WT_API wt_status wt_model_get_info(const wt_model* model, wt_model_info* out_info);

/* Since API 9. The host -> device copy bandwidth of the model's backend in GB/s (1e9 B/s):
 * `bytes` copied from pinned host to device memory on the copy stream (the KV pager's path;
 * the CPU backend: a memcpy on its copy worker), best of three after a warm-up, allocating
 * 2 x bytes for the call. Its copies count in the pager_copy_ms of the model's contexts
 * alive meanwhile: probe before making them.
 * WT_ERR_INVALID_ARGUMENT: NULL model or out_gbs, bytes outside [1 MiB, 1 GiB];
 * WT_ERR_OUT_OF_MEMORY when the buffers do not fit; WT_ERR_BUSY when a call of one of the
 * model's contexts holds its device (another thread's, or this one's from a callback). */
WT_API wt_status wt_model_copy_bandwidth(const wt_model* model, uint64_t bytes, double* out_gbs);

/* ==== Tokenizer ======================================================================= */

/* Special token ids; -1 when the model has none. */
WT_API wt_token wt_token_bos(const wt_model* model);
WT_API wt_token wt_token_eos(const wt_model* model);
/* True for tokens that end a generation (eos, <|im_end|>, <|eot_id|>, <|eom_id|>, ...). */
WT_API bool wt_token_is_end(const wt_model* model, wt_token token);

typedef struct wt_tokenize_params {
  size_t struct_size; /* sizeof(wt_tokenize_params): set by the default function         */
  bool add_special;   /* add BOS/EOS as the model's flags ask                          */
  bool parse_special; /* turn "<|im_start|>"-style text into its special token          */
} wt_tokenize_params;

WT_API wt_tokenize_params wt_tokenize_default_params(void);

/* Tokenizes text_len bytes of UTF-8 text (invalid bytes are encoded as bytes); params may
 * be NULL (the defaults). out_n_tokens receives the token count; tokens may be NULL with
 * capacity 0 to ask for it. WT_ERR_BUFFER_TOO_SMALL: capacity < count, and out_n_tokens
 * still receives the needed count. WT_ERR_INVALID_ARGUMENT: NULL arguments (also tokens
 * NULL with a capacity above 0), a struct_size the library does not read, a text_len
 * larger than any object can be (> PTRDIFF_MAX). */
WT_API wt_status wt_tokenize(const wt_model* model, const char* text, size_t text_len,
                             const wt_tokenize_params* params, wt_token* tokens,
                             size_t capacity, size_t* out_n_tokens);

/* The raw bytes of one token (which may be part of a UTF-8 character), not terminated.
 * WT_ERR_INVALID_ARGUMENT: token out of range. WT_ERR_BUFFER_TOO_SMALL: as above. */
WT_API wt_status wt_token_to_bytes(const wt_model* model, wt_token token, char* buf,
                                   size_t capacity, size_t* out_len);

/* A streaming detokenizer: push tokens, receive only complete UTF-8 characters. A token
 * that ends mid-character is held back until the character completes; invalid sequences
 * come out as U+FFFD. */
WT_API wt_status wt_detokenizer_create(const wt_model* model, wt_detokenizer** out_detok);
WT_API void wt_detokenizer_free(wt_detokenizer* detok);
/* Appends the text completed by token to buf (NUL-terminated; *out_len excludes the NUL).
 * WT_ERR_BUFFER_TOO_SMALL if capacity < text + 1 (nothing is consumed then). */
WT_API wt_status wt_detokenizer_push(wt_detokenizer* detok, wt_token token, char* buf,
                                     size_t capacity, size_t* out_len);
/* Emits what is held back (as U+FFFD for an incomplete character) and resets. */
WT_API wt_status wt_detokenizer_flush(wt_detokenizer* detok, char* buf, size_t capacity,
                                      size_t* out_len);

/* ==== Chat template =================================================================== */

#include "whittle/chat.h"

/* ==== Context ========================================================================= */

typedef enum wt_matmul_mode {
  WT_MATMUL_FAST = 0, /* CPU: activations quantized to int8 per block of 32 (like
                         llama.cpp). CUDA (compute capability 8+): prompts of 64 tokens
                         or more run on tensor cores, matmuls in TF32 and attention with
                         f16 q, k, v (sums in f32). Vulkan: as WT_MATMUL_F32            */
  WT_MATMUL_F32 = 1   /* f32 activations times dequantized weights, f32 attention inputs:
                         slower, no rounding below f32; for checking against float
                         references (with kv_type WT_KV_F32: the KV's default f16
                         rounds keys and values as they are stored)                   */
} wt_matmul_mode;

/* ==== Pruning ========================================================================= */

/* Token-pruning methods (../shared/METHODS.md, runtime/prune/README.md). Pruning applies to
 * the first prefill of a context (n_past == 0); later prefills and decodes append. Pruned
 * tokens keep their original positions, and decode continues at position L + t, except
 * GemFilter's reference behaviour (re-indexed positions, see gemfilter_original_positions). */
typedef enum wt_prune_method {
  WT_PRUNE_FULL = 0,        /* full KV: the baseline                                       */
  WT_PRUNE_STREAMING = 1,   /* n_sink first tokens + the most recent ones, every layer     */
  WT_PRUNE_SNAPKV = 2,      /* window scores in every layer, top-(C-W) per KV head + W     */
  WT_PRUNE_FASTKV = 3,      /* SnapKV-style KV + token-selective propagation at one layer  */
  WT_PRUNE_GEMFILTER = 4,   /* two passes: filter at one layer, re-prefill the top tokens  */
  WT_PRUNE_ASL = 5,         /* adaptive selection layer (rank-variance trigger)            */
  WT_PRUNE_CLAA = 6,        /* FastKV with cross-layer (z-score, max) aggregated scores    */
  WT_PRUNE_SLIMINFER = 7,   /* block-wise progressive hidden-state pruning                 */
  WT_PRUNE_TOKENFILTER = 8, /* KV-similarity attention skip in the tail layers             */
  WT_PRUNE_ORACLE = 9       /* answer-informed ranking (evaluation only: generates first)  */
} wt_prune_method;
/* Methods added after these have ids from WT_PRUNE_FIRST_EXTENSION on and no enumerator:
 * wt_prune_method_count / _at list a library's methods, _from_name gives their ids. */
#define WT_PRUNE_FIRST_EXTENSION 10

typedef enum wt_pool_kind {
  WT_POOL_DEFAULT = 0, /* the method's default                                            */
  WT_POOL_AVG = 1,     /* zero padding, divisor always the kernel size (PyTorch default)   */
  WT_POOL_MAX = 2
} wt_pool_kind;

/* A parameter of a method added after API version 3 (which has no field of its own in
 * wt_prune_params): stored by wt_prune_set_param, read by the method. */
#define WT_PRUNE_MAX_EXTRA 16
typedef struct wt_prune_extra_param {
  uint32_t key;  /* the library's key for the parameter's name; 0: the entry is free */
  uint32_t reserved;
  double value;
} wt_prune_extra_param;

/* Every method's parameters; wt_prune_default_params() fills the defaults of METHODS.md for
 * the model (0 / -1 fields mean "the method's default for this model depth"; a layer below
 * -1 is WT_ERR_INVALID_ARGUMENT at context creation, since 2026-12-05). Budgets are
 * in prompt tokens and include the window W. A method reads the shared fields (keep to
 * layer, record_ranking) and its own; wt_prune_param_get lists which are whose. */
typedef struct wt_prune_params {
  size_t struct_size;  /* sizeof(wt_prune_params): set by wt_prune_default_params         */
  wt_prune_method method;
  float keep;          /* fraction of the prompt kept, in (0, 1]; default 0.1. Sets every
                          proportional budget (KV budget, TSP length, GemFilter K, ASL K_sel,
                          SlimInfer's last stage, streaming's total)                      */
  int32_t budget;      /* > 0: constant budget C in tokens instead of keep * L            */
  int32_t window;      /* W, the observation window; 0 = method default (SnapKV/ASL/
                          GemFilter 32, FastKV/CLAA/oracle 8). SnapKV, FastKV, CLAA, ASL
                          and GemFilter use at most half the budget of each prompt (at
                          least 1)                                                        */
  int32_t pool_kernel; /* odd; 0 = method default (SnapKV/FastKV/CLAA/ASL/GemFilter 31:
                          keeps whole spans; oracle 13; 7 elsewhere)                      */
  wt_pool_kind pool;   /* default: max for SnapKV/FastKV/GemFilter, avg for the others   */
  int32_t layer;       /* FastKV TSP / CLAA pruning / GemFilter filter layer; -1 = default
                          (FastKV, CLAA: half the depth, the paper's 15 of 32;
                          GemFilter: 0.6 of the depth, where it kept the answers)         */
  /* FastKV */
  float fastkv_tsp_rate;     /* tokens kept past the TSP layer, fraction of L; 0 = 2 * keep */
  int32_t fastkv_tsp_len;    /* constant mode T (with budget > 0); 0 = 2 * budget          */
  /* GemFilter */
  bool gemfilter_original_positions; /* pass 2 at original positions (default: re-indexed) */
  bool gemfilter_keep_window;        /* with the reference's scores: force-keep the last W
                                        tokens (default: off). GemFilter's default scores
                                        are the window's (wt_prune_set_param
                                        "gemfilter_window_scores", 1), which keep it; 0 is
                                        the reference's last-query scores                  */
  /* ASL */
  float asl_tau;             /* trigger when V_l / V_init < tau; default 0.3                */
  int32_t asl_min_layer;     /* L_min; -1 = floor(n_layer / 3)                              */
  int32_t asl_obs_layers;    /* L_obs; default 8                                            */
  int32_t asl_max_layer;     /* select at this layer at the latest; -1 = never force (last) */
  bool asl_two_pass;         /* re-prefill the selected tokens (GemFilter style)           */
  bool asl_kv_topk;          /* also keep only the top budget KV per head in every layer
                                (default on, so KV never exceeds the budget)                */
  /* CLAA */
  int32_t claa_n_layers;     /* n aggregated layers; default 4                               */
  int32_t claa_min_layer;    /* m: the first m layers keep full KV; default 4                */
  /* SlimInfer */
  int32_t slim_block;        /* tokens per block; default 64                                 */
  int32_t slim_unit;         /* tokens per unit; default 8                                   */
  int32_t slim_query;        /* local query window; default 4                                */
  int32_t slim_layers[3];    /* pruning layers; -1 = n_layer * (1/3, 2/3, 14/15)            */
  float slim_gamma;          /* decode: keep the active set while overlap >= gamma; 0.9     */
  float slim_decode_keep;    /* decode: fraction of a group's blocks attended; 1 = all      */
  /* Token Filtering */
  float tf_target;           /* fraction of tail-layer tokens whose attention is skipped; 0.5 */
  float tf_start;            /* first pruned layer as a fraction of the depth; 0.5          */
  float tf_anchor_decay;     /* anchor EMA factor; 0.9                                      */
  float tf_key_weight;       /* weight of the key vs value similarity; 0.5                  */
  int32_t tf_warmup;         /* tokens per layer before any skip; 16                        */
  /* Streaming */
  int32_t n_sink;            /* default 4                                                   */
  /* Oracle */
  int32_t oracle_tokens;     /* answer tokens generated with full KV; default 32            */
  /* Evaluation */
  int32_t record_ranking;    /* 1: keep each layer's token ranking of the last pruned prefill
                                for wt_context_get_token_ranking (costs (n_layer + 1) x n_ctx
                                floats) and the rows each layer attended in the last decode
                                step for wt_context_get_attended_rows (n_layer x n_ctx
                                int32); default 0                                           */
  /* Since WT_API_VERSION 4. The parameters of methods without fields above, by name: set
   * and change them only with wt_prune_set_param (at most WT_PRUNE_MAX_EXTRA different
   * ones); one not set has its default. */
  wt_prune_extra_param extra[WT_PRUNE_MAX_EXTRA];
} wt_prune_params;

WT_API wt_prune_params wt_prune_default_params(void);

/* Parses a method name ("full", "streaming", "snapkv", "fastkv", "gemfilter", "asl",
 * "claa", "sliminfer", "tokenfilter", "oracle", and those wt_prune_method_at lists).
 * WT_ERR_INVALID_ARGUMENT: unknown name (the message lists the known ones). */
WT_API wt_status wt_prune_method_from_name(const char* name, wt_prune_method* out_method);
/* A static name; "unknown" for an id no method has. */
WT_API const char* wt_prune_method_name(wt_prune_method method);

/* The methods this library has (since API 4): wt_prune_method_at(i) for i in
 * [0, wt_prune_method_count()) gives them in the order of their ids, full KV first.
 * WT_ERR_INVALID_ARGUMENT: NULL out_method or i outside that range. */
WT_API int32_t wt_prune_method_count(void);
WT_API wt_status wt_prune_method_at(int32_t index, wt_prune_method* out_method);
/* A static one-line summary of the method ("" for an id no method has). */
WT_API const char* wt_prune_method_summary(wt_prune_method method);

typedef enum wt_prune_param_type {
  WT_PRUNE_PARAM_FLOAT = 0,
  WT_PRUNE_PARAM_INT = 1,
  WT_PRUNE_PARAM_BOOL = 2,   /* "1", "0", "true", "false", "on", "off", "yes", "no"       */
  WT_PRUNE_PARAM_POOL = 3,   /* "avg", "max", "default"                                   */
  WT_PRUNE_PARAM_METHOD = 4  /* a method name                                             */
} wt_prune_param_type;

/* One parameter wt_prune_set_param takes (since API 4). The caller sets struct_size to
 * sizeof(wt_prune_param_info); the library writes no byte beyond it. Strings are static. */
typedef struct wt_prune_param_info {
  size_t struct_size;
  const char* name;          /* the key of wt_prune_set_param                             */
  wt_prune_param_type type;
  int32_t method;            /* the method that reads it (a wt_prune_method); -1: shared,
                                read by every method (keep, budget, window, ...)          */
  double default_value;      /* its value after wt_prune_default_params (pool, method: the
                                enum's value); a "-1" or "0" may mean "the method's default
                                for the model" (help says)                                */
  const char* range;         /* the values accepted when the method runs, e.g. "(0, 1]"   */
  const char* help;          /* one line                                                  */
} wt_prune_param_info;

/* wt_prune_param_get(i), i in [0, wt_prune_param_count()): the shared parameters, then each
 * method's own. WT_ERR_INVALID_ARGUMENT: NULL out_info, i out of range, struct_size < name's. */
WT_API int32_t wt_prune_param_count(void);
WT_API wt_status wt_prune_param_get(int32_t index, wt_prune_param_info* out_info);

/* Sets one parameter by name from text ("keep" "0.2", "pool" "max", "asl_two_pass" "1"):
 * the field names above and those wt_prune_param_get lists. Ranges are checked when the
 * context is created. WT_ERR_INVALID_ARGUMENT: unknown name, a value that does not parse (the
 * message says which), a struct_size the library does not read, a field the caller's (older)
 * layout lacks, or a parameter kept in `extra` when all its entries hold others. */
WT_API wt_status wt_prune_set_param(wt_prune_params* params, const char* key, const char* value);

/* The element type of a context's KV cache (wt_context_params.kv_type, since API 6). Keys
 * and values are rounded to it as they are stored; attention reads them directly (no
 * dequantized copy) and computes in f32. A library that predates a value refuses it with
 * WT_ERR_INVALID_ARGUMENT (the layout of wt_context_params does not change). */
typedef enum wt_kv_type {
  WT_KV_F32 = 0,
  WT_KV_F16 = 1, /* IEEE half, round to nearest even */
  WT_KV_Q8_0 = 2 /* ggml's Q8_0: per 32 values an f16 scale d = max|x| / 127 and int8
                    q = round(x / d), 34 bytes (0.27 of f32); needs head_dim % 32 == 0 */
} wt_kv_type;

typedef struct wt_context_params {
  size_t struct_size; /* sizeof(wt_context_params): set by wt_context_default_params     */
  int32_t n_ctx;     /* tokens the context holds (prompt + generated), at most 1048576;
                        0 = model's training context (if at most that). More than it
                        (wt_model_info.n_ctx_train) is accepted, as other runtimes do:
                        positions past it were never trained and quality may fall
                        (whittle-run warns; whittle-plan's answer stops there)         */
  int32_t n_threads; /* CPU worker threads; 0 = all cores                               */
  bool logits_all;   /* keep logits of every prompt row of the last prefill (costs
                        n_ctx * n_vocab floats); otherwise only the last row           */
  wt_progress_callback progress; /* per layer during prefill; may be NULL; false aborts */
  void* progress_user;
  wt_matmul_mode matmul_mode;    /* default WT_MATMUL_FAST (what each backend rounds:
                                    wt_matmul_mode above)                               */
  wt_prune_params prune;         /* default: WT_PRUNE_FULL                               */
  /* Since WT_API_VERSION 2. */
  uint64_t memory_budget_bytes;  /* most bytes the context may allocate (its arena:
                                    activations, KV, scratch, workspace; the pager's
                                    pools); 0 = no limit but the memory the backend has
                                    available                                          */
  /* Since WT_API_VERSION 3. */
  int32_t max_new_tokens;        /* with a pruning method: size each layer's KV for the
                                    method's budget at a prompt of n_ctx - max_new_tokens
                                    plus max_new_tokens generated rows (what whittle-plan
                                    plans with --new), instead of n_ctx rows in every layer.
                                    A layer that would need more rows gets
                                    WT_ERR_CONTEXT_FULL. 0 (default): no bound            */
  /* The KV pager: KV in blocks of kv_block_tokens per layer, a device pool of
   * kv_device_blocks blocks shared by all layers and a pinned host pool holding every block
   * (new rows are written through to it). Decode attention reads the device pool through
   * the block table; the blocks a layer needs are prefetched on the copy stream while the
   * previous layer computes. The pool must hold one whole layer at n_ctx. Where the
   * backend's memory is unified (Jetson, the CPU backend, lavapipe) the pager works in place
   * instead unless kv_pager_flags says WT_KV_PAGER_COPY: one pool of every block, which the
   * kernels read where the rows were written: no host pool, no copies, the bytes of
   * resident KV (kv_device_blocks then only switches the pager on). */
  int32_t kv_device_blocks;      /* 0 (default) = no pager: all KV resident and contiguous  */
  int32_t kv_block_tokens;       /* tokens per block; default 64                            */
  bool kv_sync_swaps;            /* wait for every swap on the host instead of prefetching
                                    (the async-vs-sync ablation); default false           */
  /* Since WT_API_VERSION 6. */
  wt_kv_type kv_type;            /* the KV cache's element type; default WT_KV_F16 (half
                                    the KV's bytes of f32, and of what decode reads per
                                    token; WT_KV_F32 before 2026-12-02), q8_0 keeps 0.27
                                    of them (the pager's pools too); every backend      */
  /* Since WT_API_VERSION 8. */
  uint64_t kv_pager_flags;       /* WT_KV_PAGER_* bits; default 0 (in place on unified
                                    memory, copying elsewhere). Unknown bits are
                                    WT_ERR_INVALID_ARGUMENT                               */
  /* Since WT_API_VERSION 10 (as n_ffn_rows, which only sliced the feed-forward block). */
  int32_t n_batch_rows;          /* prompt rows that go through the model at once. Full KV
                                    without the KV pager runs a longer prompt in passes of
                                    this many rows, each appending to the KV as a prompt
                                    given in parts would, so the activations (x, q, k, v,
                                    the attention output, the feed-forward block's gate and
                                    up) are planned for this many rows, not n_ctx. A pruning
                                    policy reads a whole prompt before its attention, and
                                    the pager would fetch the KV back for every pass: their
                                    prompts run as one pass whose layers go in slices of
                                    this many rows (a policy's: at least twice its window
                                    and SlimInfer's local query rows), so only the
                                    residual stream x and the layer's keys and values are
                                    planned for every row (since 2026-12-04; before, all
                                    but gate and up). 0 (default):
                                    WT_BATCH_ROWS_DEFAULT, or where the arena at it would
                                    not fit memory_budget_bytes or the memory available, the
                                    largest multiple of 64 rows below it that fits (since
                                    2026-12-05; wt_context_plan_info.batch_rows says which).
                                    Fewer where one device binding
                                    holds fewer rows (Vulkan), at most n_ctx; passes of at
                                    least 3 rows, and never a last pass of 1 (one row would
                                    run a decode step's kernels) where a binding holds 3.
                                    The CPU's logits are the same bits for any
                                    value; on a GPU a pass
                                    or slice under 64 rows runs the kernels of few rows
                                    (CUDA: not the tensor cores), whose rounding differs
                                    slightly, and slower. Negative: WT_ERR_INVALID_ARGUMENT */
  /* Since WT_API_VERSION 14. The CPU backend runs each op on its workers in lock step, so
   * a worker waiting for a core another thread holds (another process, another context)
   * stalls the op: where (Linux) its workers wait in the run queue for about half a core
   * or more, ops run on fewer workers, one more tried again later (wt_context_stats.
   * threads_per_op says how many ran; results are the same bits). WT_CPU_FIXED_THREADS:
   * always n_threads. Default 0; unknown bits are WT_ERR_INVALID_ARGUMENT. */
  uint64_t cpu_flags;
} wt_context_params;

/* wt_context_params.n_batch_rows when 0 (since API 10). On the CPU, feed-forward slices of
 * 512 rows to the whole prompt prefilled 8192 tokens at the same speed; a GPU's prompt
 * matmuls read (CUDA: dequantize) each weight once per pass or slice, which 2048 rows make
 * rare. */
#define WT_BATCH_ROWS_DEFAULT 2048

/* wt_context_params.kv_pager_flags (since API 8). WT_KV_PAGER_COPY: the device pool and the
 * host pool with their copies on unified memory too (what a discrete GPU runs; to compare
 * the two, or to test the copying path on a board without a discrete GPU). */
#define WT_KV_PAGER_COPY ((uint64_t)1)
/* wt_context_params.cpu_flags (since API 14). */
#define WT_CPU_FIXED_THREADS ((uint64_t)1)

WT_API wt_context_params wt_context_default_params(void);

/* Creates a context: every byte it will use is allocated here, none later. params may be
 * NULL (the defaults).
 * WT_ERR_INVALID_ARGUMENT: a parameter out of range (named in the message), including the
 * pruning parameters (budget < window, tau <= 0, a layer beyond the model, keep outside
 * (0, 1], a count of tokens above 1048576, the largest n_ctx, ...), or a struct_size (of
 * params or params->prune) the library does not read, a kv_type that is not a wt_kv_type.
 * WT_ERR_UNSUPPORTED: kv_type WT_KV_Q8_0 for a head_dim that is not a multiple of 32.
 * WT_ERR_BUDGET: the arena and pools would exceed memory_budget_bytes, or the memory
 * available now; on a discrete device that is its device parts (the arena's device part, the
 * pager's device pool) against its free memory and its pinned host parts (logits, index
 * arrays, the pager's host pool) against the host's (since 2026-12-05; before, every byte
 * against the device's). With
 * n_batch_rows 0: even at 64 rows at once, and the figures are those at 64 rows. The message
 * gives each part, the shortfall, the largest n_ctx that fits and, for an n_batch_rows the
 * caller set, the most rows in steps of 64 that fit. Nothing is allocated.
 * WT_ERR_OUT_OF_MEMORY: the arena could not be allocated. */
WT_API wt_status wt_context_create(const wt_model* model, const wt_context_params* params,
                                   wt_context** out_ctx);
/* Frees the context; before its model (which must outlive it). Safe at exit, from a static
 * destructor too: see wt_model_free. */
WT_API void wt_context_free(wt_context* ctx);

/* What wt_context_create(model, params) would allocate, without allocating: the plan it
 * makes first. Every byte of a context is one of these parts; none is allocated later. */
typedef struct wt_context_plan_info {
  WT_OUT_STRUCT_SIZE(wt_context_plan_info); /* set by the caller; since API 5 */
  int32_t n_ctx;               /* resolved (0 in params: the model's training context)    */
  uint64_t weights_bytes;      /* the model's weights (already placed; not the context's) */
  uint64_t arena_bytes;        /* the context's arena: activations, KV, scratch, workspace */
  uint64_t kv_bytes;           /* of which KV (with the pager: one layer of staging)       */
  uint64_t pager_device_bytes; /* the pager's device pool (0 without it; in place: the one
                                  pool of every block)                                     */
  uint64_t pager_host_bytes;   /* the pager's pinned host pool (in place: 0)                */
  uint64_t context_bytes;      /* arena + pools: what the context allocates                */
  uint64_t driver_bytes;       /* host memory the device's driver may hold for queued work,
                                  at most (Vulkan: recorded commands); the model's, shared by
                                  its contexts, so not in context_bytes. 0 on the CPU       */
  /* Since WT_API_VERSION 11. */
  int32_t batch_rows;          /* prompt rows one pass or slice runs: n_batch_rows resolved
                                  (the default 2048, fewer where a device binding holds fewer
                                  or, for n_batch_rows 0, where the arena at 2048 would not fit
                                  the memory limit: see wt_context_params.n_batch_rows; where
                                  no number fits, 64, the plan whose figures
                                  wt_context_create's WT_ERR_BUDGET message gives)          */
} wt_context_plan_info;

/* WT_ERR_INVALID_ARGUMENT as wt_context_create for a bad parameter, or an
 * out_plan->struct_size the library does not write; no budget check. With n_batch_rows 0 the
 * rows planned depend on the memory available now, as wt_context_create's do. */
WT_API wt_status wt_context_plan(const wt_model* model, const wt_context_params* params,
                                 wt_context_plan_info* out_plan);

/* Runs the model over n_tokens tokens at the next positions (full KV without the pager in
 * passes of the context's batch_rows, wt_context_stats; else in one pass whose layers run in
 * slices of them).
 * WT_ERR_CONTEXT_FULL: n_past + n_tokens > n_ctx, or a layer's KV would outgrow the size
 * max_new_tokens planned (nothing is changed).
 * WT_ERR_INVALID_ARGUMENT: NULL ctx or tokens, n_tokens == 0 or a token id out of range.
 * WT_ERR_ABORTED: the progress callback returned false, or wt_context_abort asked it to
 * stop (the context is reset).
 * After a failure the context stays usable. A refusal before the model runs
 * (WT_ERR_INVALID_ARGUMENT, WT_ERR_CONTEXT_FULL) changes nothing: tokens, KV and logits are
 * as before. A failure while it runs (WT_ERR_ABORTED, WT_ERR_OUT_OF_MEMORY, WT_ERR_BACKEND,
 * WT_ERR_INTERNAL) resets the context as wt_context_reset does (n_past 0, no logits): the
 * next call starts from a prefill. */
WT_API wt_status wt_context_prefill(wt_context* ctx, const wt_token* tokens, size_t n_tokens);

/* Asks the prefill running on ctx to stop at its next layer boundary; it then returns
 * WT_ERR_ABORTED. The one call that may be made from another thread while ctx is in use.
 * A request made while no prefill runs stops the next one (before its second layer); each
 * prefill that runs consumes the request when it returns. Work already queued on a device finishes
 * first. NULL is ignored. */
WT_API void wt_context_abort(wt_context* ctx);

/* Runs one token at the next position (at n_past 0: a one-token prompt, never pruned).
 * Errors, and the state they leave, as wt_context_prefill. */
WT_API wt_status wt_context_decode(wt_context* ctx, wt_token token);

/* Logits of row `row` of the last prefill/decode (n_vocab floats); row -1 is the last row.
 * Rows other than the last need logits_all. WT_ERR_INVALID_ARGUMENT: no logits yet (none
 * since creation or a reset), or row outside [-1, rows of the last call). */
WT_API wt_status wt_context_logits(const wt_context* ctx, int32_t row, const float** out_logits);

/* Tokens currently in the context. */
WT_API int32_t wt_context_n_past(const wt_context* ctx);
/* Forgets every token (keeps the allocation). Does nothing when called from a callback of a
 * prefill, decode or generate running on ctx. */
WT_API void wt_context_reset(wt_context* ctx);
/* Keeps the first n_keep tokens and forgets the later ones, as if they had never been given:
 * the next prefill or decode runs at position n_keep (a chat turn that renders the last reply
 * other than the tokens the model produced, a reply generated again). There are no logits
 * until that call. n_keep counts as wt_context_n_past does (after GemFilter's re-indexed
 * re-prefill, the prompt counts its kept tokens). n_keep == n_past changes nothing; 0 is
 * wt_context_reset.
 * WT_ERR_INVALID_ARGUMENT: NULL ctx, or n_keep outside [0, n_past].
 * WT_ERR_UNSUPPORTED: n_keep inside the context's pruned prompt (its KV was chosen over the
 * whole prompt), or inside a loaded state of one; or where a sliding-window layer (Gemma 3)
 * no longer holds the window the next token reads. Reset and prefill again instead.
 * WT_ERR_BUSY: called from a callback of a call running on ctx. A refusal changes nothing.
 * The KV of the tokens kept is as it was; what a method learnt while decoding the tokens
 * forgotten (SlimInfer's active blocks, Token Filtering's skip threshold and anchors) stays. */
WT_API wt_status wt_context_truncate(wt_context* ctx, int32_t n_keep);

typedef struct wt_context_stats {
  WT_OUT_STRUCT_SIZE(wt_context_stats); /* set by the caller; since API 5 */
  int32_t n_prefill_tokens; /* tokens in prefill calls since the last reset            */
  double prefill_ms;
  int32_t n_decode_tokens;  /* decode calls since the last reset                       */
  double decode_ms;
  uint64_t arena_bytes;     /* activation + KV arena allocated at creation             */
  uint64_t kv_bytes;
  /* The KV pager (all 0 without it). Counts since the last reset. */
  uint64_t pager_device_bytes;   /* device pool allocated at creation (in place: all)      */
  uint64_t pager_host_bytes;     /* pinned host pool allocated at creation (in place: 0)   */
  uint64_t pager_bytes_to_device;/* blocks fetched host -> device                          */
  uint64_t pager_bytes_to_host;  /* new rows written through device -> host                */
  int64_t pager_blocks_in;       /* blocks fetched                                          */
  int64_t pager_blocks_on_demand;/* of those, fetched when attention needed them, not ahead */
  int64_t pager_blocks_evicted;  /* blocks that gave up their device slot                   */
  double pager_sync_wait_ms;     /* kv_sync_swaps: host time waiting for the swaps' copies  */
  /* Where the backend times its streams (the CPU backend; -1 on the device backends, which
   * do not yet): the copy stream's busy time, and the time the compute stream waited for
   * the pager's copies (blocked on their events, plus pager_sync_wait_ms). The fraction of
   * copy time hidden behind compute is 1 - pager_wait_ms / pager_copy_ms. */
  double pager_copy_ms;
  double pager_wait_ms;
  /* Since API 9: the copies the pager's moves took (fetches, write-backs, write-through);
   * blocks in consecutive slots of both tiers go as one copy per K and V plane. */
  int64_t pager_transfers;
  /* Since API 11: prompt rows one pass or slice runs (wt_context_plan_info.batch_rows, as
   * this context resolved it when it was created). */
  int32_t batch_rows;
  /* Since API 14: the CPU's workers per op since the last reset (cpu_flags); 0 on
   * device backends and before the first op. */
  double threads_per_op;
} wt_context_stats;

/* WT_ERR_INVALID_ARGUMENT: NULL arguments, or an out_stats->struct_size the library does
 * not write. */
WT_API wt_status wt_context_get_stats(const wt_context* ctx, wt_context_stats* out_stats);

/* Where layer `layer`'s KV is now: bytes of its rows with a valid copy in the pager's device
 * pool and in its host pool. Without the pager, and with the pager in place, all of the
 * layer's KV is on the device (host 0). WT_ERR_INVALID_ARGUMENT: a NULL pointer or a layer outside [0, n_layer). */
WT_API wt_status wt_context_get_kv_residency(const wt_context* ctx, int32_t layer, uint64_t* out_device_bytes,
                                             uint64_t* out_host_bytes);

/* ==== Pruning statistics and evaluation taps ========================================= */

#include "whittle/evaluation.h"

/* ==== Saved state (prompt cache) ====================================================== */

#include "whittle/state.h"

/* ==== Sampling ======================================================================== */

typedef struct wt_sampler_params {
  size_t struct_size; /* sizeof(wt_sampler_params): set by the default function     */
  float temperature; /* <= 0: greedy (argmax); default 0                            */
  int32_t top_k;     /* 0: off                                                      */
  float top_p;       /* 1: off; in (0, 1]                                           */
  uint64_t seed;
  /* Since WT_API_VERSION 12. */
  float min_p;       /* 0: off; in [0, 1]: keep the tokens at least min_p times as
                        likely as the most likely one (at the temperature; applied
                        after top-k and top-p: the kept set is the smallest of the
                        three cuts)                                                 */
  /* Repetition penalties, before any of the above and greedy decoding too, over the last
   * penalty_last_n tokens of the sampler's history (the tokens it returned and those given
   * to wt_sampler_accept; special tokens count as any other): a token seen c > 0 times
   * there has its logit divided by repeat_penalty where positive (multiplied where not),
   * then lowered by c * frequency_penalty + presence_penalty (llama.cpp's rules). The
   * defaults leave them off. */
  float repeat_penalty;    /* 1: off; finite, > 0 (1.1 is common)                    */
  float frequency_penalty; /* 0: off; finite                                         */
  float presence_penalty;  /* 0: off; finite                                         */
  int32_t penalty_last_n;  /* tokens remembered, 0 to 1048576 (default 64; 0: none)  */
} wt_sampler_params;

WT_API wt_sampler_params wt_sampler_default_params(void);
/* params may be NULL (the defaults). WT_ERR_INVALID_ARGUMENT: top_k < 0, top_p outside
 * (0,1], temperature not finite, a struct_size the library does not read. */
WT_API wt_status wt_sampler_create(const wt_model* model, const wt_sampler_params* params,
                                   wt_sampler** out_sampler);
WT_API void wt_sampler_free(wt_sampler* sampler);
/* Samples from the last logits row of ctx; the token joins the sampler's history (the
 * repetition penalties'). WT_ERR_INVALID_ARGUMENT: NULL arguments, no logits yet, or a
 * sampler created for a model whose vocabulary differs from ctx's. */
WT_API wt_status wt_sampler_sample(wt_sampler* sampler, const wt_context* ctx,
                                   wt_token* out_token);
/* Since WT_API_VERSION 12. Adds tokens the sampler did not sample (the prompt, a user's
 * turn) to its history, so the repetition penalties count them; only the last
 * penalty_last_n are kept (nothing is, with the penalties off). WT_ERR_INVALID_ARGUMENT:
 * NULL sampler, NULL tokens with n_tokens > 0, or a token outside the vocabulary (nothing
 * is added then). */
WT_API wt_status wt_sampler_accept(wt_sampler* sampler, const wt_token* tokens, size_t n_tokens);
/* Since WT_API_VERSION 12. Forgets the history (a new conversation); the random
 * generator goes on. WT_ERR_INVALID_ARGUMENT: NULL sampler; WT_ERR_BUSY: another thread
 * is using it (nothing is forgotten). */
WT_API wt_status wt_sampler_reset(wt_sampler* sampler);

/* Called for every generated token; return false to stop. */
typedef bool (*wt_token_callback)(wt_token token, void* user);

/* Samples and decodes up to n_max tokens after a prefill, calling on_token for each
 * (including the end token, which stops the loop). *out_n_generated = tokens produced, also
 * when a decode fails (on_token and out_n_generated may be NULL). n_max 0 produces nothing.
 * WT_ERR_INVALID_ARGUMENT: NULL ctx or sampler, n_max < 0, no logits yet, or a sampler of
 * another vocabulary (as wt_sampler_sample). A decode's error ends the loop and is
 * returned, leaving the context as wt_context_decode says (WT_ERR_CONTEXT_FULL: the
 * context is full and holds the tokens decoded so far; the last token sampled, counted in
 * *out_n_generated, is not in it). */
WT_API wt_status wt_generate(wt_context* ctx, wt_sampler* sampler, int32_t n_max,
                             wt_token_callback on_token, void* user, int32_t* out_n_generated);

#ifdef __cplusplus
}
#endif

#endif /* WHITTLE_H */
