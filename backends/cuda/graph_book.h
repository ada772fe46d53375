// Bookkeeping of the CUDA backend's step graphs (step_graphs.h), without CUDA: which cached
// executable graph a captured segment of launches goes to, and whether that graph is
// updated in place or instantiated anew. Plain C++, so the CPU unit tests check the
// decisions (tests/unit/test_cuda_graph_book.cpp) on machines without a GPU.
//
// A segment is the run of launches between two points the host must see (a synchronize,
// an event, a host-result op, a copy on the compute stream). Its key is the sequence of its
// ops: a decode step's segments repeat token after token with the same ops, while pointers,
// lengths, positions, the policy's key lists and so the grids change. So:
//   - a key seen before: its graph is updated in place from the new capture
//     (cudaGraphExecUpdate: kernel arguments, grids) and launched: a replay;
//   - CUDA refuses the update (a node more or less: e.g. an attention call with no keys
//     runs one kernel instead of two): the slot's graph is instantiated anew, a recapture;
//   - a new key: a free slot, or the least recently used one, gets a new instance.
// Nothing is launched from a stale instance: every launch follows the capture of the very
// launches the engine asked for, so a step the policy changed is never replayed blindly.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wt::cuda {

class GraphBook {
 public:
  static constexpr int kSlots = 32;  // a step of segments (cuda_backend.h) needs one per segment

  enum class Action {
    update,       // the slot holds an instance of this key: update it, then launch
    instantiate,  // the slot is free or evicted: instantiate the capture there, then launch
  };
  struct Decision {
    Action action = Action::instantiate;
    int slot = 0;
    bool evict = false;  // the slot held another key's instance: destroy it first
  };
  struct Counters {
    uint64_t segments = 0;     // captured segments launched
    uint64_t launches = 0;     // launches they held
    uint64_t replays = 0;      // launched from an updated instance
    uint64_t instances = 0;    // instances made for new keys
    uint64_t recaptures = 0;   // instances remade because the update was refused
    uint64_t evictions = 0;
  };

  // A segment starts; add() each launch's op (its number in ops.def). `position`: the
  // segment's ordinal within its step when steps are cut into segments of a fixed number of
  // launches (WT_CUDA_STEP_SEGMENT): equal runs of ops at two places of one step then get
  // two instances, so an instance is never updated while a launch of it from the same step
  // may still be queued. 0 keeps the key of the ops alone.
  void begin(uint32_t position = 0) {
    key_ = kFnvOffset;
    if (position) key_ = (key_ ^ (kPositionSalt + position)) * kFnvPrime;
    n_ops_ = 0;
  }
  void add(uint32_t op) {
    key_ = (key_ ^ (op + 1)) * kFnvPrime;
    ++n_ops_;
  }
  uint64_t key() const { return key_; }
  size_t n_ops() const { return n_ops_; }

  // The segment ends: where its capture goes.
  Decision end() {
    ++clock_;
    ++counters_.segments;
    counters_.launches += n_ops_;
    Decision d;
    for (int i = 0; i < kSlots; ++i) {
      if (slots_[i].used && slots_[i].key == key_) {
        slots_[i].last_used = clock_;
        d.action = Action::update;
        d.slot = i;
        return d;
      }
    }
    int victim = 0;
    for (int i = 0; i < kSlots; ++i) {
      if (!slots_[i].used) {
        victim = i;
        break;
      }
      if (slots_[i].last_used < slots_[victim].last_used) victim = i;
    }
    d.action = Action::instantiate;
    d.slot = victim;
    d.evict = slots_[victim].used;
    if (d.evict) ++counters_.evictions;
    ++counters_.instances;
    slots_[victim] = Slot{key_, clock_, true};
    return d;
  }
  // The update of d.slot succeeded (a replay) or was refused (the caller instantiates the
  // capture in the same slot: a recapture).
  void updated(bool ok) {
    if (ok) {
      ++counters_.replays;
    } else {
      ++counters_.recaptures;
    }
  }
  // The slot's instance is gone (instantiation failed, or the backend dropped it).
  void forget(int slot) {
    if (slot >= 0 && slot < kSlots) slots_[slot] = Slot{};
  }

  const Counters& counters() const { return counters_; }

 private:
  static constexpr uint64_t kFnvOffset = 1469598103934665603ull;
  static constexpr uint64_t kFnvPrime = 1099511628211ull;
  static constexpr uint64_t kPositionSalt = 0x9e3779b97f4a7c15ull;  // apart from any op number + 1
  struct Slot {
    uint64_t key = 0;
    uint64_t last_used = 0;
    bool used = false;
  };
  Slot slots_[kSlots];
  uint64_t key_ = kFnvOffset;
  size_t n_ops_ = 0;
  uint64_t clock_ = 0;
  Counters counters_;
};

}  // namespace wt::cuda
