// Copyright 2026 The Spindle Authors.
//
// The atomics seam of the model checker. The wake-up protocols (the parker and the
// wait slot, the notifiers, ...) declare their shared words as Atomic<T> and order
// them with AtomicFence(). In every build of the runtime these are std::atomic<T> and
// std::atomic_thread_fence, an alias and an inline call: the generated code is the
// code std::atomic gives. In a model build (SPINDLE_MODEL_CHECK, defined only by
// //fiber/internal:model_testing, which every model test depends on) they are
// Relacy's atomics, whose every operation is a point where the checker may switch
// threads and whose memory orders it models (model_atomic.h), so the same protocol
// source is what the models check. The locks of that code (Spinlock, OsMutex) are
// Relacy's mutexes there too.
//
// Only protocol code that a model compiles uses Atomic<T>; the rest of the tree keeps
// std::atomic. A model binary must not also link that protocol code built the normal
// way (the two would define the same inline functions differently).

#ifndef SPINDLE_FIBER_INTERNAL_ATOMIC_H_
#define SPINDLE_FIBER_INTERNAL_ATOMIC_H_

#ifdef SPINDLE_MODEL_CHECK
#include "fiber/internal/model_atomic.h"
#else
#include <atomic>

namespace spindle::internal {

template <class T>
using Atomic = std::atomic<T>;

inline void AtomicFence(std::memory_order order) { std::atomic_thread_fence(order); }

}  // namespace spindle::internal
#endif

#endif  // SPINDLE_FIBER_INTERNAL_ATOMIC_H_
