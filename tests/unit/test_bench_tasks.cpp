// whittle-bench's task generators and statistics: tasks are deterministic per seed, exactly
// the requested length, and hold their answer in the prompt at the stated depth; scoring,
// Spearman and KL agree with hand-computed values.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include "support/real_model.h"
#include "tools/whittle-bench/metrics.h"
#include "tools/whittle-bench/tasks.h"

namespace {

using bench::Task;
using bench::TaskKind;

bench::Tokenizer model_tokenizer(const wt_model* m) {
  return [m](const std::string& s, bool special) {
    bench::Tokens t(s.size() + 16);
    size_t n = 0;
    wt_tokenize_params tp = wt_tokenize_default_params();
    tp.add_special = special;
    REQUIRE(wt_tokenize(m, s.data(), s.size(), &tp, t.data(), t.size(), &n) == WT_OK);
    t.resize(n);
    return t;
  };
}

std::string text_of(const wt_model* m, const bench::Tokens& toks, size_t begin, size_t end) {
  std::string out;
  char buf[256];
  for (size_t i = begin; i < end; ++i) {
    size_t len = 0;
    REQUIRE(wt_token_to_bytes(m, toks[i], buf, sizeof buf, &len) == WT_OK);
    out.append(buf, len);
  }
  return out;
}

size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) ++n;
  return n;
}

const TaskKind kKinds[] = {TaskKind::passkey, TaskKind::niah_single, TaskKind::niah_multikey, TaskKind::kv_retrieval,
                           TaskKind::variable_tracking};

}  // namespace

TEST_CASE("bench tasks: deterministic per seed, exact length, answer in the prompt at the stated depth") {
  if (!wt::test::have_real_model()) return;
  const wt_model* m = wt::test::real_model().model;
  const bench::Tokenizer tok = model_tokenizer(m);
  const bench::Filler filler = bench::make_filler(bench::debian_filler_text(), tok);
  REQUIRE(filler.n_tokens > 20000);
  for (TaskKind kind : kKinds) {
    for (int32_t n : {1024, 2048}) {
      for (double depth : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        CAPTURE(bench::task_name(kind));
        CAPTURE(n);
        CAPTURE(depth);
        Task a, b, c;
        std::string err;
        REQUIRE_MESSAGE(bench::make_task(kind, n, depth, 7, filler, tok, &a, &err), err);
        REQUIRE(bench::make_task(kind, n, depth, 7, filler, tok, &b, &err));
        REQUIRE(bench::make_task(kind, n, depth, 8, filler, tok, &c, &err));
        CHECK(a.prompt == b.prompt);
        CHECK(a.answers == b.answers);
        CHECK(a.prompt != c.prompt);
        CHECK(static_cast<int32_t>(a.prompt.size()) == n);

        // The needle's own tokens hold the answer (the first answer for variable tracking:
        // the chain starts with the value's assignment, whose name is the first answer).
        const std::string needle = text_of(m, a.prompt, a.needle_begin, a.needle_end);
        const std::string& answer = a.answers.front();
        CHECK_MESSAGE(needle.find(answer) != std::string::npos, needle);
        // ... and the answer appears nowhere else in the haystack (the question may repeat
        // a key, never the value; variable tracking's names recur along the chain).
        if (kind != TaskKind::variable_tracking) {
          const std::string whole = text_of(m, a.prompt, 0, a.prompt.size());
          CHECK(count_of(whole, answer) == (kind == TaskKind::passkey ? 2u : 1u));
        }
        // The depth: the needle's start within the haystack, to within one filler sentence
        // (needles sit between sentences) or one key-value pair.
        const double span = a.haystack_end - a.haystack_begin - (a.needle_end - a.needle_begin);
        const double actual = (a.needle_begin - a.haystack_begin) / span;
        const double slack = kind == TaskKind::kv_retrieval ? 32.0 / span : 120.0 / span;
        CHECK_MESSAGE(std::fabs(actual - depth) <= slack, "actual depth " << actual);
        CHECK(a.haystack_begin > 0);
        CHECK(a.haystack_end < n);
      }
    }
  }
}

TEST_CASE("bench tasks: a prompt too short for the task, or no filler, is refused with a reason") {
  if (!wt::test::have_real_model()) return;
  const bench::Tokenizer tok = model_tokenizer(wt::test::real_model().model);
  const bench::Filler filler = bench::make_filler(bench::debian_filler_text(), tok);
  Task t;
  std::string err;
  CHECK_FALSE(bench::make_task(TaskKind::niah_single, 20, 0.5, 1, filler, tok, &t, &err));
  CHECK(err.find("cannot hold") != std::string::npos);
  CHECK_FALSE(bench::make_task(TaskKind::passkey, 1024, 0.5, 1, bench::Filler{}, tok, &t, &err));
  CHECK(err.find("filler") != std::string::npos);
}

TEST_CASE("bench tasks: exact-match scoring") {
  Task t;
  t.kind = TaskKind::passkey;
  t.answers = {"71432"};
  CHECK(bench::score_output(t, " 71432."));
  CHECK(bench::score_output(t, "71432"));
  CHECK(bench::score_output(t, ": \"71432\" is it"));
  CHECK_FALSE(bench::score_output(t, " 714320"));
  CHECK_FALSE(bench::score_output(t, " 7143"));
  CHECK_FALSE(bench::score_output(t, " the key is 71432"));
  t.kind = TaskKind::variable_tracking;
  t.answers = {"ABCDE", "FGHIJ"};
  CHECK(bench::score_output(t, " ABCDE, FGHIJ."));
  CHECK_FALSE(bench::score_output(t, " ABCDE, FGHIJK"));
  CHECK_FALSE(bench::score_output(t, " ABCDE"));
}

TEST_CASE("bench tasks: --task lists with depths, and bad items refused with the item named") {
  std::vector<bench::TaskSpec> ts;
  std::string err;
  REQUIRE(bench::parse_task_list("niah_multikey@0.25:0.75,kv_retrieval,passkey@1", &ts, &err));
  REQUIRE(ts.size() == 3);
  CHECK(ts[0].kind == TaskKind::niah_multikey);
  CHECK(ts[0].depths == std::vector<double>{0.25, 0.75});
  CHECK(ts[1].kind == TaskKind::kv_retrieval);
  CHECK(ts[1].depths == std::vector<double>{0.5});
  CHECK(ts[2].depths == std::vector<double>{1.0});
  REQUIRE(bench::parse_task_list("none", &ts, &err));
  CHECK(ts.empty());
  for (const char* bad : {"", "niah", "passkey,", "passkey@", "passkey@1.5", "passkey@-0", "passkey@0.5:",
                          "passkey@nan", "passkey@0x1", "passkey@1e-1", "none,passkey", "kv_retrieval@0.5@0.5"}) {
    CAPTURE(bad);
    err.clear();
    CHECK_FALSE(bench::parse_task_list(bad, &ts, &err));
    CHECK_FALSE(err.empty());
  }
  CHECK(err.find("kv_retrieval@0.5@0.5") != std::string::npos);
}

TEST_CASE("bench metrics: Spearman, KL and summaries against hand-computed values") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float a[] = {1, 2, 3, 4, 5}, b[] = {2, 1, 4, 3, 5};
  CHECK(bench::spearman(a, b, 5) == doctest::Approx(0.8));  // 1 - 6*4/(5*24)
  CHECK(bench::spearman(a, a, 5) == doctest::Approx(1.0));
  const float rev[] = {5, 4, 3, 2, 1};
  CHECK(bench::spearman(a, rev, 5) == doctest::Approx(-1.0));
  // Ties take their average rank: rho = 4.5 / sqrt(4.5 * 5).
  const float t1[] = {1, 2, 2, 3}, t2[] = {1, 2, 3, 4};
  CHECK(bench::spearman(t1, t2, 4) == doctest::Approx(4.5 / std::sqrt(22.5)));
  // Unranked (NaN) positions are left out on either side.
  const float n1[] = {1, nan, 2, 3, 4, 5}, n2[] = {2, 9, 1, 4, 3, nan};
  const float m1[] = {1, 2, 3, 4}, m2[] = {2, 1, 4, 3};
  CHECK(bench::spearman(n1, n2, 6) == doctest::Approx(bench::spearman(m1, m2, 4)));
  const float flat[] = {1, 1, 1, 1, 1};
  CHECK(std::isnan(bench::spearman(a, flat, 5)));

  std::vector<double> lp, lq;
  const float p[] = {0.0f, 0.0f};                        // 0.5, 0.5
  const float q[] = {std::log(0.9f), std::log(0.1f)};    // 0.9, 0.1
  bench::log_softmax(p, 2, &lp);
  bench::log_softmax(q, 2, &lq);
  CHECK(bench::kl_divergence(lp, lq) == doctest::Approx(0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1)));
  CHECK(bench::kl_divergence(lp, lp) == doctest::Approx(0.0));

  const bench::Summary s = bench::summarize({1, 2, 3, 4});
  CHECK(s.mean == doctest::Approx(2.5));
  CHECK(s.median == doctest::Approx(2.5));
  CHECK(s.std == doctest::Approx(std::sqrt(5.0 / 3.0)));
}
