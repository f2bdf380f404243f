// Copyright 2026 The Spindle Authors.
//
// The C++ runtime's exception-handling state of the calling thread: the chain of
// exceptions being handled (caught, their catch blocks not yet left) and the count of
// exceptions thrown and not yet caught (std::uncaught_exceptions()). The Itanium C++ ABI,
// which g++ and clang use on Linux (libstdc++'s libsupc++ and libc++abi alike), keeps it
// per thread in `__cxa_eh_globals`, reached through `__cxa_get_globals()`. A fiber that
// parks inside a catch block, or in a destructor run by unwinding, must take its part
// of that state with it, or the next fiber on the thread sees (and may release) its
// exceptions. FiberEntity's switch saves and restores it; see fiber_entity.cc.

#ifndef SPINDLE_FIBER_INTERNAL_EXCEPTION_STATE_H_
#define SPINDLE_FIBER_INTERNAL_EXCEPTION_STATE_H_

namespace spindle::internal {

#if defined(__ARM_EABI_UNWINDER__)
#error "32-bit ARM EHABI keeps a third field in __cxa_eh_globals; not supported"
#endif

// Mirrors the ABI's `__cxa_eh_globals` on the platforms above (two fields, in this
// order; cxxabi.h declares the type but does not define it).
struct ExceptionState {
  void* caught_exceptions = nullptr;    // __cxa_exception*: top of the caught chain
  unsigned int uncaught_exceptions = 0;  // thrown, not yet caught
};

// The calling thread's live state. Never cache the pointer across a fiber switch: the
// fiber may resume on another thread (the call is opaque to the optimizer for that
// reason; __cxa_get_globals() itself is declared const, so calls to it may be merged).
ExceptionState* ThisThreadExceptionState();

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_EXCEPTION_STATE_H_
