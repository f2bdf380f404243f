// Copyright 2026 The Spindle Authors.

#include "fiber/internal/trace.h"

#include <pthread.h>
#include <unistd.h>

#include <memory>
#include <mutex>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/os_mutex.h"

namespace spindle::internal {

std::atomic<bool> g_trace_on{false};

namespace {

// One thread's buffer: written by its thread only, read by StopTraceWindow().
struct ThreadBuffer {
  std::string name;
  int tid = 0;
  // The window its records belong to: written by its thread, read by Stop (relaxed:
  // ordered by `size`, see TraceRecordNow()).
  std::atomic<std::uint64_t> window{0};
  std::unique_ptr<TraceRecord[]> records;
  std::size_t capacity = 0;
  std::atomic<std::size_t> size{0};  // published records
  std::atomic<std::uint64_t> dropped{0};
  std::atomic<std::uint64_t> first_drop{0};
};

OsMutex g_control;  // serializes Start and Stop
// Every buffer ever made (a thread's outlives it: its last window may still be read);
// guarded by g_buffers_lock, taken by a thread once per window (its first record).
OsMutex g_buffers_lock;
std::vector<ThreadBuffer*>* g_buffers = new std::vector<ThreadBuffer*>;  // never freed
// The open window's number and buffer size; written by Start before it sets the flag
// (release), read by recorders after they saw it (their acquire in TraceRecordNow).
std::atomic<std::uint64_t> g_window{0};
std::atomic<std::size_t> g_capacity{0};

thread_local ThreadBuffer* tls_buffer = nullptr;

ThreadBuffer* BufferForThisThread() {
  ThreadBuffer* buffer = tls_buffer;
  if (buffer == nullptr) {
    buffer = new ThreadBuffer;
    char name[32] = {};
    pthread_getname_np(pthread_self(), name, sizeof(name));
    buffer->name = name;
    buffer->tid = static_cast<int>(gettid());
    OsMutexGuard lock(g_buffers_lock);
    g_buffers->push_back(buffer);
    tls_buffer = buffer;
  }
  return buffer;
}

}  // namespace

// Not for a fiber's hot path when off (TraceOn() is); reads the thread-local once and
// never switches, so it cannot keep another thread's buffer (switch_safe_tls.h).
__attribute__((noinline)) void TraceRecordNow(TraceKind kind, std::uint64_t a,
                                              std::uint64_t b, std::uint32_t c) {
  // acquire: pairs with StartTraceWindow()'s release of the window and capacity.
  const std::uint64_t window = g_window.load(std::memory_order_acquire);
  ThreadBuffer* buffer = BufferForThisThread();
  if (buffer->window.load(std::memory_order_relaxed) != window) {
    // The thread's first record of this window: start afresh (only we write it; Stop
    // of the last window has returned, see the file comment).
    const std::size_t capacity = g_capacity.load(std::memory_order_relaxed);
    if (buffer->capacity != capacity) {
      buffer->records.reset(new TraceRecord[capacity]);
      buffer->capacity = capacity;
    }
    buffer->dropped.store(0, std::memory_order_relaxed);
    buffer->first_drop.store(0, std::memory_order_relaxed);
    buffer->size.store(0, std::memory_order_relaxed);
    // relaxed: a reader acquires `size` first, which our first record publishes after
    // this store.
    buffer->window.store(window, std::memory_order_relaxed);
  }
  const std::uint64_t now = CycleClockNow();
  const std::size_t size = buffer->size.load(std::memory_order_relaxed);  // ours only
  if (size == buffer->capacity) {
    if (buffer->dropped.fetch_add(1, std::memory_order_relaxed) == 0) {  // relaxed: ours
      buffer->first_drop.store(now, std::memory_order_relaxed);
    }
    return;
  }
  buffer->records[size] = TraceRecord{now, a, b, c, kind};
  // release: the record is written before a reader that sees the count reads it.
  buffer->size.store(size + 1, std::memory_order_release);
}

bool StartTraceWindow(std::size_t records_per_thread) {
  OsMutexGuard control(g_control);
  if (g_trace_on.load(std::memory_order_relaxed)) return false;
  g_capacity.store(records_per_thread, std::memory_order_relaxed);
  // release: a recorder that acquires the new window sees the capacity.
  g_window.fetch_add(1, std::memory_order_release);
  g_trace_on.store(true, std::memory_order_release);  // release: as above
  return true;
}

bool TraceWindowOpen() { return g_trace_on.load(std::memory_order_acquire); }

std::vector<TraceThreadLog> StopTraceWindow() {
  OsMutexGuard control(g_control);
  std::vector<TraceThreadLog> logs;
  if (!g_trace_on.load(std::memory_order_relaxed)) return logs;
  g_trace_on.store(false, std::memory_order_release);
  const std::uint64_t window = g_window.load(std::memory_order_relaxed);
  OsMutexGuard lock(g_buffers_lock);
  for (ThreadBuffer* buffer : *g_buffers) {
    // acquire: pairs with the owner's release of the count; a buffer still on an
    // older window has nothing of this one.
    const std::size_t size = buffer->size.load(std::memory_order_acquire);
    if (buffer->window.load(std::memory_order_relaxed) != window || size == 0) continue;
    TraceThreadLog log;
    log.name = buffer->name;
    log.tid = buffer->tid;
    log.records.assign(buffer->records.get(), buffer->records.get() + size);
    log.dropped = buffer->dropped.load(std::memory_order_relaxed);
    log.first_drop = buffer->first_drop.load(std::memory_order_relaxed);
    logs.push_back(std::move(log));
  }
  return logs;
}

}  // namespace spindle::internal
