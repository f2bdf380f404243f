// Copyright 2026 The Spindle Authors.
//
// The hog monitor's rounds and its stack capture (see hog_monitor.h).
//
// The capture is one request at a time (one monitor per process at a time; reports are
// rare), in one static slot whose state word carries a generation (each request's own)
// beside the step: Idle, Requested, Capturing, Done.
//   monitor: fills the request, stores (gen, Requested) (release), pthread_sigqueue()
//            with gen in the signal's value;
//   handler: on the target thread, CAS (gen, Requested) -> (gen, Capturing) (acquire),
//            reads, stores (gen, Done) (release). A signal of an earlier generation
//            (one whose request was taken back) fails the CAS and does nothing;
//   monitor: waits for (gen, Done) (acquire) up to kCaptureWait; if the handler has not
//            begun, takes the request back by CAS (gen, Requested) -> (gen, Idle); if it
//            has, waits for Done (the walk is bounded).
// The handler is installed once per process, when the first runtime starts with reports
// on, and stays (SA_ONSTACK: it runs on the worker's alternate signal stack, not on the
// fiber's, which may be near its guard page); a SIGURG that is not ours (another sender,
// code or value) goes to the handler that was installed before ours. Only a thread the
// kernel shows running (state R) is signalled: one blocked in a system call is reported
// as such, without a stack, so a hog's sleep(3) or poll(2) never sees EINTR from us.

#include "runtime/internal/hog_monitor.h"

#include <signal.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/stack_allocator.h"
#include "glog/logging.h"
#include "runtime/internal/observability/fiber_dump.h"
#include "runtime/internal/base/metrics.h"
#include "runtime/internal/queues/global_run_queue.h"

namespace spindle::internal {
namespace {

constexpr int kCaptureSignal = SIGURG;
constexpr std::size_t kMaxFrames = 64;
// How long a report waits for the worker's thread to run the handler (it was seen
// running, so it takes the signal at once unless the machine is overloaded).
constexpr std::chrono::milliseconds kCaptureWait{200};
// A signal value of ours: this tag in the high half, the request's generation below.
constexpr int kValueTag = 0x5b1d0000;
constexpr int kValueTagMask = static_cast<int>(0xffff0000u);

enum CaptureStep : std::uint32_t { kIdle, kRequested, kCapturing, kDone };
constexpr std::uint32_t Word(std::uint32_t generation, CaptureStep step) {
  return (generation << 2) | step;
}

struct CaptureSlot {
  std::atomic<std::uint32_t> state{Word(0, kIdle)};
  // The request: written by the monitor before (gen, Requested).
  pthread_t target{};
  const GroupStats* progress = nullptr;
  std::size_t worker = 0;
  std::uint64_t runs = 0;
  // The answer: written by the handler before (gen, Done).
  std::uint64_t fiber_id = 0;  // 0: the thread was not running a fiber
  bool same_run = false;       // the worker's progress was still `runs`
  std::size_t depth = 0;
  void* pcs[kMaxFrames] = {};
};

CaptureSlot g_capture;
std::uint32_t g_generation = 0;      // the monitor thread's
std::once_flag g_install_once;
struct sigaction g_previous_action;  // SIGURG's handler before ours (set once)

// The handler's reading, on the target thread. Allocates nothing and reads nothing
// outside the running fiber's stack; of the fiber, only fields that never change while
// it lives (its id, its stack).
void CaptureRunningFiber(const ucontext_t* context) {
  CaptureSlot& slot = g_capture;
  slot.same_run = slot.progress->RunProgress(slot.worker) == slot.runs;
  slot.depth = 0;
  slot.fiber_id = 0;
  const FiberEntity* fiber = GetCurrentFiberEntity();
  if (fiber == nullptr || fiber->is_master()) return;
  slot.fiber_id = fiber->id;
#if defined(__x86_64__)
  const auto pc = static_cast<std::uintptr_t>(context->uc_mcontext.gregs[REG_RIP]);
  const auto fp = static_cast<std::uintptr_t>(context->uc_mcontext.gregs[REG_RBP]);
  const auto sp = static_cast<std::uintptr_t>(context->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
  const auto pc = static_cast<std::uintptr_t>(context->uc_mcontext.pc);
  const auto fp = static_cast<std::uintptr_t>(context->uc_mcontext.regs[29]);
  const auto sp = static_cast<std::uintptr_t>(context->uc_mcontext.sp);
#else
#error "hog monitor: unknown signal context layout for this CPU"
#endif
  slot.pcs[slot.depth++] = reinterpret_cast<void*>(pc);
  const Stack& stack = fiber->stack();
  const auto low = reinterpret_cast<std::uintptr_t>(stack.base);
  const auto high = reinterpret_cast<std::uintptr_t>(stack.top()) - FiberControlBlockSize();
  // Interrupted on its own stack (not mid-switch, not in code that switched stacks).
  if (sp >= low && sp < high) {
    slot.depth += WalkFramePointers(sp, high, fp, slot.pcs + 1, kMaxFrames - 1);
  }
}

void ChainToPrevious(int signal, siginfo_t* info, void* context) {
  const struct sigaction& previous = g_previous_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0) {
    // SIG_DFL and SIG_IGN read as these addresses through the union's other member.
    const auto handler = reinterpret_cast<std::uintptr_t>(previous.sa_sigaction);
    if (handler != reinterpret_cast<std::uintptr_t>(SIG_DFL) &&
        handler != reinterpret_cast<std::uintptr_t>(SIG_IGN)) {
      previous.sa_sigaction(signal, info, context);
    }
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(signal);  // SIGURG's default action is to ignore it
  }
}

void OnCaptureSignal(int signal, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const bool ours = info != nullptr && info->si_code == SI_QUEUE && info->si_pid == getpid() &&
                    (info->si_value.sival_int & kValueTagMask) == kValueTag;
  if (!ours) {
    ChainToPrevious(signal, info, context);
    errno = saved_errno;
    return;
  }
  const auto generation = static_cast<std::uint32_t>(info->si_value.sival_int & 0xffff);
  std::uint32_t expected = Word(generation, kRequested);
  // acquire: pairs with the monitor's release store of (gen, Requested): the request's
  // fields are visible. A request taken back, or of another generation, is left alone.
  if (g_capture.state.compare_exchange_strong(expected, Word(generation, kCapturing),
                                              std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
    // The monitor sent it to the target thread; anything else is a forged value.
    if (pthread_equal(g_capture.target, pthread_self())) {
      CaptureRunningFiber(static_cast<const ucontext_t*>(context));
    } else {
      g_capture.fiber_id = 0;
      g_capture.depth = 0;
    }
    // release: pairs with the monitor's acquire load of Done.
    g_capture.state.store(Word(generation, kDone), std::memory_order_release);
  }
  errno = saved_errno;
}

void InstallCaptureHandler() {
  std::call_once(g_install_once, [] {
    struct sigaction action = {};
    action.sa_sigaction = &OnCaptureSignal;
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    PCHECK(sigaction(kCaptureSignal, &action, &g_previous_action) == 0)
        << "hog monitor: sigaction(SIGURG) failed";
  });
}

// The kernel's view of thread `tid`: its state letter (R running, S sleeping, D
// uninterruptible, ...; '?' if unknown) and, when blocked, the system call it waits in
// (-1 if unknown).
char ThreadState(int tid, long* syscall_number) {
  *syscall_number = -1;
  if (tid <= 0) return '?';
  const std::string base = "/proc/self/task/" + std::to_string(tid);
  char state = '?';
  if (FILE* stat = std::fopen((base + "/stat").c_str(), "re")) {
    char line[512];
    const std::size_t n = std::fread(line, 1, sizeof(line) - 1, stat);
    std::fclose(stat);
    line[n] = '\0';
    // "tid (name) S ...": the name may hold spaces or parentheses; the last ')' ends it.
    if (const char* close = std::strrchr(line, ')'); close != nullptr && close[1] == ' ') {
      state = close[2];
    }
  }
  if (state != 'R') {
    if (FILE* call = std::fopen((base + "/syscall").c_str(), "re")) {
      if (std::fscanf(call, "%ld", syscall_number) != 1) *syscall_number = -1;
      std::fclose(call);
    }
  }
  return state;
}

// The running fiber of `worker` (progress `runs`), read on its thread. False if the
// thread did not answer within kCaptureWait.
bool CaptureStack(const MonitoredWorker& worker, std::uint64_t runs) {
  CaptureSlot& slot = g_capture;
  const std::uint32_t generation = ++g_generation & 0xffff;
  slot.target = worker.thread;
  slot.progress = &worker.group->stats();
  slot.worker = worker.index;
  slot.runs = runs;
  slot.state.store(Word(generation, kRequested), std::memory_order_release);  // handler
  sigval value;
  value.sival_int = kValueTag | static_cast<int>(generation);
  std::uint32_t requested = Word(generation, kRequested);
  if (pthread_sigqueue(worker.thread, kCaptureSignal, value) != 0) {
    // Nobody will answer; relaxed: the slot is ours again.
    slot.state.compare_exchange_strong(requested, Word(generation, kIdle),
                                       std::memory_order_relaxed);
    return false;
  }
  const auto deadline = std::chrono::steady_clock::now() + kCaptureWait;
  // acquire: pairs with the handler's release store of Done (its answer is visible).
  while (slot.state.load(std::memory_order_acquire) != Word(generation, kDone)) {
    if (std::chrono::steady_clock::now() >= deadline) {
      requested = Word(generation, kRequested);
      // relaxed: a late handler then fails its CAS and leaves the slot alone.
      if (slot.state.compare_exchange_strong(requested, Word(generation, kIdle),
                                             std::memory_order_relaxed)) {
        return false;
      }
      // Capturing: the handler runs; its bounded walk ends soon.
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  slot.state.store(Word(generation, kIdle), std::memory_order_relaxed);  // ours again
  return true;
}

// The id of the fiber Running on `worker` now, from the fiber dump's walk (heavier than
// the signal: every stack is visited; only for a report whose signal was not sent or
// not answered); 0 if none is found.
std::uint64_t RunningFiberOn(const MonitoredWorker& worker) {
  for (const FiberSnapshot& fiber : SnapshotFibers()) {
    if (fiber.state == FiberState::kRunning &&
        fiber.group == static_cast<int>(worker.group->index()) &&
        fiber.worker == worker.index) {
      return fiber.id;
    }
  }
  return 0;
}

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

HogMonitor::HogMonitor(const HogMonitorOptions& options, std::vector<MonitoredWorker> workers)
    : options_(options), workers_(std::move(workers)), watches_(workers_.size()) {
  to_report_.reserve(workers_.size());
  std::chrono::milliseconds shorter = std::chrono::milliseconds::max();
  if (options_.report.count() > 0) shorter = std::min(shorter, options_.report);
  if (options_.rescue.count() > 0) shorter = std::min(shorter, options_.rescue);
  busy_period_ = std::clamp(shorter / 2, std::chrono::milliseconds(1),
                            std::chrono::milliseconds(100));
  idle_period_ = std::min(busy_period_ * 4, std::chrono::milliseconds(100));
  if (shorter == std::chrono::milliseconds::max()) return;  // both off: no thread
  if (options_.report.count() > 0) InstallCaptureHandler();
  thread_ = std::thread([this] { Run(); });
  // Started means running: the thread's own set-up (which allocates) is done before
  // the runtime's start returns, not in the middle of the caller's first work.
  set_up_.Wait();
}

HogMonitor::~HogMonitor() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
}

void HogMonitor::Run() {
  pthread_setname_np(pthread_self(), "spindle-hogmon");
  // Moved fibers spill to the shared queue's overflow list rather than wait for room.
  MarkThisThreadAsRuntimeThread(true);
  PrepareThisThreadCounters();
  set_up_.Set();  // the constructor waits for it
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    lock.unlock();
    const bool busy = Round(std::chrono::steady_clock::now());
    lock.lock();
    wake_.wait_for(lock, busy ? busy_period_ : idle_period_, [this] { return stopping_; });
  }
}

bool HogMonitor::Round(std::chrono::steady_clock::time_point now) {
  // A round far later than planned (the process was stopped, the machine paused, or
  // this thread starved): the workers' runs cannot be told from the gap, so every
  // watch starts again rather than report runs that merely spanned it.
  const bool gap = last_round_.time_since_epoch().count() != 0 &&
                   now - last_round_ > 4 * idle_period_ + std::chrono::milliseconds(50);
  last_round_ = now;
  bool any_busy = false;
  std::vector<std::size_t>& to_report = to_report_;  // reserved: a round allocates nothing
  to_report.clear();
  for (std::size_t i = 0; i < workers_.size(); ++i) {
    const MonitoredWorker& worker = workers_[i];
    Watch& watch = watches_[i];
    const std::uint64_t runs = worker.group->stats().RunProgress(worker.index);
    const bool idle = worker.group->busy_poll().InIdlePath(worker.index);
    if (gap || idle || runs != watch.runs) {
      // Moved on, or idle: a run is timed from the first round that sees it running
      // (so `held` below never overstates it, and understates it by at most a round);
      // hence nothing is kept from an idle round.
      watch = Watch{idle ? ~std::uint64_t{0} : runs, now, false};
      any_busy = any_busy || !idle;
      continue;
    }
    any_busy = true;
    const auto held = now - watch.since;
    if (options_.rescue.count() > 0 && held >= options_.rescue) {
      const std::size_t moved = worker.group->strategy()->RescueStalledWorker(worker.index);
      if (moved != 0) worker.group->stats().CountHogFibersMoved(moved);
    }
    if (options_.report.count() > 0 && held >= options_.report && !watch.reported) {
      watch.reported = true;
      to_report.push_back(i);
    }
  }
  // After every rescue of the round: a report may wait for a signal and symbolize.
  for (std::size_t i : to_report) {
    const MonitoredWorker& worker = workers_[i];
    worker.group->stats().CountHogReported();
    Report(worker, watches_[i].runs, now - watches_[i].since);
  }
  return any_busy;
}

void HogMonitor::Report(const MonitoredWorker& worker, std::uint64_t runs,
                        std::chrono::steady_clock::duration held) {
  FiberSnapshot fiber;
  fiber.state = FiberState::kRunning;
  fiber.group = static_cast<int>(worker.group->index());
  fiber.worker = static_cast<std::uint32_t>(worker.index);
  long syscall_number = -1;
  const int tid = worker.kernel_thread_id->load(std::memory_order_relaxed);
  const char state = ThreadState(tid, &syscall_number);
  const CaptureSlot& slot = g_capture;
  std::string why;
  bool look_up = true;  // the id from the dump's walk (no answer from the handler)
  if (state != 'R' && state != '?') {
    // Blocked in the kernel: a signal would only interrupt its system call.
    why = std::string("its thread is blocked in the kernel (state ") + state +
          (syscall_number >= 0 ? ", system call " + std::to_string(syscall_number) : "") +
          "), so it was not interrupted";
  } else if (!CaptureStack(worker, runs)) {
    why = "the worker's thread did not take the stack signal within " +
          std::to_string(kCaptureWait.count()) + " ms";
  } else if (!slot.same_run || slot.fiber_id == 0) {
    why = "it switched before the stack signal arrived";
    look_up = false;  // another fiber runs there now
  } else {
    fiber.id = slot.fiber_id;
    fiber.pcs.assign(slot.pcs, slot.pcs + slot.depth);
    look_up = false;
  }
  if (look_up) fiber.id = RunningFiberOn(worker);
  fiber.seconds_in_state = Seconds(held);
  std::ostringstream text;
  text << "Spindle: ";
  if (fiber.id != 0) {
    text << "fiber " << fiber.id;
  } else {
    text << "a fiber";
  }
  text << " has run on worker " << worker.index << " of scheduling group "
       << worker.group->index() << " for " << Seconds(held)
       << " s without switching (--fiber_hog_report_ms=" << options_.report.count()
       << "): it computes, or blocks its thread in a system call. Spindle does not "
          "preempt fibers; the fibers queued behind it go to its sibling workers";
  if (options_.rescue.count() == 0) text << " only when they are idle (--fiber_hog_rescue_ms=0)";
  text << ". Reported once per run.";
  if (!why.empty()) text << " Its stack was not captured: " << why << ".";
  if (fiber.id != 0) {
    text << "\n";
    WriteFiberBlock(text, fiber);
  }
  LOG(WARNING) << text.str();
}

}  // namespace spindle::internal
