// Copyright 2026 The Spindle Authors.
//
// Turns a fiber's stack overflow into a clear message. A fiber that runs past its stack
// touches the PROT_NONE guard page below it; the kernel raises SIGSEGV on that very
// fiber's thread, whose stack is exhausted, so the handler runs on an alternate signal
// stack. It asks a query function (registered by the fiber layer) whether the faulting
// address lies in the guard page of the fiber running on this thread; if so it prints
// "fiber stack overflow" with the fiber id and aborts. Any other fault is passed on to
// the handler that was installed before ours (or the default action).

#ifndef SPINDLE_FIBER_INTERNAL_STACK_OVERFLOW_H_
#define SPINDLE_FIBER_INTERNAL_STACK_OVERFLOW_H_

#include <cstddef>
#include <cstdint>

namespace spindle::internal {

// Describes the stack running on the calling thread, if it has a guard page. Must be
// async-signal-safe: it is called from the SIGSEGV handler.
struct GuardedStackInfo {
  const char* guard_begin = nullptr;  // the guard page: [guard_begin, guard_end)
  const char* guard_end = nullptr;
  std::uint64_t fiber_id = 0;
  std::size_t stack_size = 0;
};
using GuardQuery = bool (*)(GuardedStackInfo* info);

// Installs the SIGSEGV handler (once per process; later calls only update the query).
// Thread-safe.
void InstallStackOverflowHandler(GuardQuery query);

// Gives the calling thread an alternate signal stack if it has none, so the handler can
// run after the thread's fiber stack is exhausted. Freed when the thread exits.
void EnsureAlternateSignalStack();

// Formats the overflow message into `buffer` (for tests and the handler); returns its
// length. Async-signal-safe.
std::size_t FormatStackOverflowMessage(const GuardedStackInfo& info,
                                       const void* fault_address, char* buffer,
                                       std::size_t buffer_size);

// Formats the message for an overflow found at a switch on a stack without a guard page
// (`how`: what gave it away). Async-signal-safe.
std::size_t FormatCanaryOverflowMessage(std::uint64_t fiber_id, std::size_t stack_size,
                                        const char* how, char* buffer,
                                        std::size_t buffer_size);

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_STACK_OVERFLOW_H_
