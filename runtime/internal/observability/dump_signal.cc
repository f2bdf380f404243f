// Copyright 2026 The Spindle Authors.
//
// The dump signal: the handler writes 'd' to a pipe, a listener thread reads the pipe
// and dumps. The pipe is created once and never closed, so a handler running late on
// another thread (after the disposition was restored) still writes to a valid
// descriptor; its byte is read by the next listener or stays in the pipe. 'q' stops
// the listener.

#include "runtime/internal/observability/dump_signal.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "glog/logging.h"

namespace spindle::internal {
namespace {

// Written once before the handler is installed, read by the handler. relaxed loads
// there: sigaction() orders the store before any delivery of the signal.
std::atomic<int> g_pipe_write{-1};
int g_pipe_read = -1;
int g_signal = 0;
struct sigaction g_previous;
std::thread* g_listener = nullptr;
std::atomic<std::uint64_t> g_dumps_written{0};

void OnDumpSignal(int) {
  const int saved_errno = errno;
  const int fd = g_pipe_write.load(std::memory_order_relaxed);  // relaxed: see above
  const char byte = 'd';
  if (fd >= 0) (void)!write(fd, &byte, 1);  // a full pipe drops the request: fine
  errno = saved_errno;
}

void EnsurePipe() {
  if (g_pipe_read >= 0) return;
  int fds[2];
  PCHECK(pipe2(fds, O_CLOEXEC) == 0) << "--fiber_dump_signal: pipe2 failed";
  // The write end never blocks the handler.
  PCHECK(fcntl(fds[1], F_SETFL, O_NONBLOCK) == 0);
  g_pipe_read = fds[0];
  g_pipe_write.store(fds[1], std::memory_order_relaxed);  // relaxed: see the declaration
}

}  // namespace

void StartDumpSignalListener(int signal, std::function<void()> dump) {
  if (signal == 0) return;
  CHECK(g_listener == nullptr) << "dump signal listener started twice";
  EnsurePipe();
  g_listener = new std::thread([dump = std::move(dump)] {
    for (;;) {
      char byte = 0;
      const ssize_t n = read(g_pipe_read, &byte, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || byte == 'q') return;
      dump();
      // release: a test that sees the count also sees the dump's output.
      g_dumps_written.fetch_add(1, std::memory_order_release);
    }
  });
  struct sigaction action = {};
  action.sa_handler = &OnDumpSignal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  PCHECK(sigaction(signal, &action, &g_previous) == 0)
      << "--fiber_dump_signal=" << signal << ": sigaction failed";
  g_signal = signal;
}

void StopDumpSignalListener() {
  if (g_listener == nullptr) return;
  sigaction(g_signal, &g_previous, nullptr);
  const char byte = 'q';
  // The pipe is almost surely empty; if a burst of signals filled it, retry.
  while (write(g_pipe_write.load(std::memory_order_relaxed), &byte, 1) != 1) {
    std::this_thread::yield();
  }
  g_listener->join();
  delete g_listener;
  g_listener = nullptr;
  g_signal = 0;
}

std::uint64_t DumpSignalDumpsWritten() {
  return g_dumps_written.load(
      std::memory_order_acquire);  // acquire: pairs with the listener
}

}  // namespace spindle::internal
