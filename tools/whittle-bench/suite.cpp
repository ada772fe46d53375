#include "suite.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <tuple>

#include "metrics.h"
#include "tools/common/prune_methods.h"

namespace bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One prompt of a length: a task, or a fidelity prompt of real text.
struct Prompt {
  std::string task;  // task name, "fidelity_agree" or "fidelity_kl"
  double depth = kNaN;
  uint64_t seed = 0;
  Task t;
  Tokens tokens;
  Tokens continuation;  // fidelity_kl: the real text after the prompt
  int32_t max_new = 0;
};

struct RunResult {
  double ttft_ms = 0;
  std::vector<double> decode_ms;
  std::string output;
  int correct = -1;  // -1: not a task
  std::vector<int32_t> kept_rows;
  uint64_t kv_bytes = 0;
  int32_t selection_layer = -1;
  bool triggered = false;
  // Views of the context's rankings (the final one, then layers 0..n-1), valid until that
  // context's next prefill: every method has its own context, and Spearman is taken once
  // every method has run the prompt.
  std::vector<const float*> ranking;
  int agree = -1;
  double kl = kNaN, nll = kNaN;
  double nll_delta = kNaN;  // nll - full KV's on the same prompt (run_suite; a record's own)
  double spearman_selection = kNaN;
  std::vector<double> spearman_layers;
  bool resumed = false;  // taken from a --resume record: its Spearman is the record's
};

// What full KV produced on a prompt, for the methods to be compared with.
struct FullReference {
  Tokens greedy;                            // fidelity_agree
  std::vector<std::vector<double>> logp;    // fidelity_kl: log-probs per teacher-forced step
};

struct MethodState {
  MethodSpec spec;
  wt_context* ctx = nullptr;
  uint64_t arena_bytes = 0;
  std::vector<RunResult> runs;  // one per prompt of the current length
};

int32_t argmax(const float* l, int32_t n) { return static_cast<int32_t>(std::max_element(l, l + n) - l); }

const float* last_logits(wt_context* ctx) {
  const float* lg = nullptr;
  return wt_context_logits(ctx, -1, &lg) == WT_OK ? lg : nullptr;
}

bool timed_decode(wt_context* ctx, int32_t tok, RunResult* r) {
  const auto t0 = std::chrono::steady_clock::now();
  if (wt_context_decode(ctx, tok) != WT_OK) return false;
  r->decode_ms.push_back(ms_since(t0));
  return true;
}

// The prompts of one length, in a fixed order: tasks (each depth), then fidelity.
bool make_prompts(const BenchModel& m, const Filler& filler, const SuiteOptions& o, int32_t L,
                  std::vector<Prompt>* out, std::string* error) {
  const Tokenizer tok = m.tokenizer();
  uint64_t seed = o.seed * 1000003ull + static_cast<uint64_t>(L);
  for (const TaskSpec& ts : o.tasks) {
    for (double d : ts.depths) {
      Prompt p;
      p.task = task_name(ts.kind);
      p.depth = d;
      p.seed = ++seed;
      if (!make_task(ts.kind, L, d, p.seed, filler, tok, &p.t, error)) return false;
      p.tokens = p.t.prompt;
      p.max_new = p.t.max_new_tokens;
      out->push_back(std::move(p));
    }
  }
  // Real text: consecutive filler sentences from a seeded start.
  auto real_text = [&](uint64_t s, size_t n) {
    Tokens t;
    for (size_t i = s % filler.sentences.size(); t.size() < n; i = (i + 1) % filler.sentences.size())
      t.insert(t.end(), filler.sentences[i].begin(), filler.sentences[i].end());
    t.resize(n);
    return t;
  };
  if (o.fidelity_agree) {
    // Real text and a question about it, so the greedy continuation is an answer.
    Prompt p;
    p.task = "fidelity_agree";
    p.seed = ++seed;
    const Tokens q = m.tokenize("\n\nQuestion: What is the text above about? Answer in one sentence.\nAnswer:", false);
    const Tokens head = m.tokenize("", true);
    p.tokens = head;
    const Tokens body = real_text(p.seed * 7919, static_cast<size_t>(L) - q.size() - head.size());
    p.tokens.insert(p.tokens.end(), body.begin(), body.end());
    p.tokens.insert(p.tokens.end(), q.begin(), q.end());
    p.max_new = o.n_agree;
    out->push_back(std::move(p));
  }
  if (o.fidelity_kl) {
    Prompt p;
    p.task = "fidelity_kl";
    p.seed = ++seed;
    const Tokens head = m.tokenize("", true);
    Tokens all = real_text(p.seed * 7919, static_cast<size_t>(L) - head.size() + static_cast<size_t>(o.n_kl));
    p.tokens = head;
    p.tokens.insert(p.tokens.end(), all.begin(), all.end() - o.n_kl);
    p.continuation.assign(all.end() - o.n_kl, all.end());
    p.max_new = o.n_kl;
    out->push_back(std::move(p));
  }
  return true;
}

// Runs one prompt under one method. full: fills *ref; others compare with it.
bool run_prompt(const BenchModel& m, MethodState& ms, const Prompt& p, FullReference* ref, RunResult* r,
                std::string* error) {
  const int32_t L = static_cast<int32_t>(p.tokens.size());
  const int32_t n_vocab = m.info.n_vocab, n_layer = m.info.n_layer;
  const bool is_full = ms.spec.method == "full";  // no pruning (any KV type)
  const bool is_ref = ms.spec.is_baseline();      // fills *ref: the first method of every prompt
  wt_context* ctx = ms.ctx;
  auto fail = [&](const char* what) {
    *error = g_stop ? "stopped" : ms.spec.label() + ": " + what + ": " + wt_last_error();
    return false;
  };
  // A method is compared with full KV's run of the same prompt, which ran first (run_suite).
  const size_t need = p.task == "fidelity_agree" ? static_cast<size_t>(p.max_new)
                      : p.task == "fidelity_kl"  ? p.continuation.size() : 0;
  const size_t have = p.task == "fidelity_agree" ? ref->greedy.size() : ref->logp.size();
  if (!is_ref && have < need) {
    *error = ms.spec.label() + ": full KV did not run " + p.task + " before it (nothing to compare with)";
    return false;
  }
  wt_context_reset(ctx);
  const auto t0 = std::chrono::steady_clock::now();
  if (wt_context_prefill(ctx, p.tokens.data(), p.tokens.size()) != WT_OK) return fail("prefill");
  r->ttft_ms = ms_since(t0);

  r->kv_bytes = kept_kv(m, ctx, is_full, L, &r->kept_rows);
  if (!is_full) {
    wt_prune_stats st;
    if (wt_context_get_prune_stats(ctx, &st) != WT_OK) return fail("prune stats");
    r->selection_layer = st.selection_layer;
    r->triggered = st.triggered;
    for (int32_t l = -1; l < n_layer; ++l) {
      const float* s = nullptr;
      int32_t n = 0;
      if (wt_context_get_token_ranking(ctx, l, &s, &n) != WT_OK || n != L) return fail("token ranking");
      r->ranking.push_back(s);
    }
  }

  Tokens gen;
  if (p.task == "fidelity_agree") {
    r->agree = 0;
    for (int32_t i = 0; i < p.max_new; ++i) {
      const int32_t best = argmax(last_logits(ctx), n_vocab);
      if (is_ref) ref->greedy.push_back(best);
      const int32_t next = ref->greedy[static_cast<size_t>(i)];  // teacher-forced: full's token
      r->agree += best == next ? 1 : 0;
      gen.push_back(best);
      if (i + 1 < p.max_new && !timed_decode(ctx, next, r)) return fail("decode");
    }
  } else if (p.task == "fidelity_kl") {
    std::vector<double> lp;
    double kl = 0, nll = 0;
    for (size_t i = 0; i < p.continuation.size(); ++i) {
      log_softmax(last_logits(ctx), n_vocab, &lp);
      if (is_ref) ref->logp.push_back(lp);
      kl += kl_divergence(ref->logp[i], lp);
      nll += -lp[static_cast<size_t>(p.continuation[i])];
      if (i + 1 < p.continuation.size() && !timed_decode(ctx, p.continuation[i], r)) return fail("decode");
    }
    const double n = static_cast<double>(p.continuation.size());
    r->kl = kl / n;
    r->nll = nll / n;  // the delta to full is taken once full KV has run (run_suite)
  } else {
    // Greedy answer, stopping at an end token or at the end of the answer's line.
    for (int32_t i = 0; i < p.max_new; ++i) {
      const int32_t best = argmax(last_logits(ctx), n_vocab);
      if (wt_token_is_end(m.model, best)) break;
      gen.push_back(best);
      const std::string text = m.text_of(gen);
      const size_t nl = text.find('\n');
      if (nl != std::string::npos && text.find_first_not_of(" \n") < nl) break;
      if (i + 1 < p.max_new && !timed_decode(ctx, best, r)) return fail("decode");
    }
    r->output = m.text_of(gen);
    r->correct = score_output(p.t, r->output) ? 1 : 0;
  }
  if (r->output.empty()) r->output = m.text_of(gen);
  return true;
}

// Spearman of every method's rankings with the oracle's final ranking on the same prompt.
void rank_against_oracle(std::vector<MethodState>& methods, size_t prompt, int32_t L, int32_t n_layer) {
  const RunResult* oracle = nullptr;
  for (const MethodState& ms : methods)
    if (ms.spec.method == "oracle" && !ms.runs[prompt].ranking.empty()) oracle = &ms.runs[prompt];
  for (MethodState& ms : methods) {
    RunResult& r = ms.runs[prompt];
    if (r.resumed) continue;
    r.spearman_layers.assign(static_cast<size_t>(n_layer), kNaN);
    if (oracle && &r != oracle && !r.ranking.empty()) {
      r.spearman_selection = spearman(r.ranking[0], oracle->ranking[0], L);
      for (int32_t l = 0; l < n_layer; ++l)
        r.spearman_layers[static_cast<size_t>(l)] = spearman(r.ranking[static_cast<size_t>(l) + 1], oracle->ranking[0], L);
    }
  }
  for (MethodState& ms : methods) ms.runs[prompt].ranking.clear();  // the views expire with the prompt
}

Json nan_array(const std::vector<double>& v) {
  Json a = Json::array();
  for (double x : v) a.push(Json(x));
  return a;
}

// A method whose context is refused at length L (WT_ERR_BUDGET), with the library's reason.
Json refused_record(const BenchModel& m, const Machine& mc, const SuiteOptions& o, int32_t L, const MethodSpec& spec,
                    const std::string& refusal) {
  Json j = base_record("refused", m, mc, o.name, o.seed);
  j.set("L", L);
  j.set("method", spec.method);
  j.set("params", spec.params_json());
  j.set("refusal", refusal);
  return j;
}

Json run_record(const BenchModel& m, const Machine& mc, const SuiteOptions& o, int32_t L, const MethodState& ms,
                const Prompt& p, const RunResult& r) {
  Json j = base_record("run", m, mc, o.name, o.seed);
  j.set("L", L);
  j.set("method", ms.spec.method);
  j.set("params", ms.spec.params_json());
  j.set("task", p.task);
  j.set("depth", Json(p.depth));
  j.set("prompt_seed", static_cast<int64_t>(p.seed));
  Json answer;
  if (!p.t.answers.empty() && p.task.rfind("fidelity", 0) != 0) {
    std::string a;
    for (const std::string& s : p.t.answers) a += (a.empty() ? "" : " ") + s;
    answer = Json(a);
  }
  j.set("answer", answer);
  j.set("output", r.output);
  j.set("correct", r.correct < 0 ? Json() : Json(r.correct == 1));
  j.set("ttft_ms", r.ttft_ms);
  j.set("tpot_ms", r.decode_ms.empty() ? Json() : Json(summarize(r.decode_ms).mean));
  j.set("n_decode", static_cast<int>(r.decode_ms.size()));
  j.set("kv_bytes", r.kv_bytes);
  j.set("kept_rows", Json::array_of(r.kept_rows));
  j.set("selection_layer", r.selection_layer);
  j.set("triggered", r.triggered);
  j.set("spearman_selection", Json(r.spearman_selection));
  j.set("spearman_layers", nan_array(r.spearman_layers));
  j.set("top1_agree", r.agree < 0 ? Json() : Json(r.agree));
  j.set("n_agree", o.n_agree);
  j.set("kl_mean", Json(r.kl));
  j.set("nll_delta", Json(r.nll_delta));
  return j;
}

// An earlier run's record back as a RunResult: what aggregate() reads. The per-step decode
// times are not kept in records, only their mean, which is all the summary uses. A record is
// another program's text: every count in it is checked against what this suite produces for
// prompt p at length L on m's layers before it sizes or indexes anything; false with *error
// naming the record and the field otherwise.
bool run_from_record(const BenchModel& m, const Json& j, const Prompt& p, int32_t L, const SuiteOptions& o,
                     RunResult* out, std::string* error) {
  const int32_t n_layer = m.info.n_layer;
  const std::string what = "--resume: the run record of L " + std::to_string(L) + ", prompt seed " +
                           std::to_string(p.seed) + ", method " + (j.find("method") ? j.find("method")->str() : "?");
  auto bad = [&](const char* key, const std::string& why) {
    *error = what + ": '" + key + "' " + why;
    return false;
  };
  auto num = [&](const char* k) {
    const Json* v = j.find(k);
    return v ? v->number() : kNaN;
  };
  // A whole number in [lo, hi]; an absent or null field is `missing` when null_ok.
  auto whole = [&](const char* k, double lo, double hi, bool null_ok, double missing, double* dst) {
    const Json* v = j.find(k);
    if (null_ok && (!v || v->type() == Json::Type::null)) {
      *dst = missing;
      return true;
    }
    const double x = v ? v->number() : kNaN;
    if (!(x >= lo && x <= hi) || std::floor(x) != x)
      return bad(k, "is " + (v ? v->dump() : std::string("missing")) + ", not a whole number in [" + fmt(lo, "%.0f") +
                        ", " + fmt(hi, "%.0f") + "]");
    *dst = x;
    return true;
  };
  // Prompts are told apart by their seed, which counts the suite's prompts in order: another
  // --task or --fidelity list gives the same seed to another prompt.
  const Json* task = j.find("task");
  if (!task || task->type() != Json::Type::string || task->str() != p.task)
    return bad("task", "is " + (task ? task->dump() : std::string("missing")) + ", this suite's prompt is \"" + p.task +
                           "\" (resume with the same --task and --fidelity)");
  RunResult r;
  r.ttft_ms = num("ttft_ms");
  const double tpot = num("tpot_ms");
  double n_decode = 0;
  if (!whole("n_decode", 0, p.max_new, false, 0, &n_decode)) return false;
  if (std::isfinite(tpot) && n_decode > 0) r.decode_ms.assign(static_cast<size_t>(n_decode), tpot);
  if (const Json* v = j.find("output")) r.output = v->str();
  if (const Json* c = j.find("correct"); c && c->type() == Json::Type::boolean) r.correct = c->boolean() ? 1 : 0;
  const Json* k = j.find("kept_rows");
  if (!k || k->type() != Json::Type::array || k->elems().size() != static_cast<size_t>(n_layer))
    return bad("kept_rows", "has " + (k && k->type() == Json::Type::array ? std::to_string(k->elems().size()) + " entries"
                                                                          : std::string("no array")) +
                                ", the model has " + std::to_string(n_layer) + " layers");
  for (const Json& x : k->elems()) {
    const double rows = x.number();
    if (!(rows >= 0 && rows <= L) || std::floor(rows) != rows)
      return bad("kept_rows", "holds " + x.dump() + ", not a row count in [0, " + std::to_string(L) + "]");
    r.kept_rows.push_back(static_cast<int32_t>(rows));
  }
  double kv = 0;
  const double full_kv = static_cast<double>(m.kv_row_bytes()) * L * n_layer;
  if (!whole("kv_bytes", 0, full_kv, false, 0, &kv)) return false;
  r.kv_bytes = static_cast<uint64_t>(kv);
  double sel = -1;
  if (!whole("selection_layer", -1, n_layer - 1, false, -1, &sel)) return false;
  r.selection_layer = static_cast<int32_t>(sel);
  if (const Json* t = j.find("triggered")) r.triggered = t->boolean();
  r.spearman_selection = num("spearman_selection");
  const Json* s = j.find("spearman_layers");
  if (!s || s->type() != Json::Type::array || s->elems().size() != static_cast<size_t>(n_layer))
    return bad("spearman_layers", "has " + (s && s->type() == Json::Type::array ? std::to_string(s->elems().size()) + " entries"
                                                                                : std::string("no array")) +
                                      ", the model has " + std::to_string(n_layer) + " layers");
  for (const Json& x : s->elems()) r.spearman_layers.push_back(x.number());
  double agree = -1;
  if (!whole("top1_agree", 0, o.n_agree, true, -1, &agree)) return false;
  r.agree = static_cast<int>(agree);
  r.kl = num("kl_mean");
  r.nll_delta = num("nll_delta");  // the record's own full KV's; r.nll stays unknown
  r.resumed = true;
  *out = std::move(r);
  return true;
}

// Earlier runs by (length, prompt seed, method, parameters).
using ResumeKey = std::tuple<int64_t, int64_t, std::string, std::string>;

std::map<ResumeKey, const Json*> index_resume(const std::vector<Json>& records) {
  std::map<ResumeKey, const Json*> idx;
  for (const Json& r : records) {
    const Json *kind = r.find("kind"), *L = r.find("L"), *seed = r.find("prompt_seed"), *method = r.find("method"),
               *params = r.find("params");
    if (!kind || kind->str() != "run" || !L || !seed || !method || !params) continue;
    // Only whole numbers a prompt can have are cast (a cast of any other double is undefined).
    const double l = L->number(), sd = seed->number();
    if (!(l >= 0 && l <= 1 << 30 && std::floor(l) == l) || !(sd >= -0x1p63 && sd < 0x1p63 && std::floor(sd) == sd)) continue;
    idx[{static_cast<int64_t>(l), static_cast<int64_t>(sd), method->str(), params->dump()}] = &r;
  }
  return idx;
}

// Which of a prompt's earlier records (*earlier, one per method, null: none) it keeps when
// some method must run it: what a new run is compared with is not in the records. Full KV's
// greedy tokens and log-probs (FullReference) are, on the fidelity prompts, and the oracle's
// ranking (Spearman) is, on every prompt: full KV runs the fidelity prompts again and the
// oracle every prompt. A prompt every method ran keeps all its records.
void resume_plan(const std::vector<MethodState>& methods, const Prompt& p, std::vector<const Json*>* earlier) {
  std::vector<const Json*>& e = *earlier;
  if (std::find(e.begin(), e.end(), nullptr) == e.end()) return;
  const bool fidelity = p.task.rfind("fidelity", 0) == 0;
  for (size_t k = 0; k < methods.size(); ++k)
    if ((fidelity && methods[k].spec.is_baseline()) || methods[k].spec.method == "oracle") e[k] = nullptr;
}

double mean_finite(const std::vector<double>& v) {
  double s = 0;
  int n = 0;
  for (double x : v)
    if (std::isfinite(x)) s += x, ++n;
  return n ? s / n : kNaN;
}

// The summary records of one length (one per method) and its markdown rows.
// One method's figures over the prompts done at a length.
struct Aggregate {
  double ttft_ms = kNaN, tpot_ms = kNaN, ttft_ratio = kNaN, tpot_ratio = kNaN;
  double full_ttft_ms = kNaN, full_tpot_ms = kNaN;
  double kv_bytes = 0;                  // kept prompt KV, all layers, mean over prompts
  std::vector<double> kept;             // [n_layer] mean kept KV rows
  std::map<std::string, std::pair<int, int>> acc;  // task -> (correct, total)
  int agree = -1;
  double kl = kNaN, nll_delta = kNaN, spearman_selection = kNaN;
  std::vector<double> spearman_layers;  // [n_layer]
  int32_t selection_layer = -1;
  bool triggered = false;

  double e2e_ratio(int n) const { return (ttft_ms + n * tpot_ms) / (full_ttft_ms + n * full_tpot_ms); }
};

Aggregate aggregate(const MethodState& ms, const MethodState& full, const std::vector<Prompt>& prompts, size_t n_done,
                    int32_t n_layer) {
  Aggregate g;
  std::vector<double> ttft, full_ttft, ttft_ratio, tpot, full_tpot, tpot_ratio, sp_sel;
  std::vector<std::vector<double>> sp_layers(static_cast<size_t>(n_layer));
  g.kept.assign(static_cast<size_t>(n_layer), 0.0);
  for (size_t i = 0; i < n_done; ++i) {
    const RunResult& r = ms.runs[i];
    const RunResult& f = full.runs[i];
    ttft.push_back(r.ttft_ms);
    full_ttft.push_back(f.ttft_ms);
    ttft_ratio.push_back(r.ttft_ms / f.ttft_ms);
    if (!r.decode_ms.empty() && !f.decode_ms.empty()) {
      tpot.push_back(summarize(r.decode_ms).mean);
      full_tpot.push_back(summarize(f.decode_ms).mean);
      tpot_ratio.push_back(tpot.back() / full_tpot.back());
    }
    sp_sel.push_back(r.spearman_selection);
    for (size_t l = 0; l < static_cast<size_t>(n_layer); ++l) {
      if (l < r.spearman_layers.size()) sp_layers[l].push_back(r.spearman_layers[l]);
      g.kept[l] += r.kept_rows[l] / static_cast<double>(n_done);
    }
    g.kv_bytes += static_cast<double>(r.kv_bytes) / static_cast<double>(n_done);
    if (r.correct >= 0) {
      g.acc[prompts[i].task].first += r.correct;
      g.acc[prompts[i].task].second += 1;
    }
    if (r.agree >= 0) g.agree = r.agree;
    if (std::isfinite(r.kl)) {
      g.kl = r.kl;
      g.nll_delta = r.nll_delta;
    }
  }
  g.ttft_ms = median_of(ttft);
  g.full_ttft_ms = median_of(full_ttft);
  g.ttft_ratio = median_of(ttft_ratio);
  g.tpot_ms = median_of(tpot);
  g.full_tpot_ms = median_of(full_tpot);
  g.tpot_ratio = median_of(tpot_ratio);
  g.spearman_selection = mean_finite(sp_sel);
  for (const auto& v : sp_layers) g.spearman_layers.push_back(mean_finite(v));
  // Every prompt of a length has the same structure: the last run's selection stands for all.
  g.selection_layer = ms.runs[n_done - 1].selection_layer;
  g.triggered = ms.runs[n_done - 1].triggered;
  return g;
}

Json summary_record(const BenchModel& m, const Machine& mc, const SuiteOptions& o, int32_t L, const MethodState& ms,
                    const Aggregate& g, size_t n_done, uint64_t rss_peak) {
  int correct_all = 0, total_all = 0;
  Json accj = Json::object();
  for (const auto& [task, ct] : g.acc) {
    Json t = Json::object();
    t.set("correct", ct.first);
    t.set("total", ct.second);
    accj.set(task, t);
    correct_all += ct.first;
    total_all += ct.second;
  }
  std::vector<uint64_t> kv_per_layer;
  const double row_bytes = static_cast<double>(m.kv_row_bytes(ms.spec.kv_type));
  for (double k : g.kept) kv_per_layer.push_back(static_cast<uint64_t>(k * row_bytes));
  const double decode_tps = 1000.0 / g.tpot_ms;
  Json j = base_record("summary", m, mc, o.name, o.seed);
  j.set("L", L);
  j.set("method", ms.spec.method);
  j.set("params", ms.spec.params_json());
  j.set("n_runs", static_cast<int>(n_done));
  j.set("ttft_ms", g.ttft_ms);
  j.set("ttft_ratio", g.ttft_ratio);
  j.set("tpot_ms", g.tpot_ms);
  j.set("tpot_ratio", g.tpot_ratio);
  j.set("e2e16_ms", g.ttft_ms + 16 * g.tpot_ms);
  j.set("e2e128_ms", g.ttft_ms + 128 * g.tpot_ms);
  j.set("e2e16_ratio", g.e2e_ratio(16));
  j.set("e2e128_ratio", g.e2e_ratio(128));
  j.set("prefill_tps", L * 1000.0 / g.ttft_ms);
  j.set("decode_tps", decode_tps);
  j.set("decode_roofline_fraction", decode_tps / decode_roofline_tps(m, mc, g.kv_bytes));
  // Against the full prompt's work, so only full KV's is a machine-efficiency figure.
  j.set("prefill_roofline_fraction",
        ms.spec.method == "full" ? Json(prefill_roofline_ms(m, mc, L) / g.ttft_ms) : Json());
  j.set("kv_mib", g.kv_bytes / 1048576.0);
  j.set("kv_bytes_per_layer", Json::array_of(kv_per_layer));
  j.set("kept_rows_per_layer", Json::array_of(g.kept));
  j.set("arena_bytes", ms.arena_bytes);
  j.set("host_rss_peak_bytes", rss_peak);
  j.set("device_peak_bytes", Json());  // the CPU backend has no device memory
  j.set("pinned_peak_bytes", Json());  // no pinned pool without the pager
  j.set("accuracy", accj);
  j.set("accuracy_all", total_all ? Json(static_cast<double>(correct_all) / total_all) : Json());
  j.set("top1_agree", g.agree < 0 ? Json() : Json(g.agree));
  j.set("n_agree", o.n_agree);
  j.set("kl_mean", Json(g.kl));
  j.set("nll_delta", Json(g.nll_delta));
  j.set("spearman_selection", Json(g.spearman_selection));
  j.set("spearman_layers", nan_array(g.spearman_layers));
  return j;
}

std::string markdown_row(int32_t L, const std::string& label, const Aggregate& g, const std::vector<std::string>& tasks,
                         int32_t n_agree) {
  std::string row = "| " + std::to_string(L) + " | " + label + " | " + fmt(g.ttft_ms, "%.0f") + " | " +
                    fmt(g.ttft_ratio, "%.2f") + " | " + fmt(g.tpot_ratio, "%.2f") + " | " +
                    fmt(g.e2e_ratio(128), "%.2f") + " | " + fmt(g.kv_bytes / 1048576.0, "%.1f") + " |";
  for (const std::string& t : tasks) {
    const auto it = g.acc.find(t);
    const std::pair<int, int> ct = it == g.acc.end() ? std::pair<int, int>{0, 0} : it->second;
    row += " " + std::to_string(ct.first) + "/" + std::to_string(ct.second) + " |";
  }
  const std::string sel = g.selection_layer < 0 ? std::string("-")
                                                : std::to_string(g.selection_layer) + (g.triggered ? "" : " (forced)");
  row += " " + (g.agree < 0 ? std::string("-") : std::to_string(g.agree) + "/" + std::to_string(n_agree)) + " | " +
         fmt(g.kl, "%.3f") + " | " + fmt(g.spearman_selection, "%.2f") + " | " + sel + " |\n";
  return row;
}

// The summary records of one length (one per method) and its markdown rows.
void summarize_length(const BenchModel& m, const Machine& mc, const SuiteOptions& o, int32_t L,
                      const std::vector<Prompt>& prompts, const std::vector<MethodState>& methods, size_t n_done,
                      const std::vector<std::string>& tasks, std::vector<Json>* records, std::string* md) {
  const uint64_t rss_peak = host_rss_peak_bytes();
  for (const MethodState& ms : methods) {
    const Aggregate g = aggregate(ms, methods[0], prompts, n_done, m.info.n_layer);
    records->push_back(summary_record(m, mc, o, L, ms, g, n_done, rss_peak));
    *md += markdown_row(L, ms.spec.label(), g, tasks, o.n_agree);
  }
}

std::string table_header(const std::vector<std::string>& tasks, int32_t n_agree) {
  std::string h = "| L | method | TTFT ms | TTFT ratio | TPOT ratio | E2E128 ratio | KV MiB |";
  std::string sep = "|---|---|---|---|---|---|---|";
  for (const std::string& t : tasks) {
    h += " " + t + " |";
    sep += "---|";
  }
  h += " top-1 agree (" + std::to_string(n_agree) + ") | KL | Spearman vs oracle | sel. layer |\n";
  sep += "---|---|---|---|\n";
  return h + sep;
}


// The headline over every length: each method's mean TTFT saved and accuracy beside full
// KV's, and the accuracy lost per 10% of TTFT saved (lower is better; methods that save no
// time have no such figure).
std::string headline(const std::vector<Json>& records) {
  struct Acc {
    double saved = 0, acc = 0, full_acc = 0;
    int n = 0;
  };
  std::vector<std::pair<std::string, Acc>> rows;
  auto num = [](const Json* j) { return j ? j->number() : kNaN; };
  // A summary's method and parameters; its KV type when not the baseline's (records before
  // 2026-12-02 name none: f32, then the default).
  auto label_of = [](const Json& r) {
    std::string label = r.find("method")->str();
    for (const auto& [k, v] : r.find("params")->items())
      if (k != "kv_type" || v.str() != MethodSpec::baseline_kv_type()) label += " " + k + "=" + v.str();
    return label;
  };
  // By L: the baseline's accuracy, the first full-KV summary of each length (the modes put
  // the baseline first; --kv-type and --matmul add full KV in other variants after it).
  std::map<int64_t, double> full_acc;
  std::string base_label = "full";
  for (const Json& r : records)
    if (r.find("kind")->str() == "summary" && r.find("method")->str() == "full" &&
        full_acc.emplace(static_cast<int64_t>(r.find("L")->number()), num(r.find("accuracy_all"))).second)
      base_label = label_of(r);
  for (const Json& r : records) {
    if (r.find("kind")->str() != "summary") continue;
    const std::string label = label_of(r);
    const double acc = num(r.find("accuracy_all")), ratio = num(r.find("ttft_ratio"));
    const double fa = full_acc[static_cast<int64_t>(r.find("L")->number())];
    if (!std::isfinite(acc) || !std::isfinite(ratio) || !std::isfinite(fa)) continue;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const auto& x) { return x.first == label; });
    if (it == rows.end()) it = rows.insert(rows.end(), {label, Acc{}});
    it->second.saved += 1.0 - ratio;
    it->second.acc += acc;
    it->second.full_acc += fa;
    it->second.n += 1;
  }
  if (rows.empty()) return "no task prompts (--task none), or no length ran: no accuracy to weigh against time\n";
  std::string md = "| method | mean TTFT saved | accuracy | full-KV accuracy | accuracy points lost per 10% TTFT saved |\n"
                   "|---|---|---|---|---|\n";
  for (const auto& [label, a] : rows) {
    const double saved = a.saved / a.n, acc = a.acc / a.n, fa = a.full_acc / a.n;
    char buf[256];
    std::string per = "-";
    if (saved > 0.02 && label != base_label) {
      std::snprintf(buf, sizeof buf, "%.1f", 100.0 * (fa - acc) / (saved * 10.0));
      per = buf;
    }
    std::snprintf(buf, sizeof buf, "| %s | %.0f%% | %.0f%% | %.0f%% | %s |\n", label.c_str(), 100 * saved, 100 * acc,
                  100 * fa, per.c_str());
    md += buf;
  }
  return md;
}

}  // namespace

bool run_suite(const BenchModel& m, const Machine& mc, const SuiteOptions& o_in, SuiteOutput* out, std::string* error) {
  SuiteOptions o = o_in;
  if (o.methods.empty() || !o.methods[0].is_baseline()) o.methods.insert(o.methods.begin(), MethodSpec{"full", {}});
  const Filler filler = make_filler(debian_filler_text(), m.tokenizer());
  if (filler.sentences.empty()) {
    *error = "no filler text: /usr/share/common-licenses is empty or missing (Debian's base-files installs it)";
    return false;
  }
  int32_t max_new = std::max(o.n_agree, o.n_kl);
  for (const TaskSpec& t : o.tasks) max_new = std::max(max_new, t.kind == TaskKind::variable_tracking ? 32 : 12);

  // Plan the work for the ETA.
  std::vector<std::vector<Prompt>> all_prompts;
  double total_units = 0;
  for (int32_t L : o.lengths) {
    std::vector<Prompt> ps;
    if (!make_prompts(m, filler, o, L, &ps, error)) return false;
    total_units += static_cast<double>(ps.size() * o.methods.size()) * prefill_units(L);
    all_prompts.push_back(std::move(ps));
  }
  const std::map<ResumeKey, const Json*> resumed = index_resume(o.resume);
  bool skipped = false;  // a prompt left out (run_missing false): the output is not complete
  Progress progress(total_units);
  std::vector<std::string> task_names;
  for (const TaskSpec& t : o.tasks) task_names.push_back(task_name(t.kind));

  for (size_t li = 0; li < o.lengths.size() && !g_stop; ++li) {
    const int32_t L = o.lengths[li];
    const std::vector<Prompt>& prompts = all_prompts[li];
    reset_host_rss_peak();
    std::vector<MethodState> methods;
    // A context over its memory limit is a result, as in speed mode: a refused record and a
    // line under the table; the other methods still run. Without the baseline nothing at
    // this length can be compared, so the length is skipped, saying why.
    std::string refused_md;
    bool baseline_refused = false;
    for (size_t si = 0; si < o.methods.size() && !baseline_refused; ++si) {
      const MethodSpec& spec = o.methods[si];
      MethodState ms;
      ms.spec = spec;
      ContextOptions co;
      co.n_ctx = L + max_new + 40;  // the oracle's answer (32 tokens) also needs room
      co.threads = mc.threads;
      co.record_ranking = true;
      wt_status st = WT_OK;
      if (!make_context(m, spec, co, &ms.ctx, error, &st)) {
        if (st != WT_ERR_BUDGET) {
          for (MethodState& x : methods) wt_context_free(x.ctx);
          return false;
        }
        const std::string why = wt_last_error();  // the library's message, without make_context's label
        error->clear();
        out->records.push_back(refused_record(m, mc, o, L, spec, why));
        refused_md += "- " + spec.label() + " does not fit: " + why + "\n";
        baseline_refused = si == 0;
        progress.skip(static_cast<double>(prompts.size()) * prefill_units(L) *
                      static_cast<double>(baseline_refused ? o.methods.size() - si : 1));
        continue;
      }
      wt_context_stats cs;
      if (wt_context_get_stats(ms.ctx, &cs) == WT_OK) ms.arena_bytes = cs.arena_bytes;
      methods.push_back(std::move(ms));
    }
    if (baseline_refused) {
      for (MethodState& x : methods) wt_context_free(x.ctx);
      const std::string md = "L " + std::to_string(L) + ": nothing to compare with, so no method ran:\n" + refused_md + "\n";
      out->markdown += md;
      std::fputs("\n", stderr);
      std::fputs(md.c_str(), stdout);
      continue;
    }
    size_t n_done = 0;
    bool failed = false;
    for (size_t pi = 0; pi < prompts.size() && !g_stop && !failed; ++pi) {
      // Taken from --resume where a method ran this prompt before (resume_plan says which
      // must run again for the others to be compared with).
      std::vector<const Json*> earlier;
      for (const MethodState& ms : methods) {
        const auto it = resumed.find({L, static_cast<int64_t>(prompts[pi].seed), ms.spec.method, ms.spec.params_json().dump()});
        earlier.push_back(it != resumed.end() ? it->second : nullptr);
      }
      resume_plan(methods, prompts[pi], &earlier);
      const size_t n_earlier = static_cast<size_t>(std::count_if(earlier.begin(), earlier.end(), [](const Json* j) { return j; }));
      if (n_earlier < methods.size() && !o.run_missing) {  // --summarize: this length's summary covers the prompts before
        skipped = true;
        break;
      }
      FullReference ref;
      for (size_t k = 0; k < methods.size(); ++k) {
        MethodState& ms = methods[k];
        RunResult r;
        if (earlier[k]) {
          if (!run_from_record(m, *earlier[k], prompts[pi], L, o, &r, error)) {
            for (MethodState& x : methods) wt_context_free(x.ctx);
            return false;
          }
          progress.skip(prefill_units(L));
        } else {
          progress.show("L " + std::to_string(L) + " " + prompts[pi].task + " " + ms.spec.label());
          if (!run_prompt(m, ms, prompts[pi], &ref, &r, error)) {
            failed = true;
            break;
          }
          progress.advance(prefill_units(L));
        }
        ms.runs.push_back(std::move(r));
      }
      if (failed) break;
      rank_against_oracle(methods, pi, L, m.info.n_layer);
      for (size_t k = 0; k < methods.size(); ++k) {
        if (earlier[k]) {
          out->records.push_back(*earlier[k]);
          continue;
        }
        RunResult& r = methods[k].runs[pi];
        r.nll_delta = r.nll - methods[0].runs[pi].nll;  // full KV ran the fidelity prompts (resume_plan)
        out->records.push_back(run_record(m, mc, o, L, methods[k], prompts[pi], r));
      }
      ++n_done;
    }
    if (n_done > 0) {
      std::vector<std::string> tasks;  // task names in prompt order
      for (size_t i = 0; i < n_done; ++i)
        if (prompts[i].task.rfind("fidelity", 0) != 0 && std::find(tasks.begin(), tasks.end(), prompts[i].task) == tasks.end())
          tasks.push_back(prompts[i].task);
      std::string md = table_header(tasks, o.n_agree);
      summarize_length(m, mc, o, L, prompts, methods, n_done, tasks, &out->records, &md);
      if (!refused_md.empty()) md += "\n" + refused_md;
      md += "\n";
      out->markdown += md;
      std::fputs("\n", stderr);
      std::fputs(md.c_str(), stdout);
      std::fflush(stdout);
    } else if (!refused_md.empty()) {  // nothing ran at this length (stopped, --summarize)
      const std::string md = "L " + std::to_string(L) + ":\n" + refused_md + "\n";
      out->markdown += md;
      std::fputs(md.c_str(), stdout);
    }
    for (MethodState& ms : methods) wt_context_free(ms.ctx);
    if (failed && !g_stop) return false;
  }
  std::fputs("\n", stderr);
  const std::string head = "Over all lengths:\n\n" + headline(out->records) + "\n";
  out->markdown += head;
  std::fputs(head.c_str(), stdout);
  out->complete = !g_stop && !skipped;
  return true;
}

bool suite_preset(const std::string& name, int32_t n_ctx_train, SuiteOptions* o, std::string* error) {
  *o = SuiteOptions{};
  o->name = name;
  const std::vector<double> five = {0.0, 0.25, 0.5, 0.75, 1.0};
  for (const std::string& m : wt_tools::prune_method_names(/*without_full=*/true)) o->methods.push_back(MethodSpec{m, {}});
  if (name == "quick") {
    o->lengths = {1024, 2048};
    o->tasks = {{TaskKind::passkey, {0.5}}, {TaskKind::niah_single, five}};
    o->fidelity_kl = false;
  } else if (name == "full") {
    // "8k": as long as the model's training context allows with room for the answers.
    const int32_t top = n_ctx_train > 0 ? std::min(8192, n_ctx_train - 64) : 8192;
    o->lengths = {1024, 2048, 4096, top};
    o->tasks = {{TaskKind::passkey, {0.5}},
                {TaskKind::niah_single, five},
                {TaskKind::niah_multikey, {0.5}},
                {TaskKind::kv_retrieval, {0.5}},
                {TaskKind::variable_tracking, {0.3}}};
  } else if (name == "tiny") {
    o->lengths = {640, 768};  // the tiny model tokenizes byte by byte
    o->tasks = {{TaskKind::passkey, {0.5}}, {TaskKind::niah_single, {0.0, 1.0}}, {TaskKind::variable_tracking, {0.3}}};
    o->n_agree = 8;
    o->n_kl = 8;
    for (MethodSpec& ms : o->methods) ms.params = {{"keep", "0.3"}};
  } else {
    *error = "unknown suite " + name + " (quick, full, tiny)";
    return false;
  }
  return true;
}

}  // namespace bench
