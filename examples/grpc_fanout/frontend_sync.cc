// Copyright 2026 The Spindle Authors.
//
// frontend_sync --backends=HOST:PORT[,...] [--port=N] [--channels_per_backend=4]
//               [--fanout=8] [--deadline_ms=1000] [--sync_fanout=callback|threads]
//               [--sync_max_threads=0] [--sync_min_pollers=1] [--sync_max_pollers=2]
//
// The fan-out example's Frontend on gRPC's synchronous server API, the baseline a
// thread-per-call server gives: each Query holds one of gRPC's sync-server threads from
// arrival to reply. Its K backend calls go out either as callback-API client calls while
// the handler's thread waits on a condition variable (--sync_fanout=callback, the
// better way for a sync server), or as blocking stub calls from K std::async threads
// (--sync_fanout=threads). The first failed backend call fails the query with its status
// and cancels the others. The sync API has no cancellation callback, so the backend calls'
// ClientContexts come from ClientContext::FromServerContext: gRPC cancels them itself when
// the query is cancelled (the caller went away, its deadline passed, or shutdown), and the
// waiting handler never has to poll ServerContext::IsCancelled.
//
// Prints "listening on PORT" as its first stdout line; shuts down on SIGTERM/SIGINT
// (in-flight queries get 2 s) and prints its query counters.

#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "examples/grpc_fanout/frontend_flags.h"
#include "gflags/gflags.h"
#include "integrations/grpc/server.h"
#include "io/server.h"

DEFINE_string(sync_fanout, "callback",
              "How a handler makes its K backend calls: \"callback\" (callback-API client "
              "calls; the handler's thread waits on a condition variable) or \"threads\" "
              "(blocking stub calls from K std::async threads) (default \"callback\")");
DEFINE_int64(sync_max_threads, 0,
             "ResourceQuota::SetMaxThreads for the sync server's thread pool; 0 keeps gRPC's "
             "default (unlimited). A call that finds no thread left fails at once with "
             "RESOURCE_EXHAUSTED (default 0, range 0 or [2, 1000000])");
DEFINE_int64(sync_min_pollers, 1,
             "SetSyncServerOption(MIN_POLLERS): threads kept polling for new calls "
             "(default 1, gRPC's; range [1, 1024])");
DEFINE_int64(sync_max_pollers, 2,
             "SetSyncServerOption(MAX_POLLERS): a thread done with a call exits if this many "
             "already poll (default 2, gRPC's; range [--sync_min_pollers, 1024])");

namespace spindle::fanout {
namespace {

// A query's backend call contexts; ClientContext is neither copyable nor movable.
using ClientContexts = std::vector<std::unique_ptr<grpc::ClientContext>>;

enum class FanoutMode { kCallback, kThreads };

// The first failure among a query's backend calls. Thread-safe (a mutex).
class FirstFailure {
 public:
  // Records `status` if it is the first failure; returns true if so.
  bool Record(const grpc::Status& status) {
    if (status.ok()) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) return false;
    failed_ = true;
    status_ = status;
    return true;
  }
  bool failed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_;
  }
  grpc::Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }

 private:
  mutable std::mutex mu_;
  bool failed_ = false;
  grpc::Status status_;
};

// The Frontend service. Thread-safe: Query runs concurrently on the sync server's threads;
// it shares only the BackendPool (thread-safe), immutable options and atomic counters.
class SyncFrontend final : public Frontend::Service {
 public:
  SyncFrontend(const FrontendOptions& options, FanoutMode mode, BackendPool* pool,
               QueryCounters* counters)
      : options_(options), mode_(mode), pool_(pool), counters_(counters) {}

  grpc::Status Query(grpc::ServerContext* context, const QueryRequest* request,
                     QueryReply* reply) override {
    std::vector<WorkRequest> work;
    grpc::Status status = BuildWorkRequests(*request, options_.fanout, &work);
    if (status.ok()) {
      const auto deadline = QueryDeadline(context->deadline(), options_.deadline_ms);
      const auto k = static_cast<std::uint32_t>(work.size());
      std::vector<WorkReply> replies(k);
      ClientContexts contexts;
      contexts.reserve(k);
      for (std::uint32_t i = 0; i < k; ++i) {
        // Propagates cancellation (and the deadline, again) from the query to the call.
        contexts.push_back(grpc::ClientContext::FromServerContext(*context));
        contexts.back()->set_deadline(deadline);
      }
      FirstFailure failure;
      if (mode_ == FanoutMode::kCallback) {
        FanOutWithCallbacks(work, contexts, &replies, &failure);
      } else {
        FanOutWithThreads(work, contexts, &replies, &failure);
      }
      if (failure.failed()) {
        status = failure.status();
      } else {
        status = SumReplies(
            request->id(), k,
            [&replies](std::uint32_t i) -> const WorkReply& { return replies[i]; }, reply);
      }
    }
    counters_->Count(status);
    return status;
  }

 private:
  static void CancelAll(const ClientContexts& contexts) {
    for (const auto& context : contexts) context->TryCancel();
  }

  // Issues the K calls on the callback client API and waits on this thread until every
  // callback ran (at the latest, at the deadline). The callbacks run on gRPC's threads
  // and only record and notify.
  void FanOutWithCallbacks(const std::vector<WorkRequest>& work, const ClientContexts& contexts,
                           std::vector<WorkReply>* replies, FirstFailure* failure) {
    const std::size_t k = work.size();
    std::mutex mu;
    std::condition_variable done;
    std::size_t remaining = k;
    for (std::size_t i = 0; i < k; ++i) {
      pool_->NextStub()->async()->Work(
          contexts[i].get(), &work[i], &(*replies)[i],
          [&mu, &done, &remaining, &contexts, failure](grpc::Status status) {
            // Cancelling a context whose call has not started yet is fine: the call is
            // cancelled as it starts.
            if (failure->Record(status)) CancelAll(contexts);
            // Notify under the lock: once `remaining` is 0 the waiter may return and
            // destroy `mu` and `done`, which it cannot do before this unlocks.
            std::lock_guard<std::mutex> lock(mu);
            if (--remaining == 0) done.notify_one();
          });
    }
    std::unique_lock<std::mutex> lock(mu);
    done.wait(lock, [&remaining] { return remaining == 0; });
  }

  // Issues the K calls as blocking stub calls, each from its own std::async thread, and
  // waits for all of them.
  void FanOutWithThreads(const std::vector<WorkRequest>& work, const ClientContexts& contexts,
                         std::vector<WorkReply>* replies, FirstFailure* failure) {
    const std::size_t k = work.size();
    std::vector<std::future<void>> calls;
    calls.reserve(k);
    for (std::size_t i = 0; i < k; ++i) {
      Backend::Stub* stub = pool_->NextStub();
      calls.push_back(std::async(std::launch::async, [&, stub, i] {
        const grpc::Status status = stub->Work(contexts[i].get(), work[i], &(*replies)[i]);
        if (failure->Record(status)) CancelAll(contexts);
      }));
    }
    for (std::future<void>& call : calls) call.wait();
  }

  const FrontendOptions options_;
  const FanoutMode mode_;
  BackendPool* const pool_;
  QueryCounters* const counters_;
};

int Main(spindle::io::ShutdownSignals& signals) {
  const FrontendOptions options = FrontendOptionsFromFlags();
  FanoutMode mode = FanoutMode::kCallback;
  if (FLAGS_sync_fanout == "threads") {
    mode = FanoutMode::kThreads;
  } else if (FLAGS_sync_fanout != "callback") {
    FailUsage("--sync_fanout=" + FLAGS_sync_fanout + " is not one of: callback, threads");
  }
  if (FLAGS_sync_max_threads != 0 &&
      (FLAGS_sync_max_threads < 2 || FLAGS_sync_max_threads > 1'000'000)) {
    FailUsage("--sync_max_threads=" + std::to_string(FLAGS_sync_max_threads) +
              " is out of range: expected 0 (unlimited) or an integer in [2, 1000000]");
  }
  CheckFlagRange("sync_min_pollers", FLAGS_sync_min_pollers, 1, 1024);
  CheckFlagRange("sync_max_pollers", FLAGS_sync_max_pollers, FLAGS_sync_min_pollers, 1024);

  BackendPool pool(options.backends, options.channels_per_backend);
  const int ready =
      pool.WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (ready < static_cast<int>(pool.size())) {
    std::fprintf(stderr, "frontend_sync: only %d of %zu backend channels connected; going on\n",
                 ready, pool.size());
  }

  QueryCounters counters;
  SyncFrontend service(options, mode, &pool, &counters);
  grpc::ServerBuilder builder;
  int port = 0;
  AddListeningPort(&builder, options.port, &port);
  builder.RegisterService(&service);
  grpc::ResourceQuota quota("frontend_sync");
  if (FLAGS_sync_max_threads > 0) {
    quota.SetMaxThreads(static_cast<int>(FLAGS_sync_max_threads));
    builder.SetResourceQuota(quota);
  }
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS,
                              static_cast<int>(FLAGS_sync_min_pollers));
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              static_cast<int>(FLAGS_sync_max_pollers));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "frontend_sync: cannot serve on port %d\n", options.port);
    return 1;
  }
  PrintListening(port);

  // Until SIGTERM/SIGINT; then 2 s for the calls in flight, then they are cancelled.
  spindle::grpc_fiber::ServeUntilSignal(signals, *server, std::chrono::seconds(2));
  server.reset();
  counters.Print();
  return 0;
}

}  // namespace
}  // namespace spindle::fanout

int main(int argc, char** argv) {
  // Before any gRPC object, so that every gRPC thread inherits the blocked mask.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage(
      "the fan-out example's Frontend on gRPC's synchronous API (thread per call)");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return spindle::fanout::Main(signals);
}
