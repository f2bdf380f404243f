// Copyright 2026 The Spindle Authors.
//
// frontend_spindle --backends=HOST:PORT[,...] [--port=N] [--channels_per_backend=4]
//                  [--fanout=8] [--deadline_ms=1000] [--hedge_ms=0] [--fiber_* flags]
//
// The fan-out example's Frontend on Spindle (integrations/grpc): each Query runs in a
// fiber of its own, written in the blocking style. It starts its K backend calls at once
// (grpc_fiber::CallAsync) and parks until all are in (WhenAll, BlockingGet). The query's execution context carries the deadline (the
// earlier of the caller's and now + --deadline_ms) into every backend call; the first
// failed backend call fails the query and cancels the others (the context's StopSource),
// and so does the caller's cancellation (gRPC cancels the query's context). With
// --hedge_ms, a backend call not answered within that time is sent again to the next
// backend channel, and the first answer wins (WhenAny cancels the other copy); each call
// and its hedge then run in a fiber of their own (grpc_fiber::Call()).
//
// Prints "listening on PORT" as its first stdout line; shuts down on SIGTERM/SIGINT
// (in-flight queries get 2 s, then are cancelled) and prints its query counters.

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "examples/grpc_fanout/frontend_flags.h"
#include "fiber/async.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "grpcpp/grpcpp.h"
#include "integrations/grpc/client.h"
#include "integrations/grpc/server.h"
#include "io/server.h"
#include "runtime/runtime.h"
#include "sync/future.h"
#include "sync/latch.h"
#include "sync/stop_token.h"

DEFINE_int64(hedge_ms, 0,
             "A backend call not answered within this many milliseconds is sent again "
             "to the next backend channel; the first answer wins and the other copy is "
             "cancelled. 0 (the default) sends no hedge. Accepted: [0, 60000]");

namespace spindle::fanout {
namespace {

// Serves Frontend.Query in fibers. Thread-safe: gRPC calls Query() from its threads;
// each query's fiber uses the shared pool (thread-safe) and the counters (atomics).
class SpindleFrontend final : public Frontend::CallbackService {
 public:
  SpindleFrontend(const FrontendOptions& options, std::chrono::milliseconds hedge,
                  BackendPool* pool, QueryCounters* counters)
      : options_(options), hedge_(hedge), pool_(pool), counters_(counters) {}

  grpc::ServerUnaryReactor* Query(grpc::CallbackServerContext* context,
                                  const QueryRequest* request, QueryReply* reply) override {
    return grpc_fiber::ServeUnary(context, [this, request, reply] {
      const grpc::Status status = Handle(*request, reply);
      counters_->Count(status);
      return status;
    });
  }

 private:
  // Runs in the query's fiber, in the call's execution context.
  grpc::Status Handle(const QueryRequest& query, QueryReply* reply) {
    std::vector<WorkRequest> work;
    grpc::Status status = BuildWorkRequests(query, options_.fanout, &work);
    if (!status.ok()) return status;
    const auto k = static_cast<std::uint32_t>(work.size());

    // The query's own context: a child of the call's (cancelled with it, never past its
    // deadline), with the per-query deadline and a stop of its own for the first
    // failure.
    StopSource failed;
    ExecutionContext::Options options;
    options.parent = ExecutionContext::CaptureCurrent();
    options.stop_token = failed.token();
    options.deadline = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(options_.deadline_ms);
    ScopedExecutionContext scope(ExecutionContext::Create(std::move(options)));

    std::vector<WorkReply> replies(k);
    std::vector<grpc::Status> statuses(k);
    if (hedge_.count() == 0) {
      // K calls in flight from this fiber, which wakes once, when the last is in. The
      // contexts live here until then. A failed call cancels the others (its
      // continuation runs on gRPC's thread: it only requests the stop).
      std::vector<grpc::ClientContext> contexts(k);
      std::vector<Future<grpc::Status>> calls;
      calls.reserve(k);
      for (std::uint32_t i = 0; i < k; ++i) {
        Backend::Stub* stub = pool_->NextStub();
        calls.push_back(grpc_fiber::CallAsync(contexts[i], [&, i, stub](auto done) {
                          stub->async()->Work(&contexts[i], &work[i], &replies[i],
                                              std::move(done));
                        }).Then([&failed](grpc::Status s) {
          if (!s.ok()) failed.RequestStop();
          return s;
        }));
      }
      statuses = BlockingGet(WhenAll(std::move(calls)));
    } else {
      // A fiber per call, each with its hedge.
      auto call = [&](std::uint32_t i) {
        statuses[i] = CallBackend(work[i], &replies[i]);
        if (!statuses[i].ok()) failed.RequestStop();  // cancels the other calls
      };
      Fiber::Attributes inherit;
      inherit.inherit_execution_context = true;
      std::vector<Fiber> others;
      others.reserve(k - 1);
      for (std::uint32_t i = 1; i < k; ++i) {
        others.emplace_back(inherit, [&call, i] { call(i); });
      }
      call(0);
      for (Fiber& fiber : others) fiber.join();
    }

    for (const grpc::Status& s : statuses) {
      // The first failure that is not a cancellation this query made itself.
      if (!s.ok() && s.error_code() != grpc::StatusCode::CANCELLED) return s;
    }
    for (const grpc::Status& s : statuses) {
      if (!s.ok()) return s;
    }
    return SumReplies(query.id(), k,
                      [&](std::uint32_t i) -> const WorkReply& { return replies[i]; }, reply);
  }

  // One backend call with a hedge: the earlier of two copies, parked until it is in.
  grpc::Status CallBackend(const WorkRequest& request, WorkReply* reply) {
    struct Answer {
      grpc::Status status;
      WorkReply reply;
    };
    // The copies run in fibers of a child context that WhenAny's cancel_rest stops:
    // the loser's call (or its wait before sending) is cancelled.
    StopSource cancel_rest;
    ExecutionContext::Options options;
    options.parent = ExecutionContext::CaptureCurrent();
    options.stop_token = cancel_rest.token();
    ScopedExecutionContext scope(ExecutionContext::Create(std::move(options)));
    Fiber::Attributes inherit;
    inherit.inherit_execution_context = true;
    // Both copies end before this returns (the loser's promptly: it is cancelled), so
    // neither outlives `request` or the query.
    Latch copies_done(2);
    std::vector<Future<Answer>> copies;
    copies.push_back(Async(inherit, [this, &request, &copies_done] {
      Answer answer;
      answer.status = CallOnce(request, &answer.reply);
      copies_done.count_down();
      return answer;
    }));
    copies.push_back(Async(inherit, [this, &request, &copies_done] {
      Answer answer;
      // Interruptible: ends early once the first copy has answered.
      this_fiber::SleepFor(hedge_);
      if (ExecutionContext::CurrentStopToken().stop_requested()) {
        answer.status = grpc::Status(grpc::StatusCode::CANCELLED, "hedge not needed");
      } else {
        answer.status = CallOnce(request, &answer.reply);
      }
      copies_done.count_down();
      return answer;
    }));
    auto first = BlockingGet(WhenAny(std::move(copies), cancel_rest));
    copies_done.wait();
    *reply = std::move(first.value.reply);
    return first.value.status;
  }

  grpc::Status CallOnce(const WorkRequest& request, WorkReply* reply) {
    grpc::ClientContext context;
    Backend::Stub* stub = pool_->NextStub();
    return grpc_fiber::Call(context, [&](auto done) {
      stub->async()->Work(&context, &request, reply, std::move(done));
    });
  }

  const FrontendOptions options_;
  const std::chrono::milliseconds hedge_;
  BackendPool* const pool_;
  QueryCounters* const counters_;
};

}  // namespace
}  // namespace spindle::fanout

int main(int argc, char** argv) {
  // First, before any thread starts: SIGTERM and SIGINT are taken by one thread.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage(
      "frontend_spindle --backends=HOST:PORT[,...]: the fan-out example's Frontend on "
      "Spindle fibers (integrations/grpc)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const spindle::fanout::FrontendOptions options = spindle::fanout::FrontendOptionsFromFlags();
  spindle::fanout::CheckFlagRange("hedge_ms", FLAGS_hedge_ms, 0, 60000);
  spindle::StartRuntime();
  int exit_code = 0;
  {
    spindle::fanout::BackendPool pool(options.backends, options.channels_per_backend);
    spindle::fanout::QueryCounters counters;
    spindle::fanout::SpindleFrontend service(options, std::chrono::milliseconds(FLAGS_hedge_ms),
                                             &pool, &counters);
    grpc::ServerBuilder builder;
    int port = 0;
    spindle::fanout::AddListeningPort(&builder, options.port, &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || port == 0) {
      spindle::fanout::FailUsage("could not listen on port " + std::to_string(options.port));
    }
    spindle::fanout::PrintListening(port);
    spindle::grpc_fiber::ServeUntilSignal(signals, *server, std::chrono::seconds(2));
    counters.Print();
  }
  spindle::TerminateRuntime();
  return exit_code;
}
