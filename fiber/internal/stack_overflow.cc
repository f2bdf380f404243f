// Copyright 2026 The Spindle Authors.

#include "fiber/internal/stack_overflow.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "glog/logging.h"

namespace spindle::internal {
namespace {

// acquire/release: the handler loads the query registered by the installer; release
// store in InstallStackOverflowHandler(), acquire load in the handler.
std::atomic<GuardQuery> g_query{nullptr};
struct sigaction g_previous_action;  // written once, before the handler is installed

// Appends `text` to [*out, end). Async-signal-safe.
void Append(char** out, char* end, const char* text) {
  while (*text != '\0' && *out < end) *(*out)++ = *text++;
}

void AppendNumber(char** out, char* end, std::uint64_t value, int base) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value % base];
    value /= base;
  } while (value != 0);
  if (base == 16) Append(out, end, "0x");
  while (n > 0 && *out < end) *(*out)++ = digits[--n];
}

void OnSegv(int signo, siginfo_t* info, void* context) {
  GuardedStackInfo stack;
  // acquire: pairs with the release store in InstallStackOverflowHandler().
  const GuardQuery query = g_query.load(std::memory_order_acquire);
  const char* address = static_cast<const char*>(info->si_addr);
  if (query != nullptr && query(&stack) && address >= stack.guard_begin &&
      address < stack.guard_end) {
    char message[256];
    const std::size_t length =
        FormatStackOverflowMessage(stack, address, message, sizeof(message));
    ssize_t ignored = write(STDERR_FILENO, message, length);
    (void)ignored;
    std::abort();
  }
  // Not ours: hand the fault to whoever was there before. Restoring the previous
  // action and returning re-executes the faulting instruction under it.
  if (g_previous_action.sa_flags & SA_SIGINFO) {
    if (g_previous_action.sa_sigaction != nullptr) {
      g_previous_action.sa_sigaction(signo, info, context);
      return;
    }
  } else if (g_previous_action.sa_handler != SIG_DFL &&
             g_previous_action.sa_handler != SIG_IGN) {
    g_previous_action.sa_handler(signo);
    return;
  }
  signal(SIGSEGV, SIG_DFL);
}

struct AlternateStack {
  void* memory = nullptr;
  ~AlternateStack() {
    if (memory == nullptr) return;
    stack_t disable{};
    disable.ss_flags = SS_DISABLE;
    sigaltstack(&disable, nullptr);
    std::free(memory);
  }
};

}  // namespace

std::size_t FormatStackOverflowMessage(const GuardedStackInfo& info,
                                       const void* fault_address, char* buffer,
                                       std::size_t buffer_size) {
  char* out = buffer;
  char* const end = buffer + buffer_size;
  Append(&out, end, "fiber stack overflow: fiber ");
  AppendNumber(&out, end, info.fiber_id, 10);
  Append(&out, end, " ran past its ");
  AppendNumber(&out, end, info.stack_size, 10);
  Append(&out, end, "-byte stack (fault at ");
  AppendNumber(&out, end, reinterpret_cast<std::uintptr_t>(fault_address), 16);
  Append(&out, end, " in the guard page); raise --fiber_stack_size\n");
  return static_cast<std::size_t>(out - buffer);
}

std::size_t FormatCanaryOverflowMessage(std::uint64_t fiber_id, std::size_t stack_size,
                                        const char* how, char* buffer,
                                        std::size_t buffer_size) {
  char* out = buffer;
  char* const end = buffer + buffer_size;
  Append(&out, end, "fiber stack overflow: fiber ");
  AppendNumber(&out, end, fiber_id, 10);
  Append(&out, end, " ran past its ");
  AppendNumber(&out, end, stack_size, 10);
  Append(&out, end, "-byte stack (no guard page; found when it switched: ");
  Append(&out, end, how);
  Append(&out, end, "); raise --fiber_stack_size\n");
  return static_cast<std::size_t>(out - buffer);
}

void InstallStackOverflowHandler(GuardQuery query) {
  // Called for every new guarded fiber: the common case is one acquire load.
  static std::atomic<GuardQuery> installed{nullptr};
  // acquire: pairs with the release store below; the handler and the thread's
  // alternate stack were set up by then.
  if (installed.load(std::memory_order_acquire) == query) {
    EnsureAlternateSignalStack();
    return;
  }
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_sigaction = OnSegv;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    PCHECK(sigaction(SIGSEGV, &action, &g_previous_action) == 0);
  });
  // release: pairs with the acquire load in OnSegv().
  g_query.store(query, std::memory_order_release);
  EnsureAlternateSignalStack();
  installed.store(query, std::memory_order_release);  // release: see the load above
}

void EnsureAlternateSignalStack() {
  thread_local AlternateStack alternate;
  thread_local bool checked = false;
  if (checked) return;
  checked = true;
  stack_t current{};
  if (sigaltstack(nullptr, &current) == 0 && !(current.ss_flags & SS_DISABLE)) {
    return;  // the thread already has one (ASan installs its own)
  }
  const long min_size = sysconf(_SC_SIGSTKSZ);
  const std::size_t size =
      std::max<std::size_t>(64 * 1024, min_size > 0 ? static_cast<std::size_t>(min_size)
                                                    : 0);
  alternate.memory = std::malloc(size);
  CHECK(alternate.memory != nullptr) << "out of memory for an alternate signal stack";
  stack_t stack{};
  stack.ss_sp = alternate.memory;
  stack.ss_size = size;
  PCHECK(sigaltstack(&stack, nullptr) == 0);
}

}  // namespace spindle::internal
