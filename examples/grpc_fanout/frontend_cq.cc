// Copyright 2026 The Spindle Authors.
//
// frontend_cq --backends=HOST:PORT[,...] [--port=N] [--channels_per_backend=4]
//             [--fanout=8] [--deadline_ms=1000] [--cq_count=NCPU] [--threads_per_cq=1]
//             [--requests_per_cq=64]
//
// The fan-out example's Frontend on gRPC's asynchronous completion-queue API, written by
// hand in the style of gRPC's own async QPS server: --cq_count server completion queues,
// each drained by --threads_per_cq threads calling Next(), and a state machine per call:
//
//   RequestQuery posted  --match-->  K backend calls (PrepareAsyncWork + StartCall +
//   Finish, on the same CQ)  --all K in-->  responder Finish  --done-->  delete
//
// --requests_per_cq RequestQuery calls stay posted on every CQ (each match posts a new
// one). ServerContext::AsyncNotifyWhenDone tells a call it was cancelled; that cancels its
// outstanding backend calls. The first failed backend call fails the query with its
// status and cancels the others.
//
// Prints "listening on PORT" as its first stdout line. On SIGTERM/SIGINT:
// Server::Shutdown(now + 2 s) while the CQ threads keep draining, then each CQ's Shutdown,
// then the threads drain their CQ until Next returns false, and exit.

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "examples/grpc_fanout/frontend_flags.h"
#include "gflags/gflags.h"
#include "integrations/grpc/server.h"
#include "io/server.h"

DEFINE_int64(cq_count, 0,
             "Server completion queues; 0 means one per hardware thread (default 0 = "
             "hardware threads, range [1, 256] when set)");
DEFINE_int64(threads_per_cq, 1,
             "Threads calling Next() on each completion queue (default 1, range [1, 16])");
DEFINE_int64(requests_per_cq, 64,
             "RequestQuery calls kept posted on each completion queue, i.e. queries each CQ "
             "can accept before its threads get to re-post (default 64, range [1, 100000])");

namespace spindle::fanout {
namespace {

// What every tag on a completion queue points to. Implementations say their own
// thread-safety.
class CqEvent {
 public:
  virtual void OnComplete(bool ok) = 0;

 protected:
  ~CqEvent() = default;
};

// A server completion queue and the guard on starting operations on it: gRPC aborts if an
// operation is started on a CQ after its Shutdown, so every start happens under a shared
// lock and Close() takes it exclusively, marks the CQ closed and shuts it down.
// Thread-safe.
class CqShard {
 public:
  explicit CqShard(std::unique_ptr<grpc::ServerCompletionQueue> cq) : cq_(std::move(cq)) {}

  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }

  // Runs `start` (which starts operations on cq()) unless the CQ is closed; returns
  // whether it ran.
  template <typename F>
  bool StartIfOpen(F&& start) {
    std::shared_lock<std::shared_mutex> lock(mu_);
    if (closed_) return false;
    start();
    return true;
  }

  void Close() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    closed_ = true;
    cq_->Shutdown();
  }

  // Runs events until the CQ is shut down and empty.
  void Drain() {
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) static_cast<CqEvent*>(tag)->OnComplete(ok);
  }

 private:
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::shared_mutex mu_;
  bool closed_ = false;
};

// What every call shares. Immutable after construction except the thread-safe parts.
struct CqServerState {
  FrontendOptions options;
  Frontend::AsyncService service;
  BackendPool* pool = nullptr;
  QueryCounters* counters = nullptr;
};

class QueryCall;

// A tag that forwards to one of QueryCall's handlers. Thread-safe as its target is.
class QueryEvent final : public CqEvent {
 public:
  QueryEvent(QueryCall* call, void (QueryCall::*handler)(bool)) : call_(call), handler_(handler) {}
  void OnComplete(bool ok) override { (call_->*handler_)(ok); }

 private:
  QueryCall* const call_;
  void (QueryCall::*const handler_)(bool);
};

// One backend call of a query, and its completion tag. Written by the CQ (reply, status)
// before its tag comes back; the owning QueryCall reads it after. Thread-compatible; the
// parent serializes.
class BackendCall final : public CqEvent {
 public:
  explicit BackendCall(QueryCall* parent) : parent_(parent) {}
  void OnComplete(bool ok) override;

  grpc::ClientContext context;
  WorkReply reply;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<WorkReply>> rpc;

 private:
  QueryCall* const parent_;
};

// One Query from RequestQuery to deletion. Events come from the CQ it was requested on,
// possibly on several threads (--threads_per_cq > 1) and concurrently (a backend reply
// and the done notification); `mu_` serializes them. Deletes itself once both the
// responder's Finish and the done notification have come back (or when its RequestQuery
// fails, which happens only at shutdown).
class QueryCall {
 public:
  QueryCall(CqServerState* state, CqShard* shard)
      : state_(state),
        shard_(shard),
        responder_(&context_),
        requested_(this, &QueryCall::OnRequested),
        done_(this, &QueryCall::OnDoneNotified),
        finished_(this, &QueryCall::OnFinished) {}

  // Posts a QueryCall on `shard`'s CQ; deletes it at once if the CQ is closed.
  static void Post(CqServerState* state, CqShard* shard) {
    auto* call = new QueryCall(state, shard);
    const bool posted = shard->StartIfOpen([call, state, shard] {
      // Must precede the request. Its tag comes back only if the call is matched.
      call->context_.AsyncNotifyWhenDone(&call->done_);
      state->service.RequestQuery(&call->context_, &call->request_, &call->responder_, shard->cq(),
                                  shard->cq(), &call->requested_);
    });
    if (!posted) delete call;
  }

  void OnBackendDone(BackendCall* backend) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!backend->status.ok() && failure_.ok()) {
      failure_ = backend->status;
      CancelBackendCalls();
    }
    if (--remaining_ > 0) return;
    grpc::Status status = failure_;
    if (status.ok()) {
      status = SumReplies(
          request_.id(), static_cast<std::uint32_t>(backends_.size()),
          [this](std::uint32_t i) -> const WorkReply& { return backends_[i]->reply; }, &reply_);
    }
    FinishLocked(status);
    MaybeDelete(std::move(lock));
  }

 private:
  void OnRequested(bool ok) {
    if (!ok) {
      // The server is shutting down and this request was never matched: no other tag
      // of this call will come back.
      delete this;
      return;
    }
    Post(state_, shard_);  // keep --requests_per_cq posted
    std::unique_lock<std::mutex> lock(mu_);
    std::vector<WorkRequest> work;
    const grpc::Status status = BuildWorkRequests(request_, state_->options.fanout, &work);
    if (!status.ok()) {
      FinishLocked(status);
      MaybeDelete(std::move(lock));
      return;
    }
    const auto deadline = QueryDeadline(context_.deadline(), state_->options.deadline_ms);
    backends_.reserve(work.size());
    for (std::size_t i = 0; i < work.size(); ++i) {
      backends_.push_back(std::make_unique<BackendCall>(this));
      backends_.back()->context.set_deadline(deadline);
    }
    remaining_ = backends_.size();
    const bool started = shard_->StartIfOpen([&] {
      for (std::size_t i = 0; i < backends_.size(); ++i) {
        BackendCall* backend = backends_[i].get();
        backend->rpc =
            state_->pool->NextStub()->PrepareAsyncWork(&backend->context, work[i], shard_->cq());
        backend->rpc->StartCall();
        backend->rpc->Finish(&backend->reply, &backend->status, backend);
      }
    });
    if (!started) {
      // Closed between the match and here (shutdown): nothing can be started or finished.
      remaining_ = 0;
      finish_returned_ = true;
      MaybeDelete(std::move(lock));
    }
  }

  void OnDoneNotified(bool /*ok*/) {
    std::unique_lock<std::mutex> lock(mu_);
    done_returned_ = true;
    // IsCancelled is safe only now that the done tag has come back.
    if (context_.IsCancelled() && remaining_ > 0) CancelBackendCalls();
    MaybeDelete(std::move(lock));
  }

  void OnFinished(bool /*ok*/) {
    std::unique_lock<std::mutex> lock(mu_);
    finish_returned_ = true;
    MaybeDelete(std::move(lock));
  }

  void CancelBackendCalls() {
    for (auto& backend : backends_) backend->context.TryCancel();
  }

  // Sends the reply, or the status alone when it is not OK.
  void FinishLocked(const grpc::Status& status) {
    state_->counters->Count(status);
    const bool started = shard_->StartIfOpen([&] {
      if (status.ok()) {
        responder_.Finish(reply_, status, &finished_);
      } else {
        responder_.FinishWithError(status, &finished_);
      }
    });
    if (!started) finish_returned_ = true;  // no tag will come back
  }

  void MaybeDelete(std::unique_lock<std::mutex> lock) {
    const bool all_back = done_returned_ && finish_returned_;
    lock.unlock();
    if (all_back) delete this;
  }

  CqServerState* const state_;
  CqShard* const shard_;
  grpc::ServerContext context_;
  QueryRequest request_;
  QueryReply reply_;
  grpc::ServerAsyncResponseWriter<QueryReply> responder_;
  QueryEvent requested_;
  QueryEvent done_;
  QueryEvent finished_;

  std::mutex mu_;
  std::vector<std::unique_ptr<BackendCall>> backends_;
  std::size_t remaining_ = 0;
  grpc::Status failure_;
  bool done_returned_ = false;
  bool finish_returned_ = false;
};

void BackendCall::OnComplete(bool /*ok*/) {
  // A client Finish always comes back with ok = true; the outcome is in `status`.
  parent_->OnBackendDone(this);
}

int Main(spindle::io::ShutdownSignals& signals) {
  const FrontendOptions options = FrontendOptionsFromFlags();
  int cq_count = static_cast<int>(FLAGS_cq_count);
  if (cq_count == 0) {
    cq_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  CheckFlagRange("cq_count", cq_count, 1, 256);
  CheckFlagRange("threads_per_cq", FLAGS_threads_per_cq, 1, 16);
  CheckFlagRange("requests_per_cq", FLAGS_requests_per_cq, 1, 100'000);

  BackendPool pool(options.backends, options.channels_per_backend);
  const int ready =
      pool.WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5));
  if (ready < static_cast<int>(pool.size())) {
    std::fprintf(stderr, "frontend_cq: only %d of %zu backend channels connected; going on\n",
                 ready, pool.size());
  }

  QueryCounters counters;
  CqServerState state;
  state.options = options;
  state.pool = &pool;
  state.counters = &counters;

  grpc::ServerBuilder builder;
  int port = 0;
  AddListeningPort(&builder, options.port, &port);
  builder.RegisterService(&state.service);
  std::vector<std::unique_ptr<CqShard>> shards;
  for (int i = 0; i < cq_count; ++i) {
    shards.push_back(std::make_unique<CqShard>(builder.AddCompletionQueue()));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    std::fprintf(stderr, "frontend_cq: cannot serve on port %d\n", options.port);
    for (auto& shard : shards) {
      shard->Close();
      shard->Drain();
    }
    return 1;
  }

  for (auto& shard : shards) {
    for (int i = 0; i < FLAGS_requests_per_cq; ++i) QueryCall::Post(&state, shard.get());
  }
  std::vector<std::thread> threads;
  for (auto& shard : shards) {
    for (int i = 0; i < FLAGS_threads_per_cq; ++i) {
      threads.emplace_back([&shard] { shard->Drain(); });
    }
  }
  PrintListening(port);

  // Until SIGTERM/SIGINT; then 2 s for the calls in flight, then they are cancelled.
  spindle::grpc_fiber::ServeUntilSignal(signals, *server, std::chrono::seconds(2));
  for (auto& shard : shards) shard->Close();
  for (std::thread& thread : threads) thread.join();
  server.reset();
  shards.clear();
  counters.Print();
  return 0;
}

}  // namespace
}  // namespace spindle::fanout

int main(int argc, char** argv) {
  // Before any gRPC object, so that every gRPC thread inherits the blocked mask.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage("the fan-out example's Frontend on gRPC's completion-queue (async) API");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return spindle::fanout::Main(signals);
}
