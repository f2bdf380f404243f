// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_DUMP_SIGNAL_H_
#define SPINDLE_RUNTIME_INTERNAL_DUMP_SIGNAL_H_

#include <cstdint>
#include <functional>

namespace spindle::internal {

// Makes `signal` (--fiber_dump_signal) call `dump` on a listener thread: the handler
// only writes one byte to a pipe (async-signal-safe); the thread reads it and runs
// `dump`, which need not be async-signal-safe. Called by StartRuntime() (signal 0 does
// nothing); StopDumpSignalListener() by TerminateRuntime() restores the previous
// disposition and joins the thread. Not thread-safe: the runtime's start and stop
// calls only.
void StartDumpSignalListener(int signal, std::function<void()> dump);
void StopDumpSignalListener();

// Dumps the listener has finished since the process started (for tests). Thread-safe.
std::uint64_t DumpSignalDumpsWritten();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_DUMP_SIGNAL_H_
