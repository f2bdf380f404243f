// Copyright 2026 The Spindle Authors.

#include "runtime/internal/observability/trace_export.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <map>
#include <string_view>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/wait_types.h"
#include "glog/logging.h"
#include "runtime/internal/group/group_stats.h"

namespace spindle::internal {
namespace {

// JSON string contents: quotes, backslashes and control characters escaped.
std::string Escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof(code), "\\u%04x", c);
      out += code;
    } else {
      out += c;
    }
  }
  return out;
}

std::string Who(std::uint64_t id) {
  return id == kLockOwnerThread ? std::string("a thread") : "fiber " + std::to_string(id);
}

// One event of the JSON file, written as it is built.
class Writer {
 public:
  Writer(std::ostream& out, std::uint64_t origin, double ns_per_tick)
      : out_(out), origin_(origin), ns_per_tick_(ns_per_tick) {}

  double Micros(std::uint64_t ticks) const {
    return ticks > origin_ ? static_cast<double>(ticks - origin_) * ns_per_tick_ / 1000.0 : 0.0;
  }
  void Begin() { out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"; }
  void End() { out_ << "\n]}\n"; }
  void Event(const std::string& body) {
    if (!first_) out_ << ",\n";
    first_ = false;
    out_ << '{' << body << '}';
  }
  std::string Time(double micros) {
    char text[48];
    std::snprintf(text, sizeof(text), "%.3f", micros);
    return text;
  }

 private:
  std::ostream& out_;
  const std::uint64_t origin_;
  const double ns_per_tick_;
  bool first_ = true;
};

// A flow's start (a wake-up or spawn) waiting for the run it caused.
struct PendingFlow {
  std::uint64_t id;  // the flow's id in the file
  const char* name;  // "wake" or "spawn"
};

}  // namespace

TraceStats WriteChromeTrace(std::vector<TraceThreadLog> logs, double ns_per_tick,
                              std::ostream& out) {
  TraceStats summary;
  summary.recorded = true;
  // The cut: the first drop anywhere.
  std::uint64_t cut = UINT64_MAX;
  for (const TraceThreadLog& log : logs) {
    summary.dropped += log.dropped;
    if (log.first_drop != 0) cut = std::min(cut, log.first_drop);
  }
  summary.truncated = cut != UINT64_MAX;
  std::uint64_t origin = UINT64_MAX, last = 0;
  for (TraceThreadLog& log : logs) {
    auto end = std::find_if(log.records.begin(), log.records.end(),
                            [cut](const TraceRecord& r) { return r.ticks >= cut; });
    log.records.erase(end, log.records.end());
    if (!log.records.empty()) {
      origin = std::min(origin, log.records.front().ticks);
      last = std::max(last, log.records.back().ticks);
    }
  }
  logs.erase(std::remove_if(logs.begin(), logs.end(),
                            [](const TraceThreadLog& log) { return log.records.empty(); }),
             logs.end());
  if (origin == UINT64_MAX) origin = last = 0;
  Writer w(out, origin, ns_per_tick);
  summary.seconds = w.Micros(last) / 1e6;
  w.Begin();
  w.Event("\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"Spindle\"}");

  // Every record of every thread in time order, so a flow's start is always written
  // before the run it binds to is found.
  struct Ref {
    std::uint64_t ticks;
    std::size_t thread;
    std::size_t index;
  };
  std::vector<Ref> order;
  for (std::size_t t = 0; t < logs.size(); ++t) {
    summary.records += logs[t].records.size();
    for (std::size_t i = 0; i < logs[t].records.size(); ++i) {
      order.push_back({logs[t].records[i].ticks, t, i});
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Ref& a, const Ref& b) { return a.ticks < b.ticks; });
  summary.threads = logs.size();
  for (std::size_t t = 0; t < logs.size(); ++t) {
    w.Event("\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(logs[t].tid) +
            ",\"name\":\"thread_name\",\"args\":{\"name\":\"" + Escape(logs[t].name) + " (" +
            std::to_string(logs[t].tid) + ")\"}");
    w.Event("\"ph\":\"M\",\"pid\":1,\"tid\":" + std::to_string(logs[t].tid) +
            ",\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":" + std::to_string(t) +
            "}");
  }

  // Per thread: the run (or sleep) slice open on it.
  struct Open {
    TraceKind kind = TraceKind::kNone;  // kRun or kSleep; kNone: nothing open
    std::uint64_t start = 0;
    std::uint64_t fiber = 0, group = 0;
    std::uint32_t worker = 0;
    std::string ended;
  };
  std::vector<Open> open(logs.size());
  std::map<std::uint64_t, std::vector<PendingFlow>> flows;  // by the fiber made Ready
  std::uint64_t next_flow = 1;

  auto close = [&](std::size_t t, std::uint64_t at, const std::string& ended) {
    Open& o = open[t];
    if (o.kind == TraceKind::kNone) return;
    const double start = w.Micros(o.start);
    const double dur = std::max(0.0, w.Micros(at) - start);
    const std::string tid = std::to_string(logs[t].tid);
    if (o.kind == TraceKind::kRun) {
      w.Event("\"ph\":\"X\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + w.Time(start) +
              ",\"dur\":" + w.Time(dur) + ",\"cat\":\"run\",\"name\":\"fiber " +
              std::to_string(o.fiber) + "\",\"args\":{\"fiber\":" + std::to_string(o.fiber) +
              ",\"group\":" + std::to_string(o.group) + ",\"worker\":" +
              std::to_string(o.worker) + ",\"ended\":\"" + (o.ended.empty() ? ended : o.ended) +
              "\"}");
    } else {
      w.Event("\"ph\":\"X\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + w.Time(start) +
              ",\"dur\":" + w.Time(dur) + ",\"cat\":\"idle\",\"name\":\"sleep\"");
    }
    o = Open{};
  };
  // A short slice of its own for something done outside any slice (so a flow can start
  // in it): as long as 1 us, or up to the thread's next record.
  auto short_slice = [&](std::size_t t, std::size_t i, const std::string& cat,
                         const std::string& name, const std::string& args) {
    const TraceThreadLog& log = logs[t];
    const double start = w.Micros(log.records[i].ticks);
    double dur = 1.0;
    if (i + 1 < log.records.size()) dur = std::min(dur, w.Micros(log.records[i + 1].ticks) - start);
    dur = std::max(dur, 0.0);
    w.Event("\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(log.tid) + ",\"ts\":" +
            w.Time(start) + ",\"dur\":" + w.Time(dur) + ",\"cat\":\"" + cat + "\",\"name\":\"" +
            name + "\",\"args\":{" + args + "}");
  };

  for (const Ref& ref : order) {
    const TraceRecord& r = logs[ref.thread].records[ref.index];
    const std::string tid = std::to_string(logs[ref.thread].tid);
    const std::string ts = w.Time(w.Micros(r.ticks));
    Open& o = open[ref.thread];
    switch (r.kind) {
      case TraceKind::kRun: {
        close(ref.thread, r.ticks, "yield");
        o.kind = TraceKind::kRun;
        o.start = r.ticks;
        o.fiber = r.a;
        o.group = r.b;
        o.worker = r.c;
        ++summary.runs;
        auto it = flows.find(r.a);
        if (it != flows.end()) {
          for (const PendingFlow& flow : it->second) {
            w.Event("\"ph\":\"f\",\"bp\":\"e\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + ts +
                    ",\"cat\":\"" + flow.name + "\",\"name\":\"" + flow.name +
                    "\",\"id\":" + std::to_string(flow.id));
          }
          flows.erase(it);
        }
        break;
      }
      case TraceKind::kPark:
        if (o.kind == TraceKind::kRun && o.fiber == r.a) {
          close(ref.thread, r.ticks,
                std::string("park on ") + WaitKindName(static_cast<WaitKind>(r.c)));
        }
        break;
      case TraceKind::kExit:
        if (o.kind == TraceKind::kRun && o.fiber == r.a) close(ref.thread, r.ticks, "exit");
        break;
      case TraceKind::kWake:
      case TraceKind::kSpawn: {
        const bool wake = r.kind == TraceKind::kWake;
        wake ? ++summary.wakes : ++summary.spawns;
        const char* name = wake ? "wake" : "spawn";
        // Outside a run or a sleep (during which a worker may poll and dispatch): a
        // slice of its own for the flow to start in.
        if (o.kind == TraceKind::kNone) {
          short_slice(ref.thread, ref.index, name, name,
                      "\"by\":\"" + Who(r.a) + "\",\"fiber\":" + std::to_string(r.b));
        }
        const std::uint64_t id = next_flow++;
        w.Event("\"ph\":\"s\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + ts + ",\"cat\":\"" +
                name + "\",\"name\":\"" + name + "\",\"id\":" + std::to_string(id) +
                ",\"args\":{\"by\":\"" + Who(r.a) + "\",\"fiber\":" + std::to_string(r.b) + "}");
        flows[r.b].push_back({id, name});
        break;
      }
      case TraceKind::kSteal:
        summary.steals += r.b;
        w.Event("\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + ts +
                ",\"cat\":\"steal\",\"name\":\"steal\",\"args\":{\"from_group\":" +
                std::to_string(r.a) + ",\"fibers\":" + std::to_string(r.b) +
                ",\"to_group\":" + std::to_string(r.c) + "}");
        break;
      case TraceKind::kTimers:
        summary.timers += r.b;
        if (o.kind == TraceKind::kNone) {
          short_slice(ref.thread, ref.index, "timer", "timers",
                      "\"fired\":" + std::to_string(r.b));
        } else {
          w.Event("\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + ts +
                  ",\"cat\":\"timer\",\"name\":\"timers\",\"args\":{\"fired\":" +
                  std::to_string(r.b) + "}");
        }
        break;
      case TraceKind::kPoll:
        if (o.kind == TraceKind::kNone) {
          short_slice(ref.thread, ref.index, "poll", "poll",
                      "\"reactor\":" + std::to_string(r.a) + ",\"events\":" +
                          std::to_string(r.b));
        } else {
          w.Event("\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":" + tid + ",\"ts\":" + ts +
                  ",\"cat\":\"poll\",\"name\":\"poll\",\"args\":{\"reactor\":" +
                  std::to_string(r.a) + ",\"events\":" + std::to_string(r.b) + "}");
        }
        break;
      case TraceKind::kSleep:
        close(ref.thread, r.ticks, "yield");
        ++summary.sleeps;
        o.kind = TraceKind::kSleep;
        o.start = r.ticks;
        break;
      case TraceKind::kSleepEnd:
        if (o.kind == TraceKind::kSleep) close(ref.thread, r.ticks, "");
        break;
      case TraceKind::kNone:
        break;
    }
  }
  for (std::size_t t = 0; t < logs.size(); ++t) close(t, last, "running");
  w.End();
  return summary;
}

TraceWindowThread::TraceWindowThread(std::string path, std::chrono::seconds after,
                                     std::chrono::seconds length,
                                     std::size_t records_per_thread)
    : path_(std::move(path)),
      after_(after),
      length_(length),
      records_per_thread_(records_per_thread),
      thread_([this] { Run(); }) {}

TraceWindowThread::~TraceWindowThread() {
  // release: the thread re-reads the word after it wakes.
  stop_.word().store(1, std::memory_order_release);
  stop_.Unpark();
  thread_.join();
}

bool TraceWindowThread::WaitUntil(MonotonicDeadline deadline) {
  // acquire: pairs with the destructor's store.
  while (stop_.word().load(std::memory_order_acquire) == 0) {
    if (!stop_.ParkWhile(0, deadline)) return true;
  }
  return false;
}

std::string StartTraceRecording(std::size_t records_per_thread, const std::string& what) {
  if (records_per_thread < kMinTraceRecordsPerThread ||
      records_per_thread > kMaxTraceRecordsPerThread) {
    return what + "=" + std::to_string(records_per_thread) +
           " is invalid: expected records in [" + std::to_string(kMinTraceRecordsPerThread) +
           ", " + std::to_string(kMaxTraceRecordsPerThread) + "]";
  }
  CycleClockNanosPerTick();  // measured once, before the window (2 ms the first time)
  if (!StartTraceWindow(records_per_thread)) {
    return "a scheduling trace is being recorded already (StopTracing() ends it)";
  }
  GroupStats::SampleEveryReadinessForTrace(true);
  return "";
}

TraceStats StopTraceRecording(std::ostream& out) {
  if (!TraceWindowOpen()) return TraceStats{};  // nothing was recording
  std::vector<TraceThreadLog> logs = StopTraceWindow();
  GroupStats::SampleEveryReadinessForTrace(false);
  return WriteChromeTrace(std::move(logs), CycleClockNanosPerTick(), out);
}

void TraceWindowThread::Run() {
  pthread_setname_np(pthread_self(), "spindle-trace");
  if (!WaitUntil(MonotonicDeadline::In(after_))) return;
  const std::string error =
      StartTraceRecording(records_per_thread_, "--fiber_trace_records_per_thread");
  if (!error.empty()) {
    LOG(ERROR) << "--fiber_trace_file=" << path_ << ": " << error;
    return;
  }
  WaitUntil(MonotonicDeadline::In(length_));
  std::ofstream out(path_);
  const TraceStats summary = StopTraceRecording(out);
  out.close();
  if (!out) {
    LOG(ERROR) << "--fiber_trace_file=" << path_ << ": could not write the trace there";
    return;
  }
  LOG(INFO) << "Spindle: scheduling trace written to " << path_ << ": " << summary.seconds
            << " s, " << summary.threads << " threads, " << summary.records << " records, "
            << summary.runs << " fiber runs"
            << (summary.truncated ? " (truncated where a buffer filled; raise "
                                    "--fiber_trace_records_per_thread)"
                                  : "");
}

}  // namespace spindle::internal
