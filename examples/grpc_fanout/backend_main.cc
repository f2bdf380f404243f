// Copyright 2026 The Spindle Authors.
//
// backend --port=N [--stats_file=PATH]
//
// Serves the fan-out example's Backend service on gRPC's callback API. Each Work call
// waits `wait_us` on a grpc::Alarm (a timer: no thread is held while it waits), then
// keeps a CPU busy for `work_us` stirring the reply's payload, and answers value = id + 1
// with `payload_bytes` bytes of payload. A call cancelled meanwhile (by its caller, its
// deadline or the server's shutdown) is finished with CANCELLED and counted.
//
// Prints "listening on PORT" as its first stdout line. On SIGTERM or SIGINT it shuts down
// (in-flight calls get 2 s, then are cancelled), prints
// "backend: calls=N completed=N cancelled=N" and writes the same counters, as
// "calls=N completed=N cancelled=N", to --stats_file if given.

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "gflags/gflags.h"
#include "integrations/grpc/server.h"
#include "io/server.h"

DEFINE_int64(port, 0,
             "Port to serve Backend on, on 0.0.0.0; 0 lets the kernel pick one. The port is "
             "printed as \"listening on PORT\", the first stdout line (default 0, range "
             "[0, 65535])");
DEFINE_string(stats_file, "",
              "If set, a file to write \"calls=N completed=N cancelled=N\" to at shutdown "
              "(default \"\": none)");

namespace spindle::fanout {
namespace {

// Limits on what one call may ask for, so that a bad request cannot pin the server.
constexpr std::uint32_t kMaxWaitUs = 3'600'000'000u;  // an hour
constexpr std::uint32_t kMaxWorkUs = 60'000'000u;     // a minute of CPU
constexpr std::uint32_t kMaxPayloadBytes = 4u << 20;  // gRPC's default receive limit

// The backend's counters. Thread-safe (relaxed atomics).
struct BackendCounters {
  std::atomic<std::uint64_t> calls{0};
  std::atomic<std::uint64_t> completed{0};
  std::atomic<std::uint64_t> cancelled{0};

  std::string Line() const {
    return "calls=" + std::to_string(calls.load()) +
           " completed=" + std::to_string(completed.load()) +
           " cancelled=" + std::to_string(cancelled.load());
  }
};

// Keeps a CPU busy for `work_us` microseconds: passes over `bytes` (or a small scratch
// buffer when it is empty) mixing each byte into a running hash and writing it back, and
// reads the clock between passes. Not a sleep: the point is to cost CPU.
void BusyWork(std::uint32_t work_us, std::uint64_t seed, std::string* bytes) {
  if (work_us == 0) return;
  char scratch[64] = {};
  char* data = bytes->empty() ? scratch : bytes->data();
  const std::size_t size = bytes->empty() ? sizeof(scratch) : bytes->size();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(work_us);
  std::uint64_t hash = seed ^ 0x9e3779b97f4a7c15ull;
  std::size_t position = 0;
  do {
    // About 4 KiB of mixing between clock reads.
    for (int step = 0; step < 4096; ++step) {
      hash = (hash ^ static_cast<unsigned char>(data[position])) * 0x100000001b3ull;
      data[position] = static_cast<char>(hash >> 56);
      if (++position == size) position = 0;
    }
  } while (std::chrono::steady_clock::now() < until);
}

// One Work call. Finish is called exactly once, from the alarm's callback (or from the
// constructor when there is nothing to wait for or the request is bad); OnCancel only
// cancels the alarm, which makes the callback run at once with ok = false.
// Thread-safe as gRPC needs: the alarm callback (on gRPC's executor) and OnCancel may run
// concurrently; `alarm_` is safe to Cancel from any thread, the rest is touched by one
// callback only. Deletes itself in OnDone.
class WorkReactor final : public grpc::ServerUnaryReactor {
 public:
  WorkReactor(grpc::CallbackServerContext* context, const WorkRequest* request, WorkReply* reply,
              BackendCounters* counters)
      : context_(context), request_(request), reply_(reply), counters_(counters) {
    counters_->calls.fetch_add(1, std::memory_order_relaxed);
    if (request->wait_us() > kMaxWaitUs || request->work_us() > kMaxWorkUs ||
        request->payload_bytes() > kMaxPayloadBytes) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "wait_us, work_us or payload_bytes above the backend's limits"));
      return;
    }
    if (request->wait_us() == 0 && request->work_us() == 0) {
      Complete();  // nothing to wait for and nothing to compute: answer on this thread
      return;
    }
    // The callback form of Alarm: the callback runs on gRPC's executor when the timer
    // fires (ok = true) or at once when it is cancelled (ok = false).
    alarm_set_ = true;
    alarm_.Set(std::chrono::system_clock::now() + std::chrono::microseconds(request->wait_us()),
               [this](bool ok) { OnAlarm(ok); });
  }

  // Runs only after the handler (this constructor) returned, so `alarm_set_` is settled.
  void OnCancel() override {
    if (alarm_set_) alarm_.Cancel();
  }
  void OnDone() override { delete this; }

 private:
  void OnAlarm(bool ok) {
    if (!ok || context_->IsCancelled()) {
      FinishCancelled();
      return;
    }
    Complete();
  }

  void Complete() {
    std::string* payload = reply_->mutable_payload();
    payload->assign(request_->payload_bytes(), static_cast<char>(request_->id()));
    BusyWork(request_->work_us(), request_->id(), payload);
    if (context_->IsCancelled()) {
      FinishCancelled();
      return;
    }
    reply_->set_value(request_->id() + 1);
    counters_->completed.fetch_add(1, std::memory_order_relaxed);
    Finish(grpc::Status::OK);
  }

  void FinishCancelled() {
    counters_->cancelled.fetch_add(1, std::memory_order_relaxed);
    Finish(grpc::Status::CANCELLED);
  }

  grpc::CallbackServerContext* const context_;
  const WorkRequest* const request_;
  WorkReply* const reply_;
  BackendCounters* const counters_;
  grpc::Alarm alarm_;
  bool alarm_set_ = false;
};

// The Backend service. Thread-safe: Work runs concurrently on gRPC's callback threads and
// only creates a reactor; the counters are atomic.
class BackendService final : public Backend::CallbackService {
 public:
  explicit BackendService(BackendCounters* counters) : counters_(counters) {}

  grpc::ServerUnaryReactor* Work(grpc::CallbackServerContext* context, const WorkRequest* request,
                                 WorkReply* reply) override {
    return new WorkReactor(context, request, reply, counters_);
  }

 private:
  BackendCounters* const counters_;
};

int Main(spindle::io::ShutdownSignals& signals) {
  CheckFlagRange("port", FLAGS_port, 0, 65535);
  BackendCounters counters;
  BackendService service(&counters);
  grpc::ServerBuilder builder;
  int port = 0;
  AddListeningPort(&builder, static_cast<int>(FLAGS_port), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "backend: cannot serve on port %lld\n",
                 static_cast<long long>(FLAGS_port));
    return 1;
  }
  PrintListening(port);

  // Until SIGTERM/SIGINT; then 2 s for the calls in flight, then they are cancelled.
  spindle::grpc_fiber::ServeUntilSignal(signals, *server, std::chrono::seconds(2));
  server.reset();

  const std::string line = counters.Line();
  std::printf("backend: %s\n", line.c_str());
  std::fflush(stdout);
  if (!FLAGS_stats_file.empty()) {
    std::FILE* file = std::fopen(FLAGS_stats_file.c_str(), "w");
    if (file == nullptr || std::fprintf(file, "%s\n", line.c_str()) < 0 || std::fclose(file) != 0) {
      std::fprintf(stderr, "backend: cannot write --stats_file=%s\n", FLAGS_stats_file.c_str());
      return 1;
    }
  }
  return 0;
}

}  // namespace
}  // namespace spindle::fanout

int main(int argc, char** argv) {
  // Before any gRPC object, so that every gRPC thread inherits the blocked mask.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage("the fan-out example's Backend server (gRPC callback API)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return spindle::fanout::Main(signals);
}
