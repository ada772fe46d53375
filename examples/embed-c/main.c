/* embed-c: Whittle from a plain C99 program, through include/whittle.h only.
 *
 * Loads a GGUF model, creates a context that prunes the prompt with FastKV (keeps 40% of
 * it), formats a question with the model's chat template, prefills it and streams the
 * answer token by token to stdout. Every call's status is checked.
 *
 *   embed-c MODEL.gguf [N_TOKENS] [QUESTION]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <whittle.h>

/* The context sent to the data-free question is a few paragraphs, so that pruning has
 * something to remove. */
static const char* kDocument =
    "The Whittle runtime runs small language models on embedded boards. It keeps the whole "
    "memory plan fixed before the first token: weights, the key-value cache of every layer, "
    "the activation arena and the pinned staging pool. Long prompts are pruned while they are "
    "prefilled, so that only the tokens that matter keep their keys and values. FastKV, one "
    "of its methods, scores the prompt at one middle layer and propagates only the selected "
    "tokens to the later layers, which saves both time and memory. The capital of France is "
    "Paris, a city on the Seine. Boards such as the Jetson Orin Nano share one memory "
    "between the CPU and the GPU, so every byte counts.";

static int fail(const char* what, wt_status st) {
  fprintf(stderr, "embed-c: %s: %s: %s\n", what, wt_status_string(st), wt_last_error());
  return 1;
}

typedef struct stream_state {
  wt_detokenizer* detok;
  const wt_model* model;
  char text[256];
  int n_printed; /* bytes written to stdout */
} stream_state;

static bool on_token(wt_token token, void* user) {
  stream_state* s = (stream_state*)user;
  size_t len = 0;
  if (wt_token_is_end(s->model, token)) return false;
  if (wt_detokenizer_push(s->detok, token, s->text, sizeof s->text, &len) == WT_OK && len > 0) {
    fwrite(s->text, 1, len, stdout);
    fflush(stdout);
    s->n_printed += (int)len;
  }
  return true;
}

int main(int argc, char** argv) {
  wt_model* model = NULL;
  wt_context* ctx = NULL;
  wt_sampler* sampler = NULL;
  wt_detokenizer* detok = NULL;
  wt_token* tokens = NULL;
  char* prompt = NULL;
  int rc = 1;
  wt_status st;

  if (argc < 2) {
    fprintf(stderr, "usage: %s MODEL.gguf [N_TOKENS] [QUESTION]\n", argv[0]);
    return 2;
  }
  const char* model_path = argv[1];
  const int n_predict = argc > 2 ? atoi(argv[2]) : 32;
  const char* question = argc > 3 ? argv[3] : "What is the capital of France?";
  /* A library reads params structs of its API version and older ones (whittle.h). */
  printf("embed-c: whittle %s, API %d (header %d.%d.%d, API %d)\n", wt_version(), (int)wt_api_version(),
         WHITTLE_VERSION_MAJOR, WHITTLE_VERSION_MINOR, WHITTLE_VERSION_PATCH, WT_API_VERSION);
  if (wt_api_version() < WT_API_VERSION) {
    fprintf(stderr, "embed-c: the library is older than the header it was built with\n");
    return 1;
  }

  /* 1. The model, on the CPU backend. */
  wt_model_params mp = wt_model_default_params();
  st = wt_model_load(model_path, &mp, &model);
  if (st != WT_OK) return fail("loading the model", st);
  wt_model_info info;
  info.struct_size = sizeof info; /* the library writes no more than this */
  if ((st = wt_model_get_info(model, &info)) != WT_OK) {
    fail("model info", st);
    goto done;
  }
  printf("embed-c: %s, %d layers, %llu parameters\n", info.architecture, info.n_layer,
         (unsigned long long)info.n_params);

  /* 2. The prompt: the document and the question as one user turn. */
  {
    size_t need = strlen(kDocument) + strlen(question) + 8;
    char* user_text = (char*)malloc(need);
    if (!user_text) goto done;
    snprintf(user_text, need, "%s\n\n%s", kDocument, question);
    wt_chat_message msg = {"user", user_text};
    size_t len = 0;
    st = wt_chat_apply(model, &msg, 1, true, NULL, 0, &len);
    if (st == WT_ERR_BUFFER_TOO_SMALL) {
      prompt = (char*)malloc(len + 1);
      st = prompt ? wt_chat_apply(model, &msg, 1, true, prompt, len + 1, &len) : WT_ERR_OUT_OF_MEMORY;
    }
    free(user_text);
    if (st != WT_OK) {
      fail("applying the chat template", st);
      goto done;
    }
  }
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.parse_special = true;
  size_t n_tokens = 0;
  st = wt_tokenize(model, prompt, strlen(prompt), &tp, NULL, 0, &n_tokens);
  if (st != WT_ERR_BUFFER_TOO_SMALL && st != WT_OK) {
    fail("tokenizing", st);
    goto done;
  }
  tokens = (wt_token*)malloc(n_tokens * sizeof *tokens);
  if (!tokens || (st = wt_tokenize(model, prompt, strlen(prompt), &tp, tokens, n_tokens, &n_tokens)) != WT_OK) {
    fail("tokenizing", tokens ? st : WT_ERR_OUT_OF_MEMORY);
    goto done;
  }

  /* 3. A context sized for the prompt and the answer, pruning with FastKV at 40% keep.
   * This prompt is 181 tokens: at 20% FastKV keeps 36 KV rows and 72 hidden rows after its
   * selection layer, too few to carry both the question and the sentence that answers it
   * (it answers "French culture" instead of Paris). Prompts of thousands of tokens keep
   * their answers at 10-20% (docs/results/fidelity-default.md).
   * wt_context_create plans every byte here; nothing is allocated while generating. */
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = (int32_t)n_tokens + n_predict + 8;
  cp.n_threads = 0;
  cp.prune = wt_prune_default_params();
  if ((st = wt_prune_method_from_name("fastkv", &cp.prune.method)) != WT_OK ||
      (st = wt_prune_set_param(&cp.prune, "keep", "0.4")) != WT_OK) {
    fail("pruning parameters", st);
    goto done;
  }
  if ((st = wt_context_create(model, &cp, &ctx)) != WT_OK) {
    fail("creating the context", st);
    goto done;
  }
  wt_context_stats cs;
  cs.struct_size = sizeof cs;
  if (wt_context_get_stats(ctx, &cs) == WT_OK)
    printf("embed-c: context of %d tokens, arena %.1f MiB (KV %.1f MiB)\n", cp.n_ctx,
           cs.arena_bytes / 1048576.0, cs.kv_bytes / 1048576.0);

  /* 4. Prefill (the pruning happens here) and report what the policy kept. */
  if ((st = wt_context_prefill(ctx, tokens, n_tokens)) != WT_OK) {
    fail("prefill", st);
    goto done;
  }
  wt_prune_stats ps;
  ps.struct_size = sizeof ps;
  if (wt_context_get_prune_stats(ctx, &ps) == WT_OK)
    printf("embed-c: prefill of %d tokens with %s: %d rows after layer %d\n", ps.n_prompt,
           wt_prune_method_name(ps.method), ps.n_selected, ps.selection_layer);

  /* 5. Greedy decoding, streamed through the detokenizer. */
  wt_sampler_params sp = wt_sampler_default_params();
  if ((st = wt_sampler_create(model, &sp, &sampler)) != WT_OK || (st = wt_detokenizer_create(model, &detok)) != WT_OK) {
    fail("sampler / detokenizer", st);
    goto done;
  }
  stream_state stream = {detok, model, {0}, 0};
  int32_t n_generated = 0;
  printf("embed-c: answer: ");
  st = wt_generate(ctx, sampler, n_predict, on_token, &stream, &n_generated);
  if (st != WT_OK) {
    fail("generating", st);
    goto done;
  }
  size_t len = 0;
  if (wt_detokenizer_flush(detok, stream.text, sizeof stream.text, &len) == WT_OK && len > 0) {
    fwrite(stream.text, 1, len, stdout);
    stream.n_printed += (int)len;
  }
  printf("\nembed-c: %d tokens generated, %d bytes of text\n", n_generated, stream.n_printed);
  rc = stream.n_printed > 0 ? 0 : 1;

done:
  wt_detokenizer_free(detok);
  wt_sampler_free(sampler);
  wt_context_free(ctx);
  wt_model_free(model);
  free(tokens);
  free(prompt);
  return rc;
}
