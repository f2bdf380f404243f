// Copyright 2026 The Spindle Authors.
//
// spindle_bench: Spindle's main job. Runs every workload (benchmarks/workload.h) in turn
// with a live progress line on stderr, each checking its own result, then prints one
// row per workload and metric: the median over the repetitions, the range, the unit.
//
//   ./bazelw run -c opt //benchmarks:spindle_bench -- --flagfile=$PWD/configs/default.flags
//       [--workloads=a,b,...] [--repetitions=N] [--scale=X] [--format=table|json]
//       [--sweep_workers=2,4,8,16] [--fiber_scheduling_strategy=v1[,v2...]]
//
// Every runtime flag (--fiber_*) applies; a workload that needs a particular shape
// (pingpong: two groups of one worker; yield: one worker) overrides the worker flags
// while it runs. Exit status: 0 when every workload checked out, 1 when one computed a
// wrong result, 2 for a bad option or flag value.
//
// A sweep runs every workload once per column, one column per combination of a
// scheduling strategy (a comma-separated --fiber_scheduling_strategy; the runtime still
// sees one name at a time) and a worker count (--sweep_workers, each in turn as
// --fiber_concurrency). The columns of one workload run one after the other, before the
// next workload; the table then has one median per column, the JSON one row per column
// with "strategy" and "workers" added. Without a sweep the output is as before.

#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/report.h"
#include "benchmarks/workload.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"

DEFINE_string(workloads, "all",
              "comma-separated workloads to run, or 'all'; they run in the order --help "
              "lists them");
DEFINE_int32(repetitions, 5, "runs of each workload; the table shows their median, >= 1");
DEFINE_double(scale, 1.0, "multiplies every workload's size (0.001 = a quick self-check), > 0");
DEFINE_string(format, "table",
              "table (for people) or json (one JSON object per line, nothing else on "
              "stdout)");
DEFINE_bool(metrics, false,
            "adds the scheduler's figures for each workload under its rows: the "
            "ready-to-run latency (p50, p99, p999, from a fiber becoming ready to it "
            "running), and per repetition the fiber runs, wake-ups, sleeps, spurious "
            "wake-ups and steals (runtime/metrics.h). Times every readiness "
            "(--fiber_ready_latency_sample_period=1) unless that flag is set to other "
            "than its default 64, so that workloads that ready few fibers still show "
            "their latency; the timings then include that cost (compare timings from "
            "runs without --metrics)");
DEFINE_string(sweep_workers, "",
              "comma-separated worker counts such as 2,4,8,16 (default \"\" = no sweep): "
              "every workload runs once per count, each count as --fiber_concurrency "
              "(groups as --fiber_scheduling_group_size says), each in [1, 1024]. Combines "
              "with a comma-separated --fiber_scheduling_strategy (v1,v2: every strategy "
              "with every count). The table gets one column per strategy and count, the "
              "JSON rows \"strategy\" and \"workers\". yield and pingpong keep their own "
              "shape in every column (marked *)");

// The runtime's flags that a sweep sets column by column.
DECLARE_uint64(fiber_concurrency);
DECLARE_string(fiber_scheduling_strategy);

namespace spindle {
namespace bench {
namespace {

constexpr int kBadOption = 2;

// The runtime's largest --fiber_concurrency (runtime/internal/runtime_options.cc). The
// runtime checks it again when each column starts.
constexpr std::uint64_t kMaxWorkers = 1024;

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

// The worker counts of --sweep_workers (none without a sweep), or the error message.
std::vector<std::uint64_t> ParseSweepWorkers(std::string* error) {
  std::vector<std::uint64_t> counts;
  if (FLAGS_sweep_workers.empty()) return counts;
  for (const absl::string_view text : absl::StrSplit(FLAGS_sweep_workers, ',')) {
    std::uint64_t count = 0;
    if (!absl::SimpleAtoi(text, &count) || count < 1 || count > kMaxWorkers) {
      *error = absl::StrFormat(
          "--sweep_workers=%s: '%s' is not a worker count: expected integers in [1, %d] "
          "(--fiber_concurrency's range, without its 0 = automatic)",
          FLAGS_sweep_workers, text, kMaxWorkers);
      return {};
    }
    counts.push_back(count);
  }
  return counts;
}

// The names in --fiber_scheduling_strategy, or the error message. The runtime itself
// judges each name when it starts.
std::vector<std::string> ParseStrategies(std::string* error) {
  std::vector<std::string> names = absl::StrSplit(FLAGS_fiber_scheduling_strategy, ',');
  for (const std::string& name : names) {
    if (name.empty()) {
      *error = absl::StrFormat("--fiber_scheduling_strategy=%s: an empty strategy name",
                               FLAGS_fiber_scheduling_strategy);
      return {};
    }
  }
  return names;
}

// The columns of a sweep, strategy by strategy; none without a sweep. Without
// --sweep_workers, each strategy's column keeps the command line's --fiber_concurrency.
std::vector<SweepColumn> PlanSweep(std::string* error) {
  const std::vector<std::uint64_t> counts = ParseSweepWorkers(error);
  if (!error->empty()) return {};
  const std::vector<std::string> strategies = ParseStrategies(error);
  if (!error->empty() || (counts.empty() && strategies.size() == 1)) return {};
  std::vector<SweepColumn> columns;
  for (const std::string& strategy : strategies) {
    for (const std::uint64_t workers : counts) {
      columns.emplace_back();
      columns.back().strategy = strategy;
      columns.back().workers = workers;
    }
    if (counts.empty()) {
      columns.emplace_back();
      columns.back().strategy = strategy;
      columns.back().workers = FLAGS_fiber_concurrency;
    }
  }
  return columns;
}

// Sets the runtime flags of `column`, for the next start of the runtime.
void SetColumnFlags(const SweepColumn& column) {
  gflags::SetCommandLineOption("fiber_scheduling_strategy", column.strategy.c_str());
  gflags::SetCommandLineOption("fiber_concurrency", std::to_string(column.workers).c_str());
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

// Waits for `child` and returns when it exited with status 0; otherwise exits with its
// status (1 when a signal ended it), the child having said what went wrong.
void WaitForChildOrExit(pid_t child, const char* what) {
  int status = 0;
  PCHECK(waitpid(child, &status, 0) == child);
  if (WIFSIGNALED(status)) {
    std::fprintf(stderr, "spindle_bench: %s: its process died of signal %d\n", what,
                 WTERMSIG(status));
    std::exit(1);
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
  }
}

// Starts and stops the runtime once per column of a sweep, so that a strategy or worker
// count the runtime rejects stops spindle_bench, with the runtime's message and exit
// status 2, before any workload runs. In a forked child, to leave this process's stack
// pool empty for parked_memory.
void CheckColumnsOrExit(const std::vector<SweepColumn>& columns) {
  std::fflush(nullptr);
  const pid_t child = fork();
  PCHECK(child >= 0);
  if (child == 0) {
    for (const SweepColumn& column : columns) {
      SetColumnFlags(column);
      if (const std::string error = TryStartRuntime(); !error.empty()) {
        std::fprintf(stderr, "spindle_bench: column %s: %s\n", column.Label().c_str(),
                     error.c_str());
        _exit(kBadOption);
      }
      TerminateRuntime();
    }
    _exit(0);
  }
  WaitForChildOrExit(child, "checking the sweep's columns");
}

// Shows what runs now on stderr: one line rewritten in place on a terminal, one line
// per workload otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(std::size_t workloads) : workloads_(workloads), tty_(isatty(2)) {}

  // `column`: the sweep column's label, "" without a sweep.
  void Show(std::size_t index, const Workload& w, const std::string& column, int repetition) {
    if (!tty_) return;
    std::fprintf(stderr, "\r\033[K[%zu/%zu] %s: repetition %d/%d", index + 1, workloads_,
                 Name(w, column).c_str(), repetition + 1, FLAGS_repetitions);
    std::fflush(stderr);
  }
  void Done(std::size_t index, const Workload& w, const std::string& column, double seconds) {
    if (tty_) {
      std::fprintf(stderr, "\r\033[K");
    } else {
      std::fprintf(stderr, "[%zu/%zu] %s: %d repetitions in %.2f s\n", index + 1, workloads_,
                   Name(w, column).c_str(), FLAGS_repetitions, seconds);
    }
    std::fflush(stderr);
  }

 private:
  static std::string Name(const Workload& w, const std::string& column) {
    return column.empty() ? w.name : absl::StrCat(w.name, " (", column, ")");
  }

  const std::size_t workloads_;
  const bool tty_;
};

// Runs one repetition of `w` on the running runtime; with --metrics, its scheduler
// figures follow its own metrics as "sched.*" rows (the same rows every repetition).
std::vector<Metric> RunOnce(const Workload& w, double scale) {
  if (!FLAGS_metrics) return w.run(scale);
  const RuntimeMetrics before = GetRuntimeMetrics();
  std::vector<Metric> metrics = w.run(scale);
  const GroupMetrics d = GetRuntimeMetrics().Since(before).Total();
  const Histogram& ready = d.ready_latency;
  metrics.push_back({"sched.ready_p50", ready.Percentile(0.5) / 1e3, "us"});
  metrics.push_back({"sched.ready_p99", ready.Percentile(0.99) / 1e3, "us"});
  metrics.push_back({"sched.ready_p999", ready.Percentile(0.999) / 1e3, "us"});
  metrics.push_back({"sched.ready_samples", static_cast<double>(ready.count), "count"});
  metrics.push_back({"sched.fiber_runs", static_cast<double>(d.fibers_run), "count"});
  metrics.push_back({"sched.wakeups", static_cast<double>(d.wakeups), "count"});
  metrics.push_back({"sched.sleeps", static_cast<double>(d.sleeps), "count"});
  metrics.push_back({"sched.spurious_wakeups", static_cast<double>(d.spurious_wakeups),
                     "count"});
  metrics.push_back({"sched.steals_in_group", static_cast<double>(d.steals_in_group),
                     "count"});
  metrics.push_back({"sched.steals_between_groups",
                     static_cast<double>(d.steals_in_same_node + d.steals_in_cross_node),
                     "count"});
  return metrics;
}

// Runs one repetition of `w` in a forked child with its own runtime; the child sends
// its metrics back as "name value unit" lines. A child that fails has printed why.
// `show_layout`: whether the child's runtime prints its layout line (--fiber_log_layout);
// each child is a new process, so without this every repetition would print it again.
std::vector<Metric> RunInOwnProcess(const Workload& w, double scale, bool show_layout) {
  int fds[2];
  PCHECK(pipe(fds) == 0);
  std::fflush(nullptr);
  const pid_t child = fork();
  PCHECK(child >= 0);
  if (child == 0) {
    close(fds[0]);
    if (!show_layout) gflags::SetCommandLineOption("fiber_log_layout", "false");
    StartRuntimeOrExit();
    const std::vector<Metric> metrics = RunOnce(w, scale);
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
  WaitForChildOrExit(child, absl::StrCat("workload ", w.name).c_str());
  std::vector<Metric> metrics;
  std::istringstream lines(text);
  for (Metric m; lines >> m.name >> m.value >> m.unit;) metrics.push_back(m);
  return metrics;
}

// Runs every repetition of `w` and adds its metrics' values to `summaries`. `column`
// names the sweep column for the progress line ("" without a sweep). Returns the workers
// of each scheduling group when the runtime ran in this process with the worker flags
// as they were set on entry (empty when the workload forced its shape or ran in its
// own process).
std::vector<std::size_t> RunWorkload(std::size_t index, const Workload& w,
                                     const std::string& column, ProgressLine* progress,
                                     std::vector<Summary>* summaries) {
  ShapeOverride shape(w.shape);
  std::vector<std::size_t> groups;
  if (!w.own_process) {
    StartRuntimeOrExit();
    if (w.shape.concurrency == 0 && w.shape.scheduling_group_size == 0) {
      for (const SchedulingGroupStats& group : GetSchedulingGroupStats()) {
        groups.push_back(group.workers);
      }
    }
  }
  Stopwatch watch;
  const std::size_t first = summaries->size();
  for (int rep = 0; rep < FLAGS_repetitions; ++rep) {
    progress->Show(index, w, column, rep);
    std::vector<Metric> metrics;
    if (w.own_process) {
      // Once per runtime shape in the whole run, like the runtime does in one process.
      static std::set<std::string>* shown = new std::set<std::string>;
      const std::string key = absl::StrCat(column, "/", w.shape.concurrency, "/",
                                           w.shape.scheduling_group_size);
      metrics = RunInOwnProcess(w, FLAGS_scale, shown->insert(key).second);
    } else {
      metrics = RunOnce(w, FLAGS_scale);
    }
    for (std::size_t i = 0; i < metrics.size(); ++i) {
      if (rep == 0) summaries->push_back({w.name, metrics[i].name, metrics[i].unit, {}});
      CHECK_LT(first + i, summaries->size()) << w.name << " changed its metrics";
      (*summaries)[first + i].values.push_back(metrics[i].value);
    }
  }
  if (!w.own_process) TerminateRuntime();
  progress->Done(index, w, column, watch.Seconds());
  return groups;
}

// Runs every workload of `selected` under every column of `columns`, workload by
// workload (so parked_memory, first, still forks from a process that never started a
// runtime), and fills in each column's groups, and its worker count where the command
// line left it automatic.
void RunSweep(const std::vector<const Workload*>& selected, std::vector<SweepColumn>* columns) {
  ProgressLine progress(selected.size());
  std::vector<std::size_t> seen_workers(columns->size(), 0);
  for (std::size_t i = 0; i < selected.size(); ++i) {
    for (std::size_t c = 0; c < columns->size(); ++c) {
      SweepColumn& column = (*columns)[c];
      SetColumnFlags(column);
      const std::vector<std::size_t> groups =
          RunWorkload(i, *selected[i], column.Label(), &progress, &column.summaries);
      if (column.groups.empty() && !groups.empty()) {
        column.groups = absl::StrJoin(groups, "+");
        for (const std::size_t workers : groups) seen_workers[c] += workers;
      }
    }
  }
  for (std::size_t c = 0; c < columns->size(); ++c) {
    if ((*columns)[c].workers == 0) (*columns)[c].workers = seen_workers[c];
  }
}

// The selected workloads that set their own worker shape.
std::vector<std::string> OwnShapeWorkloads(const std::vector<const Workload*>& selected) {
  std::vector<std::string> names;
  for (const Workload* w : selected) {
    if (w->shape.concurrency != 0 || w->shape.scheduling_group_size != 0) {
      names.push_back(w->name);
    }
  }
  return names;
}

// Main() for a sweep over `columns`.
int SweepMain(const std::vector<const Workload*>& selected, std::vector<SweepColumn> columns) {
  CheckColumnsOrExit(columns);
  Stopwatch watch;
  RunSweep(selected, &columns);
  const std::vector<std::string> own_shape = OwnShapeWorkloads(selected);
  if (FLAGS_format == "json") {
    PrintSweepJsonLines(columns, own_shape, stdout);
    return 0;
  }
  std::printf(
      "spindle_bench: %zu workloads, %d repetitions each, scale %g, %ld CPUs; %zu columns "
      "(strategy, workers), each cell a median\n\n",
      selected.size(), FLAGS_repetitions, FLAGS_scale, sysconf(_SC_NPROCESSORS_ONLN),
      columns.size());
  PrintSweepTable(columns, own_shape, stdout);
  std::printf("\nall workloads checked their results; %.1f s in all\n", watch.Seconds());
  return 0;
}

int Main() {
  std::string error = ValidateOptions();
  const std::vector<const Workload*> selected = SelectWorkloads(&error);
  std::vector<SweepColumn> columns;
  if (error.empty()) columns = PlanSweep(&error);
  if (!error.empty()) {
    std::fprintf(stderr, "spindle_bench: %s\n", error.c_str());
    return kBadOption;
  }
  if (!columns.empty()) return SweepMain(selected, std::move(columns));
  ProgressLine progress(selected.size());
  std::vector<Summary> summaries;
  Stopwatch watch;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    RunWorkload(i, *selected[i], "", &progress, &summaries);
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
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) {
    std::fprintf(stderr, "spindle_bench: unexpected argument '%s' (options start with --)\n",
                 argv[1]);
    return 2;
  }
  // --metrics: every readiness timed (see the flag's help). Through gflags by name:
  // the bench uses the public API only.
  if (FLAGS_metrics) {
    const gflags::CommandLineFlagInfo period =
        gflags::GetCommandLineFlagInfoOrDie("fiber_ready_latency_sample_period");
    if (period.current_value == period.default_value) {
      gflags::SetCommandLineOption("fiber_ready_latency_sample_period", "1");
    }
  }
  // Warnings to stderr, not to log files in /tmp; INFO lines out of the tables.
  if (gflags::GetCommandLineFlagInfoOrDie("minloglevel").is_default) FLAGS_minloglevel = 1;
  if (gflags::GetCommandLineFlagInfoOrDie("logtostderr").is_default) FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  return spindle::bench::Main();
}
