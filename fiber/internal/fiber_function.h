// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_FIBER_FUNCTION_H_
#define SPINDLE_FIBER_INTERNAL_FIBER_FUNCTION_H_

#include <cstddef>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"

namespace spindle::internal {

// What a fiber runs: a move-only callable taking no arguments, type-erased. Built for
// the spawn path, which moves a fiber's function from the caller into its descriptor and
// on into its control block, and destroys it when it returns. absl::AnyInvocable does
// that with an indirect call into a manager function for every move and every
// destruction, empty or not, and keeps only 16 bytes inline, so a lambda capturing four
// words goes to the heap on every spawn.
//
// A callable that can be null (a null function pointer, an empty std::function or
// absl::AnyInvocable) makes an empty FiberFunction, which the start paths reject with
// an error naming it, rather than a fiber that crashes when it runs.
//
// Here a callable of up to kInlineSize bytes that is trivially copyable and trivially
// destructible (a lambda capturing references, pointers and numbers: the common case) is
// stored inline with no manager at all: a move copies the buffer, destruction forgets it.
// Other callables that fit and move without throwing are stored inline with a manager
// for their moves and their destruction; larger ones on the heap (moving one copies the
// pointer). Not thread-safe; an owned value like any other.
class FiberFunction {
 public:
  static constexpr std::size_t kInlineSize = 32;

  FiberFunction() noexcept = default;
  FiberFunction(std::nullptr_t) noexcept {}  // NOLINT: an empty function, as nullptr
  template <class F, class D = std::decay_t<F>,
            std::enable_if_t<!std::is_same_v<D, FiberFunction> &&
                                 !std::is_same_v<D, std::nullptr_t> &&
                                 std::is_invocable_r_v<void, D&>,
                             int> = 0>
  FiberFunction(F&& f) {  // NOLINT: implicit, like std::function's
    Construct<D>(std::forward<F>(f));
  }
  FiberFunction(FiberFunction&& other) noexcept { MoveFrom(other); }
  FiberFunction& operator=(FiberFunction&& other) noexcept {
    if (this != &other) {
      Reset();
      MoveFrom(other);
    }
    return *this;
  }
  FiberFunction& operator=(std::nullptr_t) noexcept {
    Reset();
    return *this;
  }
  template <class F, class D = std::decay_t<F>,
            std::enable_if_t<!std::is_same_v<D, FiberFunction> &&
                                 !std::is_same_v<D, std::nullptr_t> &&
                                 std::is_invocable_r_v<void, D&>,
                             int> = 0>
  FiberFunction& operator=(F&& f) {
    // Built first: `f` may refer into the function it replaces, and building may throw.
    return *this = FiberFunction(std::forward<F>(f));
  }
  FiberFunction(const FiberFunction&) = delete;
  FiberFunction& operator=(const FiberFunction&) = delete;
  ~FiberFunction() { Reset(); }

  explicit operator bool() const noexcept { return invoke_ != nullptr; }
  // Calls the function (which must not be empty).
  void operator()() { invoke_(storage_); }

  // Whether a callable of type D is stored inline, and whether without a manager
  // (exposed for tests).
  template <class D>
  static constexpr bool kStoredInline = sizeof(D) <= kInlineSize &&
                                        alignof(D) <= alignof(std::max_align_t) &&
                                        std::is_nothrow_move_constructible_v<D>;
  template <class D>
  static constexpr bool kTrivial = kStoredInline<D> && std::is_trivially_copyable_v<D> &&
                                   std::is_trivially_destructible_v<D>;

 private:
  enum class Op { kMove, kDestroy };
  using Invoke = void (*)(void* storage);
  // kMove: moves the callable from `from` into `to` (raw storage) and destroys it in
  // `from`. kDestroy: destroys it in `from`.
  using Manage = void (*)(Op op, void* from, void* to) noexcept;

  // Whether a D can be null, and is: what std::function's constructor treats as empty.
  template <class D>
  struct IsNullable : std::bool_constant<std::is_pointer_v<D> || std::is_member_pointer_v<D>> {};
  template <class Signature>
  struct IsNullable<std::function<Signature>> : std::true_type {};
  template <class Signature>
  struct IsNullable<absl::AnyInvocable<Signature>> : std::true_type {};
  template <class D>
  static bool IsNull(const D& f) {
    if constexpr (IsNullable<D>::value) {
      return !f;
    } else {
      return false;
    }
  }

  template <class D, class F>
  void Construct(F&& f) {
    if (IsNull<D>(f)) return;  // empty, as `f` is
    if constexpr (kStoredInline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      invoke_ = [](void* storage) { (*std::launder(static_cast<D*>(storage)))(); };
      if constexpr (!kTrivial<D>) {
        manage_ = [](Op op, void* from, void* to) noexcept {
          D* source = std::launder(static_cast<D*>(from));
          if (op == Op::kMove) ::new (to) D(std::move(*source));
          source->~D();
        };
      }
    } else {
      D* heap = new D(std::forward<F>(f));
      std::memcpy(storage_, &heap, sizeof(heap));
      invoke_ = [](void* storage) {
        D* callable;
        std::memcpy(&callable, storage, sizeof(callable));
        (*callable)();
      };
      manage_ = [](Op op, void* from, void* to) noexcept {
        if (op == Op::kMove) {
          std::memcpy(to, from, sizeof(D*));  // the pointer moves; `from` is forgotten
          return;
        }
        D* callable;
        std::memcpy(&callable, from, sizeof(callable));
        delete callable;
      };
    }
  }
  void MoveFrom(FiberFunction& other) noexcept {
    if (other.manage_ == nullptr) {
      std::memcpy(storage_, other.storage_, kInlineSize);  // trivial: the bytes are it
    } else {
      other.manage_(Op::kMove, other.storage_, storage_);
    }
    invoke_ = other.invoke_;
    manage_ = other.manage_;
    other.invoke_ = nullptr;
    other.manage_ = nullptr;
  }
  void Reset() noexcept {
    if (manage_ != nullptr) manage_(Op::kDestroy, storage_, nullptr);
    invoke_ = nullptr;
    manage_ = nullptr;
  }

  // Zeroed: a move copies all of it, also the bytes a smaller callable leaves unused.
  alignas(std::max_align_t) unsigned char storage_[kInlineSize] = {};
  Invoke invoke_ = nullptr;
  Manage manage_ = nullptr;  // null: empty, or trivially copyable and destructible
};

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_FIBER_FUNCTION_H_
