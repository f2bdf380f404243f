// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FOREIGN_PRODUCERS_H_
#define SPINDLE_RUNTIME_INTERNAL_FOREIGN_PRODUCERS_H_

#include <cstddef>

#include "fiber/internal/atomic.h"

namespace spindle::internal {

// Producers running on threads that are no worker of any group (plain threads, the
// RunBlocking pool), between their push and the end of its wake-up. A fiber such a
// thread wakes may finish, and the runtime terminate, while that thread is still inside
// the strategy (waking a sleeper): TerminateRuntime() waits for this count to reach 0
// (WaitForForeignProducers) before it frees the groups. Workers are joined first and
// timer threads stopped first, so only these threads need counting.
//
// Why a count read after "no live fiber" sees every producer that matters: the
// increment is sequenced before the push, the push (release) before the worker's pop
// (acquire), which is before the fiber's finish, whose count Terminate reads with
// acquire before it reads this one; so that read finds the increment, or a later value.
// (Model-checked: runtime/internal/base/foreign_producers_model_test.cc.)
//
// Thread-safe.
class ForeignProducers {
 public:
  constexpr ForeignProducers() = default;
  ForeignProducers(const ForeignProducers&) = delete;
  ForeignProducers& operator=(const ForeignProducers&) = delete;

  void Enter() {
    // relaxed: ordered before the push, see above.
    count_.fetch_add(1, std::memory_order_relaxed);
  }
  void Leave() {
    // release: pairs with WaitUntilNone()'s acquire, so all this producer did to the
    // strategy happens before the runtime frees it.
    count_.fetch_sub(1, std::memory_order_release);
  }
  // Blocks until no producer is counted. Such a producer is at most a wake-up system
  // call away from leaving.
  void WaitUntilNone() const;

 private:
  Atomic<std::size_t> count_{0};
};

// The runtime's one instance. A model makes its own inside its run (Relacy's atomics
// exist only there) and points the scopes at it.
#ifdef SPINDLE_MODEL_CHECK
inline ForeignProducers* g_model_foreign_producers = nullptr;
inline ForeignProducers& TheForeignProducers() { return *g_model_foreign_producers; }
#else
extern ForeignProducers g_foreign_producers;
inline ForeignProducers& TheForeignProducers() { return g_foreign_producers; }
#endif

// Counts the calling thread as a foreign producer for its lifetime, around a push and
// its wake-up. Thread-bound; a scope on the stack of the producer.
class ForeignProducerScope {
 public:
  // `foreign`: the calling thread is no group's worker (nothing is counted otherwise).
  explicit ForeignProducerScope(bool foreign) : foreign_(foreign) {
    if (foreign_) TheForeignProducers().Enter();
  }
  ~ForeignProducerScope() {
    if (foreign_) TheForeignProducers().Leave();
  }
  ForeignProducerScope(const ForeignProducerScope&) = delete;
  ForeignProducerScope& operator=(const ForeignProducerScope&) = delete;

 private:
  const bool foreign_;
};

// Blocks until no thread outside the runtime's workers is inside a group's producer
// side (a plain thread or the RunBlocking pool still finishing a wake-up whose fiber
// has already run). TerminateRuntime() calls it once no fiber is live, before it frees
// the groups.
void WaitForForeignProducers();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FOREIGN_PRODUCERS_H_
