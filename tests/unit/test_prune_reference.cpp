// Whittle's pruning methods against an independent NumPy reference written from the
// authors' code (SnapKV, FastKV, GemFilter, CLAA, ASL), from the paper, METHODS.md and
// runtime/prune/README.md where there is no code (SlimInfer, Token Filtering: the count
// of skipped attention rows only), and StreamingLLM
// (tests/reference/prune_reference.py; the fixtures and their format are in
// tests/reference/README.md, "Pruning reference"): on 3 needle prompts x 256/512/1024
// tokens of the default model, the KV positions every layer and KV head keeps
// (wt_context_get_kv_positions), the tokens a selection propagates, ASL's variance ratios
// and the next token; per layer the KV rows wt_prune_stats reports. Whittle runs with f32 activations (the reference is float64); a
// near-tie may flip, so the figure is the fraction of kept positions the two agree on, and
// a line with a decided cut-off (a score gap above kDecidedGap) must agree exactly.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/real_model.h"
#include "whittle.h"

namespace {

// A cut-off whose (k-th - (k+1)-th) score gap exceeds this share of the largest score is
// far from float rounding: Whittle's f32 run must make the same choice there.
constexpr double kDecidedGap = 1e-3;

struct KvLine {
  int32_t layer = 0, head = 0;
  double gap = 0;
  std::set<int32_t> pos;
};

// decode_topk: one decode step of the reference: the token fed, the argmax after it, and per
// layer the prompt positions its attention read (with the block top-k's gap).
struct DecodeStep {
  wt_token token = 0;
  int32_t next = -1;
  double next_margin = 0;
  std::vector<KvLine> attend;  // head unused
};

struct MethodBlock {
  std::string name;
  std::map<std::string, std::string> params;
  bool selected = false;
  int32_t sel_layer = -1;
  std::set<int32_t> sel_pos;
  int32_t next = -1;
  double next_margin = 0;
  double min_ratio = 0;  // asl: the smallest V_l / V_init listed
  int32_t min_ratio_layer = -1;
  std::map<int32_t, double> ratios;  // asl: V_l / V_init of every layer the test ran at
  int64_t skipped = -1;  // tokenfilter: (row, layer) pairs whose attention was skipped
  std::vector<KvLine> kv;
  std::vector<DecodeStep> steps;
};

struct Case {
  std::string name;
  std::vector<wt_token> tokens;
  std::vector<MethodBlock> methods;
};

// "a a-b ..." (or "=": the previous set) from the stream's remaining fields.
std::set<int32_t> read_runs(std::istringstream& in, const std::set<int32_t>& previous) {
  std::set<int32_t> out;
  std::string run;
  while (in >> run) {
    if (run == "=") return previous;
    const size_t dash = run.find('-');
    const int32_t a = std::stoi(run.substr(0, dash));
    const int32_t b = dash == std::string::npos ? a : std::stoi(run.substr(dash + 1));
    for (int32_t j = a; j <= b; ++j) out.insert(j);
  }
  return out;
}

Case read_case(const std::string& path) {
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "cannot read " << path);
  Case c;
  std::string line;
  std::getline(f, line);
  REQUIRE(line == "whittle-prune-reference 1");
  MethodBlock* m = nullptr;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (key == "case") {
      in >> c.name;
    } else if (key == "tokens") {
      wt_token t = 0;
      while (in >> t) c.tokens.push_back(t);
    } else if (key == "method") {
      c.methods.emplace_back();
      m = &c.methods.back();
      in >> m->name;
      std::string kv;
      while (in >> kv) m->params[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    } else if (key == "selected" && m) {
      std::string layer;
      in >> layer;
      if (layer != "none") {
        int32_t count = 0;
        std::string gap;  // "inf" (SlimInfer when only forced blocks were kept) is no double to >>
        in >> count >> gap;
        m->selected = true;
        m->sel_layer = std::stoi(layer);
        m->sel_pos = read_runs(in, {});
        REQUIRE(m->sel_pos.size() == static_cast<size_t>(count));
      }
    } else if (key == "next" && m) {
      in >> m->next >> m->next_margin;
    } else if (key == "ratios" && m) {
      // The first evaluated layer sets V_init (ratio 1); Whittle reports the smallest ratio
      // of the layers after it.
      std::string lr;
      m->min_ratio = INFINITY;
      bool first = true;
      while (in >> lr) {
        const int32_t l = std::stoi(lr.substr(0, lr.find(':')));
        const double r = std::stod(lr.substr(lr.find(':') + 1));
        m->ratios[l] = r;
        if (!first && r < m->min_ratio) m->min_ratio = r, m->min_ratio_layer = l;
        first = false;
      }
    } else if (key == "skipped" && m) {
      in >> m->skipped;  // the total; the per-layer counts after it have no Whittle tap
    } else if (key == "step" && m) {
      DecodeStep st;
      int32_t index = 0;
      in >> index >> st.token >> st.next >> st.next_margin;
      REQUIRE(index == static_cast<int32_t>(m->steps.size()));
      m->steps.push_back(std::move(st));
    } else if (key == "attend" && m) {
      REQUIRE(!m->steps.empty());
      KvLine k;
      int32_t count = 0;
      std::string gap;
      in >> k.layer >> count >> gap;
      k.gap = gap == "inf" ? INFINITY : std::stod(gap);
      k.pos = read_runs(in, {});
      REQUIRE(k.pos.size() == static_cast<size_t>(count));
      m->steps.back().attend.push_back(std::move(k));
    } else if (key == "kv" && m) {
      KvLine k;
      int32_t count = 0;
      std::string gap;
      in >> k.layer >> k.head >> count >> gap;
      k.gap = gap == "inf" ? INFINITY : std::stod(gap);
      k.pos = read_runs(in, m->kv.empty() ? std::set<int32_t>{} : m->kv.back().pos);
      REQUIRE(k.pos.size() == static_cast<size_t>(count));
      m->kv.push_back(std::move(k));
    }
  }
  return c;
}

// The fixture's parameter names -> Whittle's (wt_prune_set_param); derived values
// (budget, top_k, tsp_len, stage_blocks) are not set, and the reference-only switches
// (per_query_head, abs_score) must name Whittle's variant.
const std::map<std::string, std::string>& param_names(const std::string& method) {
  static const std::map<std::string, std::map<std::string, std::string>> names = {
      {"snapkv", {{"keep", "keep"}, {"window", "window"}, {"pool_kernel", "pool_kernel"}, {"pool", "pool"}}},
      {"fastkv",
       {{"keep", "keep"},
        {"tsp_layer", "layer"},
        {"window", "window"},
        {"pool_kernel", "pool_kernel"},
        {"pool", "pool"},
        {"tsp_rate", "fastkv_tsp_rate"}}},
      {"gemfilter",
       {{"keep", "keep"},
        {"filter_layer", "layer"},
        {"pool_kernel", "pool_kernel"},
        {"pool", "pool"},
        {"window_scores", "gemfilter_window_scores"}}},
      {"gemfilter_window",
       {{"keep", "keep"},
        {"filter_layer", "layer"},
        {"window", "window"},
        {"pool_kernel", "pool_kernel"},
        {"pool", "pool"},
        {"window_scores", "gemfilter_window_scores"}}},
      {"claa",
       {{"keep", "keep"},
        {"prune_layer", "layer"},
        {"n_agg", "claa_n_layers"},
        {"min_layer", "claa_min_layer"},
        {"window", "window"},
        {"pool_kernel", "pool_kernel"},
        {"pool", "pool"}}},
      {"asl",
       {{"keep", "keep"},
        {"tau", "asl_tau"},
        {"min_layer", "asl_min_layer"},
        {"obs_layers", "asl_obs_layers"},
        {"window", "window"},
        {"pool_kernel", "pool_kernel"},
        {"pool", "pool"},
        {"kv_topk", "asl_kv_topk"}}},
      {"streaming", {{"keep", "keep"}, {"n_sink", "n_sink"}, {"window", "window"}}},
      {"sliminfer",
       {{"keep", "keep"},
        {"block", "slim_block"},
        {"unit", "slim_unit"},
        {"query", "slim_query"},
        {"layer0", "slim_layer0"},
        {"layer1", "slim_layer1"},
        {"layer2", "slim_layer2"},
        {"window", "window"}}},
      {"tokenfilter",
       {{"target", "tf_target"},
        {"start", "tf_start"},
        {"anchor_decay", "tf_anchor_decay"},
        {"key_weight", "tf_key_weight"},
        {"warmup", "tf_warmup"},
        {"window", "window"}}},
      {"decode_topk", {{"keep", "keep"}, {"block", "decode_topk_block"}}},
      {"decode_topk_bounds", {{"keep", "keep"}, {"block", "decode_topk_block"}, {"bounds", "decode_topk_bounds"}}},
  };
  return names.at(method);
}

struct Agreement {
  int64_t ref_positions = 0, common = 0;  // over every (layer, KV head) line
  int32_t lines = 0, identical = 0, decided = 0, decided_identical = 0;
  double share() const { return ref_positions ? static_cast<double>(common) / static_cast<double>(ref_positions) : 1.0; }
  // One (layer, KV head) or (step, layer) line; `decides` says whether its cut-off counts as
  // decided.
  void add(const std::set<int32_t>& ours, const std::set<int32_t>& ref, bool decides) {
    for (int32_t j : ref) common += static_cast<int64_t>(ours.count(j));
    ref_positions += static_cast<int64_t>(ref.size());
    ++lines;
    const bool same = ours == ref;
    identical += same ? 1 : 0;
    if (decides) {
      ++decided;
      decided_identical += same ? 1 : 0;
    }
  }
};

std::map<std::string, Agreement>& totals() {
  static std::map<std::string, Agreement> t;
  return t;
}

// decode_topk: feed the reference's tokens (teacher forcing: one flipped argmax does not
// change the later steps' inputs) and compare, per step and layer, the prompt positions the
// attention read (wt_context_get_attended_rows through wt_context_get_kv_positions) and that
// every generated row was read; then the argmax where the reference's is clear.
void check_steps(const wt_model* model, wt_context* ctx, const Case& c, const MethodBlock& m) {
  const int32_t L = static_cast<int32_t>(c.tokens.size());
  wt_model_info info;
  REQUIRE(wt_model_get_info(model, &info) == WT_OK);
  Agreement& a = totals()[m.name + " (decode steps)"];
  for (size_t s = 0; s < m.steps.size(); ++s) {
    const DecodeStep& step = m.steps[s];
    CAPTURE(s);
    REQUIRE_MESSAGE(wt_context_decode(ctx, step.token) == WT_OK, wt_last_error());
    for (const KvLine& k : step.attend) {
      CAPTURE(k.layer);
      const int32_t* rows = nullptr;
      const int32_t* pos = nullptr;
      int32_t n = 0, n_pos = 0;
      REQUIRE_MESSAGE(wt_context_get_attended_rows(ctx, k.layer, &rows, &n) == WT_OK, wt_last_error());
      REQUIRE(wt_context_get_kv_positions(ctx, k.layer, 0, &pos, &n_pos) == WT_OK);
      std::set<int32_t> ours, generated;
      for (int32_t i = 0; i < n; ++i) {
        REQUIRE(rows[i] >= 0);
        REQUIRE(rows[i] < n_pos);
        (pos[rows[i]] < L ? ours : generated).insert(pos[rows[i]]);
      }
      std::set<int32_t> every_generated;
      for (int32_t p = L; p <= L + static_cast<int32_t>(s); ++p) every_generated.insert(p);
      CHECK(generated == every_generated);
      a.add(ours, k.pos, k.gap > kDecidedGap);
      CHECK(ours.size() == k.pos.size());
    }
    if (step.next_margin > 0.5) {
      const float* logits = nullptr;
      REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
      CHECK(std::max_element(logits, logits + info.n_vocab) - logits == step.next);
    }
  }
}

void run_case(wt_model* model, const Case& c) {
  for (const MethodBlock& m : c.methods) {
    CAPTURE(c.name);
    CAPTURE(m.name);
    wt_prune_params pp = wt_prune_default_params();
    // decode_topk_bounds is decode_topk with its decode_topk_bounds parameter, gemfilter_window
    // GemFilter with its gemfilter_window_scores (fixture lines).
    const std::string method = m.name == "decode_topk_bounds" ? "decode_topk"
                               : m.name == "gemfilter_window" ? "gemfilter"
                                                              : m.name;
    REQUIRE(wt_prune_set_param(&pp, "method", method.c_str()) == WT_OK);
    for (const auto& [ref_name, wt_name] : param_names(m.name)) {
      REQUIRE_MESSAGE(m.params.count(ref_name), "the fixture has no " << ref_name);
      REQUIRE_MESSAGE(wt_prune_set_param(&pp, wt_name.c_str(), m.params.at(ref_name).c_str()) == WT_OK,
                      wt_last_error());
    }
    // decode_topk's fixture lines are the exact scores' rule (no bounds parameter).
    if (m.name == "decode_topk") REQUIRE(wt_prune_set_param(&pp, "decode_topk_bounds", "0") == WT_OK);
    if (m.params.count("per_query_head")) REQUIRE(m.params.at("per_query_head") == "0");
    if (m.params.count("abs_score")) REQUIRE(m.params.at("abs_score") == "1");
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = static_cast<int32_t>(c.tokens.size()) + 8;
    cp.n_threads = 2;
    cp.matmul_mode = WT_MATMUL_F32;
    cp.kv_type = WT_KV_F32;  // the reference's keys and values are f32
    cp.prune = pp;
    cp.prune.record_ranking = m.steps.empty() ? 0 : 1;  // the attended-rows tap
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, wt_last_error());
    REQUIRE_MESSAGE(wt_context_prefill(ctx, c.tokens.data(), c.tokens.size()) == WT_OK, wt_last_error());

    Agreement& a = totals()[m.name];
    for (const KvLine& k : m.kv) {
      const int32_t* pos = nullptr;
      int32_t n = 0;
      REQUIRE(wt_context_get_kv_positions(ctx, k.layer, k.head, &pos, &n) == WT_OK);
      const std::set<int32_t> ours(pos, pos + n);
      // The first layers and every head before a selection choose from the same inputs: a
      // decided cut-off there must agree. (After a selection that differs, later layers
      // see other rows: their lines count in the share only.) SlimInfer's lines carry the
      // smallest gap of the stages before them, so a decided line there is decided at
      // every layer.
      const bool decides = k.gap > kDecidedGap && (!m.selected || k.layer <= m.sel_layer || m.name == "sliminfer");
      a.add(ours, k.pos, decides);
      if (decides) CHECK_MESSAGE(ours.size() == k.pos.size(), "layer " << k.layer << " head " << k.head);
    }
    wt_prune_stats st{};
    REQUIRE(wt_context_get_prune_stats(ctx, &st) == WT_OK);
    // Per layer, the prompt KV rows Whittle reports (kv_rows) against the reference's count
    // for KV head 0; SlimInfer's layers also compute exactly the rows they keep.
    for (const KvLine& k : m.kv) {
      if (k.head != 0) continue;
      REQUIRE(k.layer < st.n_layer);
      CAPTURE(k.layer);
      CHECK(st.kv_rows[k.layer] == static_cast<int32_t>(k.pos.size()));
      if (m.name == "sliminfer") CHECK(st.hidden_rows[k.layer] == static_cast<int32_t>(k.pos.size()));
    }
    if (m.name == "asl") {
      CHECK(st.triggered == m.selected);
      if (m.min_ratio_layer >= 0) {
        CHECK(st.asl_min_ratio_layer == m.min_ratio_layer);
        CHECK(st.asl_min_ratio == doctest::Approx(m.min_ratio).epsilon(1e-3));
      }
      // The whole curve (wt_prune_stats.asl_ratios): a ratio at exactly the layers the
      // reference tested at, the same values; NaN everywhere else.
      REQUIRE(st.asl_ratios != nullptr);
      for (int32_t l = 0; l < st.n_layer; ++l) {
        CAPTURE(l);
        const auto it = m.ratios.find(l);
        if (it == m.ratios.end()) {
          CHECK(std::isnan(st.asl_ratios[l]));
        } else {
          CHECK(st.asl_ratios[l] == doctest::Approx(it->second).epsilon(1e-3));
        }
      }
    } else if (m.name == "tokenfilter") {
      // Which rows were skipped has no tap (wt_prune_stats has only the count): compare the
      // count. The controller pulls every layer's skip fraction to the target, so this is
      // a weak check of the scores; it is reported and held to 2%.
      REQUIRE(m.skipped >= 0);
      const double rel = std::fabs(static_cast<double>(st.n_attention_skipped - m.skipped)) /
                         static_cast<double>(std::max<int64_t>(1, m.skipped));
      MESSAGE(c.name << " tokenfilter: skipped (row, layer) pairs: whittle " << st.n_attention_skipped
                     << ", reference " << m.skipped);
      CHECK(rel <= 0.02);
    } else if (m.selected) {
      CHECK(st.selection_layer == m.sel_layer);
      CHECK(st.n_selected == static_cast<int32_t>(m.sel_pos.size()));
    }
    if (m.name != "asl") CHECK(st.asl_ratios == nullptr);
    if (!m.steps.empty()) check_steps(model, ctx, c, m);
    // The next token after the pruned prefill, where the reference's choice is clear.
    if (m.next >= 0 && m.next_margin > 0.5) {
      const float* logits = nullptr;
      REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
      wt_model_info info;
      REQUIRE(wt_model_get_info(model, &info) == WT_OK);
      CHECK(std::max_element(logits, logits + info.n_vocab) - logits == m.next);
    }
    wt_context_free(ctx);
  }
}

}  // namespace

// Label long: three minutes in Release, many under ASan (whose host code the other prune
// tests already cover).
TEST_CASE("prune reference: kept KV per layer and KV head vs the NumPy reference of the authors' algorithms" *
          doctest::test_suite("long")) {
  if (!wt::test::have_real_model()) return;
  wt_model* model = wt::test::real_model().model;
  totals().clear();
  for (const char* p : {"p0", "p1", "p2"})
    for (const char* n : {"256", "512", "1024"}) {
      const Case c = read_case(std::string(WT_TEST_DATA_DIR) + "/reference/prune/" + p + "_" + n + ".ref");
      REQUIRE(c.methods.size() == 11);
      run_case(model, c);
    }

  // The measured agreement, per method over the 9 cases (2026-11-26, the reference with
  // Whittle's defaults of that day: pooling kernel 31, the window at most half the budget;
  // decode_topk 2026-11-29, decode_topk_bounds the same day, again 2026-12-01 with its
  // bounds stored as f16 rounded outward, which moved 5 of p2_1024's 120 layer lines
  // against the f32 bounds' fixtures; gemfilter_window, GemFilter's default since 2026-12-04,
  // that day): every kept position of all eleven methods identical,
  // 810 of 810 kv lines each, and 1080 of 1080 (case, step, layer) decode lines of both
  // decode_topk variants (Token Filtering keeps every row; its skip
  // counts are checked above). The bar: a near-tie may flip on another CPU's rounding, a
  // decided cut-off may not.
  for (const auto& [name, a] : totals()) {
    MESSAGE(name << ": kept positions in common " << a.common << "/" << a.ref_positions << " = " << a.share()
                 << "; identical lines " << a.identical << "/" << a.lines << "; decided lines identical "
                 << a.decided_identical << "/" << a.decided);
    CHECK(a.share() >= 0.99);
    CHECK(a.decided_identical == a.decided);
  }
}
