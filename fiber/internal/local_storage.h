// Copyright 2026 The Spindle Authors.
//
// The engine under FiberLocal<T> (fiber/fiber_local.h) and ExecutionLocal<T>
// (fiber/execution_context.h): keys, the type-erased boxes that hold values, and the
// per-fiber slot table that lives in each fiber's control block.
//
// A value lives in a LocalBox, a header followed by the value, allocated on first use.
// The header carries the box's own destroyer (so whoever ends the fiber or context can
// destroy values of types it never saw) and the generation of the key it was made for.
// A key is an (index, generation) pair: indices are reused once their FiberLocal is
// destroyed, generations never are, so a value left in a slot by a destroyed key is
// recognised as stale by the next owner of the index (which destroys or retires it)
// instead of being read as a value of the wrong type (pthread keys use sequence numbers
// for the same reason).

#ifndef SPINDLE_FIBER_INTERNAL_LOCAL_STORAGE_H_
#define SPINDLE_FIBER_INTERNAL_LOCAL_STORAGE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

#include "fiber/internal/deadline.h"
#include "fiber/internal/wait_types.h"

namespace spindle::internal {

class StopState;  // sync/internal/stop_state.h

// What an execution context (fiber/execution_context.h) asks of the interruptible waits
// made in it (sync/internal/timed_waiter.h): the cancellation that ends them and the
// deadline none of them outlasts. Owned by the context; read by the waits of the fibers
// and threads that run in it, while they do (the scope that entered it keeps it alive).
struct WaitLimits {
  StopState* stop = nullptr;  // never null in a context
  MonotonicDeadline deadline = MonotonicDeadline::None();
};

// A value's header. Lives as long as the value; destroyed (with the value) only through
// `destroy`.
struct LocalBox {
  void (*destroy)(LocalBox* self);
  std::uint64_t generation;
};

// A box holding a T, constructed with T's default constructor.
template <class T>
struct TypedLocalBox final : LocalBox {
  T value{};  // value-initialized: a FiberLocal<int> starts at 0

  explicit TypedLocalBox(std::uint64_t key_generation) : LocalBox{&Destroy, key_generation} {}
  static void Destroy(LocalBox* self) { delete static_cast<TypedLocalBox*>(self); }
};

// A key: where its values sit in each table, and which values are its own.
struct LocalKey {
  std::uint32_t index;
  std::uint64_t generation;  // never 0, never reused
};

// Which index space a key belongs to.
enum class LocalKeySpace { kFiber, kExecutionContext };

// Thread-safe. Takes the lowest free index of `space` with a new generation. The number
// of live keys of a space is not bounded, but each fiber (context) that uses a key pays
// a pointer per index below it: keys are meant to be few and long-lived (statics,
// members of long-lived objects).
LocalKey AllocateLocalKey(LocalKeySpace space);
// Thread-safe. Gives the index back; values made for the key stay where they are until
// their fiber or context ends (or the index's next owner finds them stale).
void FreeLocalKey(LocalKeySpace space, LocalKey key);

// The value slots of one fiber (or of a plain thread, through its master fiber): five
// inline (what keeps the control block in five cache lines: every spawn writes all of
// them), more in a heap array grown on demand. Owner only: the fiber that it belongs
// to, or the code that ends that fiber.
class FiberLocalStorage {
 public:
  static constexpr std::uint32_t kInlineSlots = 5;

  FiberLocalStorage() = default;
  ~FiberLocalStorage();  // the values must have been destroyed (DestroyValues())
  FiberLocalStorage(const FiberLocalStorage&) = delete;
  FiberLocalStorage& operator=(const FiberLocalStorage&) = delete;

  // The slot of `index`, growing the table if needed.
  LocalBox** Slot(std::uint32_t index) {
    if (index < kInlineSlots) return &inline_slots_[index];
    if (index - kInlineSlots < overflow_size_) return &overflow_[index - kInlineSlots];
    return GrowOverflow(index);
  }
  // Puts `box` in `*slot` (a slot of this storage), destroying the stale value that sat
  // there, if any.
  void Install(LocalBox** slot, LocalBox* box);
  // True when the storage holds no value and names no execution context: then moving
  // it aside costs nothing.
  bool empty() const { return live_ == 0 && execution_context_ == nullptr; }
  // Moves everything (values, table, context) to `to`, which must be empty and hold no
  // table; leaves this storage empty.
  void MoveTo(FiberLocalStorage* to);
  // Destroys every value, in passes, while destructors keep creating values (at most
  // kDestructorPasses passes; what is left after that is reported and leaked, as
  // pthread keys do). Also frees the overflow table. Runs the destructors on the
  // calling fiber.
  void DestroyValues(std::uint64_t fiber_id) {
    if (live_ != 0 || overflow_ != nullptr) DestroyValuesSlow(fiber_id);
  }

  // The execution context the fiber runs in (fiber/execution_context.h), not owned.
  void* execution_context() const { return execution_context_; }
  void set_execution_context(void* context) { execution_context_ = context; }
  // That context's limits (null: none), set with it.
  const WaitLimits* wait_limits() const { return wait_limits_; }
  void set_wait_limits(const WaitLimits* limits) { wait_limits_ = limits; }

  static constexpr int kDestructorPasses = 4;

 private:
  LocalBox** GrowOverflow(std::uint32_t index);
  void DestroyValuesSlow(std::uint64_t fiber_id);

  LocalBox* inline_slots_[kInlineSlots] = {};
  LocalBox** overflow_ = nullptr;  // slots kInlineSlots .. kInlineSlots+overflow_size_-1
  std::uint32_t overflow_size_ = 0;
  std::uint32_t live_ = 0;  // non-null slots
  void* execution_context_ = nullptr;
  const WaitLimits* wait_limits_ = nullptr;  // non-null only with execution_context_
};

// The fiber-local storage of the fiber running on the calling thread; on a plain thread,
// that of its master fiber (created on first use), so fiber-locals are thread-locals
// there. Defined with the entities (fiber_entity.cc), which own the current-fiber slot;
// out of line like GetCurrentFiberEntity(), and never to be cached across a switch.
FiberLocalStorage& CurrentFiberLocalStorage();

// CurrentWaitLimits(), the limits of the calling fiber's context, is declared in
// wait_types.h (for the light public headers) and defined in fiber_entity.cc.

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_LOCAL_STORAGE_H_
