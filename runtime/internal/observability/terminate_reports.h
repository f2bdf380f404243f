// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TERMINATE_REPORTS_H_
#define SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TERMINATE_REPORTS_H_

#include <string>

namespace spindle::internal {

// What components above the scheduler add to TerminateRuntime()'s log of the fibers it
// still waits for: io's blocking pool says which of its calls run and for how long, so
// a fiber parked behind a hung blocking call is named as such. A report returns one
// line, or "" when it has nothing to say.
//
// Thread-safety: both from any thread. Reports are never removed (their owners live as
// long as the process).
using TerminateReport = std::string (*)();
void AddTerminateReport(TerminateReport report);  // the same report twice: once
// Every report's line, each ending in a newline; "" if none has anything to say.
std::string CollectTerminateReports();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_OBSERVABILITY_TERMINATE_REPORTS_H_
