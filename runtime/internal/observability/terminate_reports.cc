// Copyright 2026 The Spindle Authors.

#include "runtime/internal/observability/terminate_reports.h"

#include <algorithm>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/os_mutex.h"

namespace spindle::internal {
namespace {

struct Reports {
  OsMutex mutex;
  std::vector<TerminateReport> reports ABSL_GUARDED_BY(mutex);
};

Reports& GetReports() {
  static Reports* reports = new Reports;  // used until the process exits: never freed
  return *reports;
}

}  // namespace

void AddTerminateReport(TerminateReport report) {
  Reports& r = GetReports();
  OsMutexGuard lock(r.mutex);
  if (std::find(r.reports.begin(), r.reports.end(), report) == r.reports.end()) {
    r.reports.push_back(report);
  }
}

std::string CollectTerminateReports() {
  std::vector<TerminateReport> reports;
  {
    Reports& r = GetReports();
    OsMutexGuard lock(r.mutex);
    reports = r.reports;
  }
  std::string text;
  // Outside the lock: a report takes its own component's locks.
  for (TerminateReport report : reports) {
    std::string line = report();
    if (line.empty()) continue;
    text += line;
    text += '\n';
  }
  return text;
}

}  // namespace spindle::internal
