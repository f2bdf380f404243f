// Copyright 2026 The Spindle Authors.
//
// frontend_callback --backends=HOST:PORT[,...] [--port=N] [--channels_per_backend=4]
//                   [--fanout=8] [--deadline_ms=1000]
//
// The fan-out example's Frontend on gRPC's callback API, written by hand and never
// blocking: Query returns a ServerUnaryReactor that issues its K backend calls as
// callback-API client calls; the last of their callbacks sums the replies and finishes
// the query. The first failed backend call fails the query with its status and cancels
// the others; OnCancel (the caller went away, its deadline passed, or shutdown) cancels
// the outstanding backend calls.
//
// Prints "listening on PORT" as its first stdout line; shuts down on SIGTERM/SIGINT
// (in-flight queries get 2 s) and prints its query counters.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "examples/grpc_fanout/frontend_flags.h"
#include "gflags/gflags.h"
#include "integrations/grpc/server.h"
#include "io/server.h"

namespace spindle::fanout {
namespace {

// One Query: started in the constructor (inside the method handler), finished by the
// last backend callback, deleted in OnDone.
// Thread-safe: backend callbacks run concurrently on gRPC's callback threads and OnCancel
// on its executor; `mu_` guards `remaining_` and `failure_`. The ClientContexts are
// TryCancel'ed under `mu_`, which is safe because client callbacks never run inline
// inside TryCancel. Nothing touches `this` after the Finish that the last callback makes.
class QueryReactor final : public grpc::ServerUnaryReactor {
 public:
  QueryReactor(grpc::CallbackServerContext* context, const QueryRequest* request, QueryReply* reply,
               const FrontendOptions& options, BackendPool* pool, QueryCounters* counters)
      : request_(request), reply_(reply), counters_(counters) {
    const grpc::Status status = BuildWorkRequests(*request, options.fanout, &work_);
    if (!status.ok()) {
      Complete(status);
      return;
    }
    const auto k = static_cast<std::uint32_t>(work_.size());
    const auto deadline = QueryDeadline(context->deadline(), options.deadline_ms);
    replies_.resize(k);
    contexts_.reset(new grpc::ClientContext[k]);
    remaining_ = k;
    for (std::uint32_t i = 0; i < k; ++i) contexts_[i].set_deadline(deadline);
    // The first callbacks may run before the loop ends; they only see started contexts
    // or cancel unstarted ones, which cancels those calls as they start.
    for (std::uint32_t i = 0; i < k; ++i) {
      pool->NextStub()->async()->Work(&contexts_[i], &work_[i], &replies_[i],
                                      [this](grpc::Status s) { OnBackendDone(s); });
    }
  }

  void OnCancel() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (remaining_ > 0) CancelBackendCalls();
  }

  void OnDone() override { delete this; }

 private:
  void OnBackendDone(const grpc::Status& status) {
    bool last = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!status.ok() && failure_.ok()) {
        failure_ = status;
        CancelBackendCalls();
      }
      last = --remaining_ == 0;
    }
    if (!last) return;
    if (!failure_.ok()) {
      Complete(failure_);
      return;
    }
    Complete(SumReplies(
        request_->id(), static_cast<std::uint32_t>(replies_.size()),
        [this](std::uint32_t i) -> const WorkReply& { return replies_[i]; }, reply_));
  }

  void CancelBackendCalls() {
    for (std::size_t i = 0; i < work_.size(); ++i) contexts_[i].TryCancel();
  }

  // The one Finish. `this` may be deleted (OnDone) as soon as it is called.
  void Complete(const grpc::Status& status) {
    counters_->Count(status);
    Finish(status);
  }

  const QueryRequest* const request_;
  QueryReply* const reply_;
  QueryCounters* const counters_;
  std::vector<WorkRequest> work_;
  std::vector<WorkReply> replies_;
  std::unique_ptr<grpc::ClientContext[]> contexts_;
  std::mutex mu_;
  std::size_t remaining_ = 0;
  grpc::Status failure_;
};

// The Frontend service. Thread-safe: Query runs concurrently on gRPC's callback threads
// and only creates a reactor; it shares the thread-safe BackendPool and counters.
class CallbackFrontend final : public Frontend::CallbackService {
 public:
  CallbackFrontend(const FrontendOptions& options, BackendPool* pool, QueryCounters* counters)
      : options_(options), pool_(pool), counters_(counters) {}

  grpc::ServerUnaryReactor* Query(grpc::CallbackServerContext* context, const QueryRequest* request,
                                  QueryReply* reply) override {
    return new QueryReactor(context, request, reply, options_, pool_, counters_);
  }

 private:
  const FrontendOptions options_;
  BackendPool* const pool_;
  QueryCounters* const counters_;
};

int Main(spindle::io::ShutdownSignals& signals) {
  const FrontendOptions options = FrontendOptionsFromFlags();
  BackendPool pool(options.backends, options.channels_per_backend);
  const int ready =
      pool.WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (ready < static_cast<int>(pool.size())) {
    std::fprintf(stderr, "frontend_callback: only %d of %zu backend channels connected; going on\n",
                 ready, pool.size());
  }

  QueryCounters counters;
  CallbackFrontend service(options, &pool, &counters);
  grpc::ServerBuilder builder;
  int port = 0;
  AddListeningPort(&builder, options.port, &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "frontend_callback: cannot serve on port %d\n", options.port);
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
  gflags::SetUsageMessage("the fan-out example's Frontend on gRPC's callback API");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return spindle::fanout::Main(signals);
}
