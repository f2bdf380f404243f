// Copyright 2026 The Spindle Authors.
//
// spindle_bench: Spindle's main job. Runs every workload (benchmarks/workload.h) in turn
// with a live progress line on stderr, each checking its own result, then prints one
// row per workload and metric: the median over the repetitions, the range, the unit.
//
//   ./bazelw run -c opt //benchmarks:spindle_bench -- --flagfile=$PWD/configs/default.flags
//       [--workloads=a,b,...] [--repetitions=N] [--scale=X] [--format=table|json]
//
// Every runtime flag (--fiber_*) applies; a workload that needs a particular shape
// (pingpong: two groups of one worker; yield: one worker) overrides the worker flags
// while it runs. Exit status: 0 when every workload checked out, 1 when one computed a
// wrong result, 2 for a bad option or flag value.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/report.h"
#include "benchmarks/workload.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/runtime.h"

DEFINE_string(workloads, "all",
              "comma-separated workloads to run, or 'all'; they run in the order --help "
              "lists them");
DEFINE_int32(repetitions, 5, "runs of each workload; the table shows their median, >= 1");
DEFINE_double(scale, 1.0, "multiplies every workload's size (0.001 = a quick self-check), > 0");
DEFINE_string(format, "table",
              "table (for people) or json (one JSON object per line, nothing else on "
              "stdout)");

namespace spindle {
namespace bench {
namespace {

constexpr int kBadOption = 2;

// "  name: description" lines, for --help.
std::string WorkloadList() {
  std::string list;
  for (const Workload& w : AllWorkloads()) {
    list += absl::StrFormat("  %s: %s\n", w.name, w.description);
  }
  return list;
}

std::string WorkloadNames() {
  std::vector<std::string> names;
  for (const Workload& w : AllWorkloads()) names.push_back(w.name);
  return absl::StrJoin(names, ", ");
}

// The workloads --workloads names, in registry order, or the error message.
std::vector<const Workload*> SelectWorkloads(std::string* error) {
  std::vector<const Workload*> selected;
  if (FLAGS_workloads == "all") {
    for (const Workload& w : AllWorkloads()) selected.push_back(&w);
    return selected;
  }
  std::map<std::string, bool> wanted;
  for (const absl::string_view name : absl::StrSplit(FLAGS_workloads, ',')) {
    wanted[std::string(name)] = false;
  }
  for (const Workload& w : AllWorkloads()) {
    if (auto it = wanted.find(w.name); it != wanted.end()) {
      it->second = true;
      selected.push_back(&w);
    }
  }
  for (const auto& [name, known] : wanted) {
    if (!known) {
      *error = absl::StrFormat("--workloads=%s: unknown workload '%s'; accepted: all, %s",
                               FLAGS_workloads, name, WorkloadNames());
      return {};
    }
  }
  return selected;
}

// The first bad option of spindle_bench's own, as a message; "" when all are valid.
std::string ValidateOptions() {
  if (FLAGS_repetitions < 1) {
    return absl::StrFormat("--repetitions=%d: must be at least 1", FLAGS_repetitions);
  }
  if (!(FLAGS_scale > 0) || !std::isfinite(FLAGS_scale)) {
    return absl::StrFormat("--scale=%g: must be a finite number > 0", FLAGS_scale);
  }
  if (FLAGS_format != "table" && FLAGS_format != "json") {
    return absl::StrFormat("--format=%s: accepted: table, json", FLAGS_format);
  }
  return "";
}

// Sets the worker flags a workload's shape asks for; restores the command line's
// values when destroyed.
class ShapeOverride {
 public:
  explicit ShapeOverride(const RuntimeShape& shape) {
    Override("fiber_concurrency", shape.concurrency);
    Override("fiber_scheduling_group_size", shape.scheduling_group_size);
  }
  ~ShapeOverride() {
    for (const auto& [flag, value] : saved_) {
      gflags::SetCommandLineOption(flag.c_str(), value.c_str());
    }
  }
  ShapeOverride(const ShapeOverride&) = delete;
  ShapeOverride& operator=(const ShapeOverride&) = delete;

 private:
  void Override(const std::string& flag, std::uint64_t value) {
    if (value == 0) return;
    std::string old_value;
    CHECK(gflags::GetCommandLineOption(flag.c_str(), &old_value)) << flag;
    saved_.emplace_back(flag, old_value);
    gflags::SetCommandLineOption(flag.c_str(), std::to_string(value).c_str());
  }

  std::vector<std::pair<std::string, std::string>> saved_;
};

void StartRuntimeOrExit() {
  if (const std::string error = TryStartRuntime(); !error.empty()) {
    std::fprintf(stderr, "spindle_bench: %s\n", error.c_str());
    std::exit(kBadOption);
  }
}

// Shows what runs now on stderr: one line rewritten in place on a terminal, one line
// per workload otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(std::size_t workloads) : workloads_(workloads), tty_(isatty(2)) {}

  void Show(std::size_t index, const Workload& w, int repetition) {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s: repetition %d/%d", index + 1, workloads_, w.name,
                 repetition + 1, FLAGS_repetitions);
    std::fflush(stderr);
  }
  void Done(std::size_t index, const Workload& w, double seconds) {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K");
    } else {
      std::fprintf(stderr, "[%zu/%zu] %s: %d repetitions in %.2f s\n", index + 1, workloads_,
                   w.name, FLAGS_repetitions, seconds);
    }
    std::fflush(stderr);
  }

 private:
  const std::size_t workloads_;
  const bool tty_;
};

// Runs one repetition of `w` in a forked child with its own runtime; the child sends
// its metrics back as "name value unit" lines. A child that fails has printed why.
std::vector<Metric> RunInOwnProcess(const Workload& w, double scale) {
  int fds[2];
  PCHECK(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t child = fork();
  PCHECK(child >= 0);
  if (child == 0) {
    close(fds[0]);
    StartRuntimeOrExit();
    const std::vector<Metric> metrics = w.run(scale);
    TerminateRuntime();
    std::string text;
    for (const Metric& m : metrics) {
      text += absl::StrFormat("%s %.17g %s\n", m.name, m.value, m.unit);
    }
    const bool sent = write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size());
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
  close(fds[0]);
  int status = 0;
  PCHECK(waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "spindle_bench: workload %s: its process died of signal %d\n", w.name,
                 WTERMSIG(status));
    std::exit(1);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The child has said what went wrong; pass its exit status on.
    std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
  std::vector<Metric> metrics;
  std::istringstream lines(text);
  for (Metric m; lines >> m.name >> m.value >> m.unit;) metrics.push_back(m);
  return metrics;
}

// Runs every repetition of `w` and adds its metrics' values to `summaries`.
void RunWorkload(std::size_t index, const Workload& w, ProgressLine* progress,
                 std::vector<Summary>* summaries) {
  ShapeOverride shape(w.shape);
  if (!w.own_process) StartRuntimeOrExit();
  Stopwatch watch;
  const std::size_t first = summaries->size();
  for (int rep = 0; rep < FLAGS_repetitions; ++rep) {
    progress->Show(index, w, rep);
    const std::vector<Metric> metrics =
        w.own_process ? RunInOwnProcess(w, FLAGS_scale) : w.run(FLAGS_scale);
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      if (rep == 0) summaries->push_back({w.name, metrics[i].name, metrics[i].unit, {}});
      CHECK_LT(first + i, summaries->size()) << w.name << " changed its metrics";
      (*summaries)[first + i].values.push_back(metrics[i].value);
    }
  }
  if (!w.own_process) TerminateRuntime();
  progress->Done(index, w, watch.Seconds());
}

int Main() {
  std::string error = ValidateOptions();
  const std::vector<const Workload*> selected = SelectWorkloads(&error);
  if (!error.empty()) {
    std::fprintf(stderr, "spindle_bench: %s\n", error.c_str());
    return kBadOption;
  }
  ProgressLine progress(selected.size());
  std::vector<Summary> summaries;
  Stopwatch watch;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    RunWorkload(i, *selected[i], &progress, &summaries);
  }
  if (FLAGS_format == "json") {
    PrintJsonLines(summaries, stdout);
  } else {
    std::printf("spindle_bench: %zu workloads, %d repetitions each, scale %g, %ld CPUs\n\n",
                selected.size(), FLAGS_repetitions, FLAGS_scale, sysconf(_SC_NPROCESSORS_ONLN));
    PrintTable(summaries, stdout);
    std::printf("\nall workloads checked their results; %.1f s in all\n", watch.Seconds());
  }
  return 0;
}

}  // namespace
}  // namespace bench
}  // namespace spindle

int main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "runs Spindle's workloads, each checking its own result, and prints a table of "
      "their results.\nWorkloads, in the order they run:\n" +
      spindle::bench::WorkloadList());
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) {
    std::fprintf(stderr, "spindle_bench: unexpected argument '%s' (options start with --)\n",
                 argv[1]);
    return 2;
  }
  // Keep the runtime's start-up line (one per workload) out of the progress line.
  if (gflags::GetCommandLineFlagInfoOrDie("minloglevel").is_default) FLAGS_minloglevel = 1;
  google::InitGoogleLogging(argv[0]);
  return spindle::bench::Main();
}
