// qwen2 and the Q5_0/Q5_1 weight types against an independent implementation (issue 25):
// the float64 NumPy forward pass of tests/reference/ (weights dequantized by the `gguf`
// package, not by Whittle) wrote tests/data/reference_qwen2/ (make_qwen2_fixtures.py):
//   - tiny_qwen2_q5: a random-weight qwen2 (q/k/v biases, neox rope base 1e6, untied
//     output, width 320) in Q5_0/Q5_1/Q8_0/Q6_K/Q4_K; runs everywhere, qemu and ASan too;
//   - tiny_qwen3: a random-weight qwen3 (per-head q/k norms, heads of 128 over a width of
//     256, tied output) in K-quants and Q8_0; on the CPU everywhere, on Vulkan and CUDA where
//     they run (no real Qwen3 file can be fetched here: PyPI only); tiny_qwen3_yarn: its
//     logits with YaRN asked for at load; tiny_qwen3_yarnkeys: YaRN from a file's keys;
//   - tiny_smollm3: a random-weight smollm3 (llama without rope in every fourth layer);
//   - tiny_gemma3: a random-weight gemma3 (six layers: five attend through a window of 8 of
//     the 28 tokens, with their own rope base; scaled embeddings, head norms, post-block
//     norms, gelu); on the CPU, Vulkan and CUDA where they run;
//   - tiny_phi3: a random-weight phi3 (fused q/k/v and gate/up matrices, LongRoPE: its short
//     factors in tiny_phi3.ref, its long ones in tiny_phi3_long.ref);
//   - tiny_phi4: Phi-4-mini's layout (phi3's with rope over 48 of 64 dims, LongRoPE's factor on
//     cos and sin of those only, tied output, the gpt-4o pre-tokenizer), long factors;
//   - qwen2_{chat,code,prose}: Qwen2.5-Coder-0.5B-Instruct Q4_K_M's logits for three prompts
//     (label model: skipped visibly without models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf,
//     which `scripts/fetch-model.sh qwen2.5-0.5b` fetches);
//   - qwen15_{chat,code,prose}: the same prompts through Qwen2.5-Coder-1.5B-Instruct Q4_K_M
//     (real Q4_K/Q6_K rows 1536 wide, heads of 128; skipped visibly without the model, which
//     `scripts/fetch-model.sh qwen2.5-1.5b` fetches and CI does not);
//   - qwen2_ppl_apache: its perplexity on the Apache 2.0 license text, llama.cpp's way
//     (512-token chunks, the second half of each scored, BOS only where the model adds one),
//     which Whittle's must match within 1% through the C API (logits_all); label long.
// Tolerances and how they were measured: tests/reference/README.md.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "support/reference_fixture.h"
#include "whittle.h"
#include "whittle/state.h"

namespace {

std::string mode_name(wt_matmul_mode mode) {
  return mode == WT_MATMUL_F32 ? "f32 activations" : "int8 activations";
}

// Bounds on the logits, per model and matmul mode (README: "Tolerances"). With f32
// activations only float rounding separates Whittle from the float64 reference. The fast
// mode rounds every matmul's input to int8 per block of 32: exact per matmul
// (test_matmul.cpp) but a perturbation the model amplifies, so its bounds are measured
// (the numbers this test prints) with headroom.
struct Tolerance {
  float max_abs;  // max |logit - reference| over the fixture's top-8 and 64 sampled ids, every row
  double nmse;    // sum (logit - ref)^2 / sum ref^2 over the same values
  float tie;      // below this reference top1-top2 margin an argmax disagreement is a near-tie
};

// Measured on AVX-512 VNNI (README): f32 max 5.7e-5 (Qwen 0.5B) / 1.4e-4 (1.5B) / 4.5e-6
// (tiny), nmse < 1e-11; int8 max 0.39, nmse 9e-5 (0.5B), 1.9, 4.7e-4 (1.5B) and 0.16, 3.6e-4
// (tiny; the NumPy emulation of the int8 rounding gives the same 0.16 on these values).
const Tolerance kF32Tolerance{1e-2f, 1e-6, 1e-2f};
Tolerance tiny_tolerance(wt_matmul_mode mode) {
  return mode == WT_MATMUL_F32 ? kF32Tolerance : Tolerance{0.5f, 3e-3, 0.15f};
}

// A real model with fixtures: its file in models/, scripts/fetch-model.sh's name for it, and
// its logits cases.
struct RealQwen {
  const char* file;
  const char* fetch_name;
  const char* cases[3];
  Tolerance fast;  // WT_MATMUL_FAST's bounds (the f32 mode's are the same for every model)
};
// 1.5B: the int8 rounding moves row 0's logits (the first token's large activations) by up
// to 1.9 in the NumPy emulation (reference_forward.py act_quant="int8") and in Whittle alike.
const RealQwen kQwen05{"qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.5-0.5b",
                       {"qwen2_chat", "qwen2_code", "qwen2_prose"}, {1.0f, 1e-3, 1.0f}};
const RealQwen kQwen15{"qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-1.5b",
                       {"qwen15_chat", "qwen15_code", "qwen15_prose"}, {4.0f, 3e-3, 1.0f}};

std::string data_dir() { return std::string(WT_TEST_DATA_DIR) + "/reference_qwen2"; }
std::string model_path(const RealQwen& q) { return std::string(WT_MODELS_DIR) + "/" + q.file; }

bool have(const RealQwen& q) {
  if (std::filesystem::exists(model_path(q))) return true;
  MESSAGE("SKIPPED: model " << model_path(q) << " not present (scripts/fetch-model.sh " << q.fetch_name
                            << " fetches it)");
  return false;
}

struct Diff {
  float max_abs = 0;
  double err2 = 0, ref2 = 0;
  int rows = 0, top1 = 0;        // rows compared, rows whose argmax is the reference's
  int argmax_mismatch = 0;       // disagreements where the reference margin is >= tie
  int near_ties = 0;
  double nmse() const { return ref2 > 0 ? err2 / ref2 : 0; }
  void add(const Diff& o) {
    max_abs = std::max(max_abs, o.max_abs);
    err2 += o.err2, ref2 += o.ref2, rows += o.rows, top1 += o.top1;
    argmax_mismatch += o.argmax_mismatch, near_ties += o.near_ties;
  }
};

void compare_row(const wt::test::ReferenceCase& c, size_t p, const float* logits, float tie, Diff* d) {
  const wt::test::ReferenceRow& row = c.rows[p];
  auto one = [&](int32_t id, float ref) {
    const float e = logits[id] - ref;
    d->max_abs = std::max(d->max_abs, std::fabs(e));
    d->err2 += double(e) * e;
    d->ref2 += double(ref) * ref;
  };
  for (size_t i = 0; i < c.subset.size(); ++i) one(c.subset[i], row.sub[i]);
  for (const auto& [id, v] : row.top) one(id, v);
  int32_t best = 0;
  for (int32_t i = 1; i < c.n_vocab; ++i) best = logits[i] > logits[best] ? i : best;
  ++d->rows;
  if (best == row.argmax) {
    ++d->top1;
  } else if (row.margin < tie) {
    ++d->near_ties;
  } else {
    ++d->argmax_mismatch;
    MESSAGE(c.name << " position " << p << ": argmax " << best << ", reference " << row.argmax << " (margin "
                   << row.margin << ")");
  }
}

// Both paths test_reference_logits.cpp takes: the whole prompt as one prefill (logits_all),
// and half of it as a prefill followed by one decode step per token.
// batch_rows > 0: the prompt runs in passes of that many rows (n_batch_rows).
// n_ctx: the context's size (0: the case's tokens), which LongRoPE's factors depend on.
void run_case(wt_model* model, const wt::test::ReferenceCase& c, wt_matmul_mode mode, float tie, Diff* prefill,
              Diff* decode, int32_t batch_rows = 0, int32_t n_ctx = 0) {
  const int32_t n = static_cast<int32_t>(c.tokens.size());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = n_ctx > 0 ? n_ctx : n;
  cp.n_threads = 2;
  cp.logits_all = true;
  cp.matmul_mode = mode;
  cp.kv_type = WT_KV_F32;  // the reference's keys and values are f32
  cp.n_batch_rows = batch_rows;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, wt_last_error());
  REQUIRE_MESSAGE(wt_context_prefill(ctx, c.tokens.data(), c.tokens.size()) == WT_OK, wt_last_error());
  for (int32_t p = 0; p < n; ++p) {
    const float* logits = nullptr;
    REQUIRE(wt_context_logits(ctx, p, &logits) == WT_OK);
    compare_row(c, static_cast<size_t>(p), logits, tie, prefill);
  }
  wt_context_free(ctx);

  cp.logits_all = false;
  REQUIRE(wt_context_create(model, &cp, &ctx) == WT_OK);
  const int32_t half = n / 2;
  REQUIRE(wt_context_prefill(ctx, c.tokens.data(), static_cast<size_t>(half)) == WT_OK);
  const float* logits = nullptr;
  REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
  compare_row(c, static_cast<size_t>(half - 1), logits, tie, decode);
  for (int32_t p = half; p < n; ++p) {
    REQUIRE_MESSAGE(wt_context_decode(ctx, c.tokens[static_cast<size_t>(p)]) == WT_OK, wt_last_error());
    REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
    compare_row(c, static_cast<size_t>(p), logits, tie, decode);
  }
  wt_context_free(ctx);
}

void report_and_check(const std::string& what, const Diff& d, const Tolerance& tol) {
  MESSAGE(what << ": " << d.rows << " rows, max|dlogit| " << d.max_abs << ", nmse " << d.nmse() << ", top-1 "
               << d.top1 << "/" << d.rows << ", near-ties " << d.near_ties << " (tolerance max " << tol.max_abs
               << ", nmse " << tol.nmse << ")");
  CHECK(d.argmax_mismatch == 0);
  CHECK(d.max_abs <= tol.max_abs);
  CHECK(d.nmse() <= tol.nmse);
}

// Decodes the case's tokens from n0 on in ctx (f32 activations), each step's logits against
// the reference's row.
void decode_rest_and_check(wt_context* ctx, const wt::test::ReferenceCase& c, size_t n0, const std::string& what) {
  const Tolerance tol = tiny_tolerance(WT_MATMUL_F32);
  Diff d;
  for (size_t p = n0; p < c.tokens.size(); ++p) {
    REQUIRE_MESSAGE(wt_context_decode(ctx, c.tokens[p]) == WT_OK, wt_last_error());
    const float* logits = nullptr;
    REQUIRE(wt_context_logits(ctx, -1, &logits) == WT_OK);
    compare_row(c, p, logits, tol.tie, &d);
  }
  report_and_check(what, d, tol);
}

wt::test::ReferenceCase read_case(const std::string& name) {
  wt::test::ReferenceCase c;
  std::string err;
  REQUIRE_MESSAGE(wt::test::read_reference_case(data_dir() + "/" + name + ".ref", &c, &err), err);
  return c;
}

// The model at path on a backend, or nullptr with a visible skip where this build or machine
// lacks the (device) backend.
wt_model* load_on(const std::string& path, wt_backend_kind backend, wt_model_params mp = wt_model_default_params()) {
  mp.backend = backend;
  wt_model* model = nullptr;
  const wt_status st = wt_model_load(path.c_str(), &mp, &model);
  if (backend != WT_BACKEND_CPU && st == WT_ERR_UNSUPPORTED && !std::strstr(wt_last_error(), "placement")) {
    MESSAGE("SKIPPED: no device for this backend: " << std::string(wt_last_error()));
    return nullptr;
  }
  REQUIRE_MESSAGE(st == WT_OK, wt_last_error());
  return model;
}

// A tiny model's fixture (tiny_qwen2_q5, tiny_qwen3) on a backend, loaded with mp; the
// prompt in passes of batch_rows rows where that is set.
void check_tiny(const char* name, wt_matmul_mode mode, wt_backend_kind backend = WT_BACKEND_CPU,
                const wt_model_params& mp = wt_model_default_params(), int32_t batch_rows = 0, int32_t n_ctx = 0) {
  const wt::test::ReferenceCase c = read_case(name);
  wt_model* model = load_on(data_dir() + "/" + c.model, backend, mp);
  if (!model) return;
  const Tolerance tol = tiny_tolerance(mode);
  Diff prefill, decode;
  run_case(model, c, mode, tol.tie, &prefill, &decode, batch_rows, n_ctx);
  wt_model_free(model);
  report_and_check(c.name + " [" + mode_name(mode) + "] prefill", prefill, tol);
  report_and_check(c.name + " [" + mode_name(mode) + "] decode", decode, tol);
}

// backend: where the model runs; a device backend this build or machine lacks skips visibly.
void check_qwen_logits(const RealQwen& q, wt_matmul_mode mode, wt_backend_kind backend = WT_BACKEND_CPU) {
  if (!have(q)) return;
  const auto t0 = std::chrono::steady_clock::now();
  wt_model* model = load_on(model_path(q), backend);
  if (!model) return;
  const Tolerance tol = mode == WT_MATMUL_F32 ? kF32Tolerance : q.fast;
  Diff all_prefill, all_decode;
  for (const char* name : q.cases) {
    const wt::test::ReferenceCase c = read_case(name);
    REQUIRE(c.model == q.file);
    Diff prefill, decode;
    run_case(model, c, mode, tol.tie, &prefill, &decode);
    report_and_check(c.name + " [" + mode_name(mode) + "] prefill", prefill, tol);
    report_and_check(c.name + " [" + mode_name(mode) + "] decode", decode, tol);
    all_prefill.add(prefill);
    all_decode.add(decode);
  }
  wt_model_free(model);
  report_and_check("all prompts [" + mode_name(mode) + "] prefill", all_prefill, tol);
  report_and_check("all prompts [" + mode_name(mode) + "] decode", all_decode, tol);
  MESSAGE(std::string(q.file) << " logits [" << mode_name(mode) << "]: "
                           << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
}

std::vector<wt_token> tokenize_file(const wt_model* model, const std::string& path, bool parse_special) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  wt_tokenize_params tp = wt_tokenize_default_params();
  tp.add_special = true;
  tp.parse_special = parse_special;
  std::vector<wt_token> ids(text.size() + 16);
  size_t n = 0;
  REQUIRE_MESSAGE(wt_tokenize(model, text.data(), text.size(), &tp, ids.data(), ids.size(), &n) == WT_OK,
                  wt_last_error());
  ids.resize(n);
  return ids;
}

// qwen2_ppl_apache.ppl (format: tests/reference/README.md).
struct PplFixture {
  std::string model, text;
  int32_t n_ctx = 0, n_chunks = 0;
  bool add_bos = false;
  std::vector<wt_token> tokens;
  std::vector<std::pair<int32_t, double>> chunks;  // scored tokens, nll sum
  double ppl = 0;
};

PplFixture read_ppl(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  PplFixture f;
  std::string line, magic;
  REQUIRE(std::getline(in, magic));
  REQUIRE(magic == "whittle-perplexity 1");
  while (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    if (key == "model") ss >> f.model;
    else if (key == "text") ss >> f.text;
    else if (key == "n_ctx") ss >> f.n_ctx;
    else if (key == "n_chunks") ss >> f.n_chunks;
    else if (key == "add_bos") {
      int b = 0;
      ss >> b;
      f.add_bos = b != 0;
    } else if (key == "tokens") {
      for (wt_token t; ss >> t;) f.tokens.push_back(t);
    } else if (key == "chunk") {
      int32_t idx = 0, n = 0;
      double nll = 0;
      std::string k1, k2;
      ss >> idx >> k1 >> n >> k2 >> nll;
      REQUIRE(idx == static_cast<int32_t>(f.chunks.size()));
      f.chunks.emplace_back(n, nll);
    } else if (key == "ppl") {
      ss >> f.ppl;
    }
  }
  REQUIRE(f.n_ctx > 1);
  REQUIRE(f.n_chunks == static_cast<int32_t>(f.chunks.size()));
  REQUIRE(f.tokens.size() == static_cast<size_t>(f.n_ctx) * f.chunks.size());
  REQUIRE(f.ppl > 1);
  return f;
}

void check_qwen_ppl(wt_matmul_mode mode) {
  if (!have(kQwen05)) return;
  const PplFixture f = read_ppl(data_dir() + "/qwen2_ppl_apache.ppl");
  REQUIRE(f.model == kQwen05.file);
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load(model_path(kQwen05).c_str(), nullptr, &model) == WT_OK, wt_last_error());
  wt_model_info info{};
  REQUIRE(wt_model_get_info(model, &info) == WT_OK);
  const int32_t n_vocab = info.n_vocab;
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = f.n_ctx;
  cp.n_threads = 2;
  cp.logits_all = true;
  cp.matmul_mode = mode;
  cp.kv_type = WT_KV_F32;  // the reference's keys and values are f32
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, wt_last_error());
  const auto t0 = std::chrono::steady_clock::now();
  const int32_t first = f.n_ctx / 2;
  double total = 0, ref_total = 0;
  int64_t count = 0;
  for (size_t c = 0; c < f.chunks.size(); ++c) {
    std::vector<wt_token> chunk(f.tokens.begin() + static_cast<long>(c * f.n_ctx),
                                f.tokens.begin() + static_cast<long>((c + 1) * f.n_ctx));
    if (f.add_bos) chunk[0] = wt_token_bos(model);
    wt_context_reset(ctx);
    REQUIRE_MESSAGE(wt_context_prefill(ctx, chunk.data(), chunk.size()) == WT_OK, wt_last_error());
    double nll = 0;
    int32_t n = 0;
    for (int32_t j = first; j < f.n_ctx - 1; ++j, ++n) {
      const float* logits = nullptr;
      REQUIRE(wt_context_logits(ctx, j, &logits) == WT_OK);
      double mx = logits[0];
      for (int32_t i = 1; i < n_vocab; ++i) mx = std::max(mx, double(logits[i]));
      double sum = 0;
      for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
      nll += mx + std::log(sum) - logits[chunk[static_cast<size_t>(j) + 1]];
    }
    REQUIRE(n == f.chunks[c].first);
    MESSAGE("chunk " << c << ": nll/token " << nll / n << ", reference " << f.chunks[c].second / n);
    total += nll;
    ref_total += f.chunks[c].second;
    count += n;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  wt_context_free(ctx);
  wt_model_free(model);
  const double ppl = std::exp(total / static_cast<double>(count));
  const double rel = ppl / f.ppl - 1;
  MESSAGE("Qwen2.5-0.5B perplexity on " << f.text << " [" << mode_name(mode) << "]: " << ppl << ", NumPy reference "
                                        << f.ppl << " (" << 100 * rel << "%), " << f.chunks.size() << " chunks of "
                                        << f.n_ctx << ", " << count << " tokens scored, " << secs << " s");
  CHECK(std::fabs(std::exp(ref_total / static_cast<double>(count)) - f.ppl) <= 1e-6 * f.ppl);  // the fixture adds up
  CHECK(std::fabs(rel) <= 0.01);
}

}  // namespace

// Labels: the tiny model's cases have none (every stage, qemu and ASan included). Those
// that need Qwen2.5-0.5B are "model" (kept out of the qemu stage) when they take a few
// seconds in Release, "long" (kept out of qemu and ASan) when they take more: the f32
// activation path decodes Q5_0 slowly today (29 s for the logits case, 18 s for the
// perplexity; int8: 1.7 s and 8 s on 2 threads).
TEST_CASE("reference: tiny qwen2 in Q5_0/Q5_1 (untied output) matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_qwen2_q5", WT_MATMUL_F32);
}

TEST_CASE("reference: tiny qwen2 in Q5_0/Q5_1 (untied output) matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_qwen2_q5", WT_MATMUL_FAST);
}

// qwen3: per-head query and key norms before rope, heads of 128 over a width of 256 (attn_q
// 512 x 256), tied output, K-quants. Device backends too: the norms sit between the one-row
// matmul and rope, which a fusing backend (CUDA) would otherwise join. The device cases are
// named as the model tests are, so scripts/gpu-check.sh's model-tests step runs them.
TEST_CASE("reference: tiny qwen3 (per-head q/k norms, wide heads) matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_qwen3", WT_MATMUL_F32);
}

TEST_CASE("reference: tiny qwen3 (per-head q/k norms, wide heads) matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_qwen3", WT_MATMUL_FAST);
}

TEST_CASE("vulkan model: tiny qwen3 (per-head q/k norms) matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_qwen3", WT_MATMUL_F32, WT_BACKEND_VULKAN);
}

TEST_CASE("cuda model: tiny qwen3 (per-head q/k norms) matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_qwen3", WT_MATMUL_F32, WT_BACKEND_CUDA);
}

// YaRN asked for at load (the file has no scaling keys), as make_qwen2_fixtures.py's
// YARN_OVERRIDE: factor 4 over an original context of 8 tokens, so the 28 positions run
// past it; every q.k is scaled by (0.1 ln 4 + 1)^2 and most rotary pairs are interpolated.
wt_model_params yarn_params() {
  wt_model_params mp = wt_model_default_params();
  mp.rope_scaling = WT_ROPE_SCALING_YARN;
  mp.rope_scaling_factor = 4.0f;
  mp.rope_orig_ctx = 8;
  return mp;
}

TEST_CASE("reference: tiny qwen3 with YaRN asked for at load matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_qwen3_yarn", WT_MATMUL_F32, WT_BACKEND_CPU, yarn_params());
}

TEST_CASE("reference: tiny qwen3 with YaRN asked for at load matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_qwen3_yarn", WT_MATMUL_FAST, WT_BACKEND_CPU, yarn_params());
}

TEST_CASE("vulkan model: tiny qwen3 with YaRN matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_qwen3_yarn", WT_MATMUL_F32, WT_BACKEND_VULKAN, yarn_params());
}

TEST_CASE("cuda model: tiny qwen3 with YaRN matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_qwen3_yarn", WT_MATMUL_F32, WT_BACKEND_CUDA, yarn_params());
}

// YaRN from the file's keys, none at its default (factor 4 over 8 tokens, betas 16 and 2, an
// extra attention factor 1.1): one layer of tiny_qwen3's shape.
TEST_CASE("reference: YaRN from a file's keys matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_qwen3_yarnkeys", WT_MATMUL_F32);
}

TEST_CASE("reference: YaRN from a file's keys matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_qwen3_yarnkeys", WT_MATMUL_FAST);
}

// smollm3: llama whose every fourth layer has no rope (five layers: the fourth has none).
TEST_CASE("reference: tiny smollm3 (no rope in every fourth layer) matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_smollm3", WT_MATMUL_F32);
}

TEST_CASE("reference: tiny smollm3 (no rope in every fourth layer) matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_smollm3", WT_MATMUL_FAST);
}

TEST_CASE("vulkan model: tiny smollm3 (no rope in every fourth layer) matches the NumPy forward pass" *
          doctest::test_suite("model")) {
  check_tiny("tiny_smollm3", WT_MATMUL_F32, WT_BACKEND_VULKAN);
}

TEST_CASE("cuda model: tiny smollm3 (no rope in every fourth layer) matches the NumPy forward pass" *
          doctest::test_suite("model")) {
  check_tiny("tiny_smollm3", WT_MATMUL_F32, WT_BACKEND_CUDA);
}

// gemma3: five sliding-window layers of six, scaled embeddings, post-block norms, gelu.
TEST_CASE("reference: tiny gemma3 (sliding window, post-block norms, gelu) matches the NumPy forward pass (f32 activations)") {
  check_tiny("tiny_gemma3", WT_MATMUL_F32);
}

TEST_CASE("reference: tiny gemma3 (sliding window, post-block norms, gelu) matches the NumPy forward pass (int8 activations)") {
  check_tiny("tiny_gemma3", WT_MATMUL_FAST);
}

// In passes of 5 rows, each pass's windows reach back into the KV of the ones before.
TEST_CASE("reference: tiny gemma3 prefilled in passes of 5 rows matches the NumPy forward pass") {
  check_tiny("tiny_gemma3", WT_MATMUL_F32, WT_BACKEND_CPU, wt_model_default_params(), 5);
}

TEST_CASE("vulkan model: tiny gemma3 matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_gemma3", WT_MATMUL_F32, WT_BACKEND_VULKAN);
  check_tiny("tiny_gemma3", WT_MATMUL_F32, WT_BACKEND_VULKAN, wt_model_default_params(), 5);
}

TEST_CASE("cuda model: tiny gemma3 matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_gemma3", WT_MATMUL_F32, WT_BACKEND_CUDA);
  check_tiny("tiny_gemma3", WT_MATMUL_F32, WT_BACKEND_CUDA, wt_model_default_params(), 5);
}

// Sliding layers keep 2 (window - 1) rows and a pass's: with passes of 5 rows over 28
// tokens their caches (19 rows) slide in the prompt and in decode, which the test above
// checks against the reference; here the bytes the plan counts.
TEST_CASE("reference: tiny gemma3's sliding layers keep their window's KV rows, not n_ctx") {
  const wt::test::ReferenceCase c = read_case("tiny_gemma3");
  const std::string path = data_dir() + "/" + c.model;
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &model) == WT_OK, wt_last_error());
  const uint64_t row = 2 * 1 * 128 * sizeof(float);  // K and V rows of one KV head of 128, f32
  for (const auto& [n_ctx, batch, sliding] : {std::tuple{28, 5, 19}, std::tuple{512, 16, 30}, std::tuple{64, 0, 64}}) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch_rows = batch;
    cp.kv_type = WT_KV_F32;
    wt_context_plan_info plan{};
    REQUIRE_MESSAGE(wt_context_plan(model, &cp, &plan) == WT_OK, wt_last_error());
    CAPTURE(n_ctx);
    CHECK(plan.kv_bytes == row * static_cast<uint64_t>(5 * sliding + n_ctx));  // five sliding layers, one global
  }
  wt_model_free(model);
}

namespace {

// A tiny gemma3 context over its reference's tokens that prefills in passes of 5 rows, so its
// sliding caches (19 rows) slide; f32 throughout, to compare with the reference.
wt_context* gemma3_in_passes(const wt_model* model, const wt::test::ReferenceCase& c) {
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = static_cast<int32_t>(c.tokens.size());
  cp.n_batch_rows = 5;
  cp.n_threads = 2;
  cp.matmul_mode = WT_MATMUL_F32;
  cp.kv_type = WT_KV_F32;
  wt_context* ctx = nullptr;
  REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, std::string(wt_last_error()));
  return ctx;
}

}  // namespace

// A state saved after its sliding layers slid (20 tokens in passes of 5 into caches of 19
// rows) loads into a fresh context and decodes the rest as the reference has it.
TEST_CASE("reference: tiny gemma3's state round-trips after its windows slid") {
  const wt::test::ReferenceCase c = read_case("tiny_gemma3");
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load((data_dir() + "/" + c.model).c_str(), nullptr, &model) == WT_OK, wt_last_error());
  wt_context* a = gemma3_in_passes(model, c);
  wt_context* b = gemma3_in_passes(model, c);
  const size_t n0 = 20;
  REQUIRE_MESSAGE(wt_context_prefill(a, c.tokens.data(), n0) == WT_OK, wt_last_error());
  size_t bytes = 0;
  REQUIRE(wt_context_state_size(a, &bytes) == WT_OK);
  std::vector<char> state(bytes);
  REQUIRE(wt_context_state_save(a, state.data(), state.size(), &bytes) == WT_OK);
  REQUIRE_MESSAGE(wt_context_state_load(b, state.data(), bytes) == WT_OK, wt_last_error());
  decode_rest_and_check(b, c, n0, "tiny_gemma3 decoded after a state load");
  wt_context_free(a);
  wt_context_free(b);
  wt_model_free(model);
}

namespace {

// wt_context_truncate with sliding-window layers: 20 tokens in passes of 5 (the sliding caches
// slid), three wrong tokens decoded, then cut back as far as the windows allow: the rest
// decodes as the reference has it. Cutting further back is refused and changes nothing.
void check_gemma3_truncate(wt_backend_kind backend) {
  const wt::test::ReferenceCase c = read_case("tiny_gemma3");
  wt_model* model = load_on(data_dir() + "/" + c.model, backend);
  if (!model) return;
  wt_context* ctx = gemma3_in_passes(model, c);
  REQUIRE_MESSAGE(wt_context_prefill(ctx, c.tokens.data(), 20) == WT_OK, wt_last_error());
  for (wt_token t : {1, 2, 3}) REQUIRE(wt_context_decode(ctx, t) == WT_OK);
  int32_t n = 1;
  for (; n <= 20 && wt_context_truncate(ctx, n) != WT_OK; ++n) {
    CHECK(std::string(wt_last_error()).find("sliding-window layer") != std::string::npos);
    CHECK(wt_context_n_past(ctx) == 23);
  }
  MESSAGE("tiny gemma3: cut back to " << n << " of 23 tokens at the most");
  CHECK(n > 1);  // the windows slid past the start
  CHECK(n < 20);
  decode_rest_and_check(ctx, c, static_cast<size_t>(n), "tiny_gemma3 decoded after a truncation");
  wt_context_free(ctx);
  wt_model_free(model);
}

}  // namespace

TEST_CASE("reference: tiny gemma3 cut back after its windows slid goes on as the reference") {
  check_gemma3_truncate(WT_BACKEND_CPU);
}

TEST_CASE("vulkan model: tiny gemma3 cut back after its windows slid goes on as the reference" *
          doctest::test_suite("model")) {
  check_gemma3_truncate(WT_BACKEND_VULKAN);
}

TEST_CASE("cuda model: tiny gemma3 cut back after its windows slid goes on as the reference" *
          doctest::test_suite("model")) {
  check_gemma3_truncate(WT_BACKEND_CUDA);
}

TEST_CASE("reference: tiny gemma3 is refused where it cannot run yet: pruning, the pager") {
  const wt::test::ReferenceCase c = read_case("tiny_gemma3");
  const std::string path = data_dir() + "/" + c.model;
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load(path.c_str(), nullptr, &model) == WT_OK, wt_last_error());
  wt_context_params cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.prune.method = WT_PRUNE_SNAPKV;
  wt_context* ctx = nullptr;
  CHECK(wt_context_create(model, &cp, &ctx) == WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("sliding-window") != std::string::npos);
  cp = wt_context_default_params();
  cp.n_ctx = 64;
  cp.kv_device_blocks = 2;
  cp.kv_block_tokens = 16;
  CHECK(wt_context_create(model, &cp, &ctx) == WT_ERR_UNSUPPORTED);
  CHECK(std::string(wt_last_error()).find("pager") != std::string::npos);
  wt_model_free(model);
}

// phi3: q, k and v as row ranges of one matrix, gate and up of another (views, no copy),
// and LongRoPE, whose factors the context's size picks: the short ones up to the original
// context of 32 (tiny_phi3.ref, n_ctx 28), the long ones beyond (tiny_phi3_long.ref, n_ctx 64).
constexpr int32_t kPhi3LongCtx = 64;

TEST_CASE("reference: tiny phi3 (fused q/k/v and gate/up, LongRoPE short factors) matches the NumPy forward pass") {
  check_tiny("tiny_phi3", WT_MATMUL_F32);
  check_tiny("tiny_phi3", WT_MATMUL_FAST);
}

TEST_CASE("reference: tiny phi3 in a context past LongRoPE's original one takes the long factors") {
  check_tiny("tiny_phi3_long", WT_MATMUL_F32, WT_BACKEND_CPU, wt_model_default_params(), 0, kPhi3LongCtx);
  check_tiny("tiny_phi3_long", WT_MATMUL_FAST, WT_BACKEND_CPU, wt_model_default_params(), 0, kPhi3LongCtx);
}

TEST_CASE("vulkan model: tiny phi3 (fused matrices and LongRoPE) matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_phi3", WT_MATMUL_F32, WT_BACKEND_VULKAN);
  check_tiny("tiny_phi3_long", WT_MATMUL_F32, WT_BACKEND_VULKAN, wt_model_default_params(), 0, kPhi3LongCtx);
}

TEST_CASE("cuda model: tiny phi3 (fused matrices and LongRoPE) matches the NumPy forward pass" * doctest::test_suite("model")) {
  check_tiny("tiny_phi3", WT_MATMUL_F32, WT_BACKEND_CUDA);
  check_tiny("tiny_phi3_long", WT_MATMUL_F32, WT_BACKEND_CUDA, wt_model_default_params(), 0, kPhi3LongCtx);
}

// Phi-4-mini's rope: over the first 3/4 of each head, with LongRoPE's factor on the rotated
// dims' cos and sin only (a scale of q.k as a whole would be wrong there).
TEST_CASE("reference: tiny phi4 (rope over part of each head with LongRoPE's factor) matches the NumPy forward pass") {
  check_tiny("tiny_phi4", WT_MATMUL_F32, WT_BACKEND_CPU, wt_model_default_params(), 0, kPhi3LongCtx);
  check_tiny("tiny_phi4", WT_MATMUL_FAST, WT_BACKEND_CPU, wt_model_default_params(), 0, kPhi3LongCtx);
}

TEST_CASE("vulkan model: tiny phi4 (rope over part of each head with LongRoPE's factor) matches the NumPy forward pass" *
          doctest::test_suite("model")) {
  check_tiny("tiny_phi4", WT_MATMUL_F32, WT_BACKEND_VULKAN, wt_model_default_params(), 0, kPhi3LongCtx);
}

TEST_CASE("cuda model: tiny phi4 (rope over part of each head with LongRoPE's factor) matches the NumPy forward pass" *
          doctest::test_suite("model")) {
  check_tiny("tiny_phi4", WT_MATMUL_F32, WT_BACKEND_CUDA, wt_model_default_params(), 0, kPhi3LongCtx);
}

// A state's KV was roped with one set of factors: a context of the other set refuses it.
TEST_CASE("reference: a tiny phi3 state loads only into a context that ropes with the same LongRoPE factors") {
  const wt::test::ReferenceCase c = read_case("tiny_phi3_long");
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load((data_dir() + "/" + c.model).c_str(), nullptr, &model) == WT_OK, wt_last_error());
  const auto make = [&](int32_t n_ctx) {
    wt_context_params cp = wt_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_threads = 2;
    cp.kv_type = WT_KV_F32;
    cp.matmul_mode = WT_MATMUL_F32;
    wt_context* ctx = nullptr;
    REQUIRE_MESSAGE(wt_context_create(model, &cp, &ctx) == WT_OK, wt_last_error());
    return ctx;
  };
  wt_context* saved = make(kPhi3LongCtx);
  const size_t n0 = 20;
  REQUIRE_MESSAGE(wt_context_prefill(saved, c.tokens.data(), n0) == WT_OK, wt_last_error());
  size_t bytes = 0;
  REQUIRE(wt_context_state_size(saved, &bytes) == WT_OK);
  std::vector<char> state(bytes);
  REQUIRE(wt_context_state_save(saved, state.data(), state.size(), &bytes) == WT_OK);
  wt_context* short_ctx = make(28);  // room for the state, but the short factors
  CHECK(wt_context_state_load(short_ctx, state.data(), bytes) == WT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(wt_last_error()).find("LongRoPE") != std::string::npos);
  wt_context* long_ctx = make(40);   // past the original context: the long factors too
  REQUIRE_MESSAGE(wt_context_state_load(long_ctx, state.data(), bytes) == WT_OK, wt_last_error());
  decode_rest_and_check(long_ctx, c, n0, "tiny_phi3_long decoded after a state load");
  for (wt_context* ctx : {saved, short_ctx, long_ctx}) wt_context_free(ctx);
  wt_model_free(model);
}

TEST_CASE("reference: Whittle's tokenizer gives the ids of the Qwen2.5 fixtures" * doctest::test_suite("model")) {
  if (!have(kQwen05)) return;
  wt_model* model = nullptr;
  REQUIRE_MESSAGE(wt_model_load(model_path(kQwen05).c_str(), nullptr, &model) == WT_OK, wt_last_error());
  for (const char* name : kQwen05.cases) {
    const wt::test::ReferenceCase c = read_case(name);
    const bool special = std::string(name) == "qwen2_chat";
    CHECK_MESSAGE(tokenize_file(model, data_dir() + "/" + name + ".txt", special) == c.tokens, name);
  }
  const PplFixture f = read_ppl(data_dir() + "/qwen2_ppl_apache.ppl");
  std::vector<wt_token> ids = tokenize_file(model, data_dir() + "/" + f.text, false);
  REQUIRE(ids.size() >= f.tokens.size());
  ids.resize(f.tokens.size());
  CHECK(ids == f.tokens);
  wt_model_free(model);
}

TEST_CASE("reference: Qwen2.5-0.5B logits match the NumPy forward pass (f32 activations)" *
          doctest::test_suite("long")) {
  check_qwen_logits(kQwen05, WT_MATMUL_F32);
}

TEST_CASE("reference: Qwen2.5-0.5B logits match the NumPy forward pass (int8 activations)" *
          doctest::test_suite("model")) {
  check_qwen_logits(kQwen05, WT_MATMUL_FAST);
}

TEST_CASE("reference: Qwen2.5-1.5B logits match the NumPy forward pass (f32 activations)" *
          doctest::test_suite("long")) {
  check_qwen_logits(kQwen15, WT_MATMUL_F32);
}

TEST_CASE("reference: Qwen2.5-1.5B logits match the NumPy forward pass (int8 activations)" *
          doctest::test_suite("model")) {
  check_qwen_logits(kQwen15, WT_MATMUL_FAST);
}

// Qwen2.5's output heads are larger than lavapipe's 128 MiB binding: the Vulkan backend runs
// them in row ranges (OpRunner::linears_split). Vulkan's activations are always f32. About a
// minute (0.5B) and two (1.5B) on lavapipe.
TEST_CASE("reference: Qwen2.5-0.5B on Vulkan matches the NumPy forward pass (f32 activations)" *
          doctest::test_suite("long")) {
  check_qwen_logits(kQwen05, WT_MATMUL_F32, WT_BACKEND_VULKAN);
}

TEST_CASE("reference: Qwen2.5-1.5B on Vulkan matches the NumPy forward pass (f32 activations)" *
          doctest::test_suite("long")) {
  check_qwen_logits(kQwen15, WT_MATMUL_F32, WT_BACKEND_VULKAN);
}

TEST_CASE("reference: Qwen2.5-0.5B perplexity through the C API is within 1% of NumPy's (f32 activations)" *
          doctest::test_suite("long")) {
  check_qwen_ppl(WT_MATMUL_F32);
}

TEST_CASE("reference: Qwen2.5-0.5B perplexity through the C API is within 1% of NumPy's (int8 activations)" *
          doctest::test_suite("model")) {
  check_qwen_ppl(WT_MATMUL_FAST);
}
