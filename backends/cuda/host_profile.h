// Where the host's time goes in decode steps (WT_CUDA_PROFILE=1): issuing the step's
// launches into the capture, ending captures (end, update or instantiate, graph launch),
// and waiting in the compute stream's synchronize. The GPU starts a captured segment only
// when its capture ends, so the host's share adds to the GPU's unless the step is cut into
// segments (WT_CUDA_STEP_SEGMENT). Printed once, when the backend goes; no clock is read
// while it is off.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>

#include "graph_book.h"

namespace wt::cuda {

struct HostProfile {
  bool on = false;
  bool in_step = false;  // a decode step began and its synchronize has not come yet
  uint64_t steps = 0;
  double issue_ns = 0, finish_ns = 0, sync_ns = 0;

  using Clock = std::chrono::steady_clock;
  // Adds the time from construction to destruction to *sum, when `on`, less what *less grew
  // by meanwhile (an enqueue's own time without the graph ends it triggered, which count as
  // ending).
  class Span {
   public:
    Span(bool on, double* sum, const double* less = nullptr) : sum_(on ? sum : nullptr), less_(less) {
      if (!sum_) return;
      t0_ = Clock::now();
      less0_ = less_ ? *less_ : 0.0;
    }
    ~Span() {
      if (!sum_) return;
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0_).count();
      *sum_ += static_cast<double>(ns) - (less_ ? *less_ - less0_ : 0.0);
    }
    Span(const Span&) = delete;
    Span& operator=(const Span&) = delete;

   private:
    double* sum_;
    const double* less_;
    double less0_ = 0.0;
    Clock::time_point t0_{};
  };

  void print(const GraphBook::Counters& g, size_t segment_ops) const {
    if (!on || steps == 0) return;
    const double n = static_cast<double>(steps);
    std::fprintf(stderr,
                 "cuda profile: %llu decode steps (segments of %zu launches, 0: whole steps): host per step "
                 "%.1f us issuing launches, %.1f us ending captures and launching graphs, %.1f us waiting in "
                 "the step's synchronize; graph segments %llu, replays %llu, instances %llu, recaptures %llu\n",
                 static_cast<unsigned long long>(steps), segment_ops, issue_ns / n / 1e3, finish_ns / n / 1e3,
                 sync_ns / n / 1e3, static_cast<unsigned long long>(g.segments),
                 static_cast<unsigned long long>(g.replays), static_cast<unsigned long long>(g.instances),
                 static_cast<unsigned long long>(g.recaptures));
  }
};

}  // namespace wt::cuda
