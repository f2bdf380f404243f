// Copyright 2026 The Spindle Authors.
//
// What an event source above the scheduler (io/'s reactor) may ask of it, and all it
// may ask: the scheduler's side of GroupPoller (idle/group_poller.h). A group's poller
// is attached once (the reactor, on its first registration), and the scheduler then
// runs it from its idle path and busy poll; the poller's owner asks only, per group by
// index, whether it is attached and that someone poll it now. It reaches no group,
// strategy or runtime object, so the scheduler's insides can change without io.
//
// Thread-safety: every function from any thread while a runtime runs (between
// StartRuntime and TerminateRuntime).

#ifndef SPINDLE_RUNTIME_INTERNAL_POLLER_HOST_H_
#define SPINDLE_RUNTIME_INTERNAL_POLLER_HOST_H_

#include <cstddef>

#include "runtime/internal/idle/group_poller.h"

namespace spindle::internal {

// The running runtime's number of scheduling groups; group indices are [0, count).
std::size_t PollerHostGroupCount();

// The index of the group the calling fiber belongs to. Only from a fiber of a group
// (a fiber of the runtime, not a plain thread).
std::size_t PollerHostCurrentGroup();

// Makes `poller` the poller of group `group` (< PollerHostGroupCount()) unless it is
// already; the scheduler then polls it when a worker would sleep, and calls its
// Interrupt() to wake one that sleeps in it. `poller` lives as long as the process.
void AttachPoller(std::size_t group, GroupPoller* poller);

// Whether `poller` is the poller of the running runtime's group `group` (false for an
// index past the groups: a runtime with fewer groups than the one it registered under).
bool IsAttachedPoller(std::size_t group, const GroupPoller* poller);

// Called by a fiber about to park on the poller's events: if nobody holds group
// `group`'s poller token while its poller has interest, wakes a sleeping worker of the
// group to poll (breaks its idle sleep), so the event the fiber waits for is seen.
void EnsurePollerAwake(std::size_t group);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_POLLER_HOST_H_
