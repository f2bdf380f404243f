// Copyright 2026 The Spindle Authors.
//
// Fiber-blocking gRPC client calls on generated stubs: the calling fiber parks until the
// answer is in, its worker runs other fibers meanwhile (a plain thread blocks). Each call
// takes the caller's execution context (fiber/execution_context.h) into its
// grpc::ClientContext: the context's deadline becomes the call's deadline (the earlier
// of the two, if the ClientContext has one), and cancelling the context cancels the call
// (ClientContext::TryCancel()). A handler served through integrations/grpc/server.h runs
// in its call's context, so a chain frontend -> backend -> backend cancels as a whole
// when the client at its head cancels, goes away or reaches its deadline.
//
//   grpc::ClientContext context;       // one per call, as gRPC requires
//   demo::Msg reply;
//   grpc::Status status = spindle::grpc_fiber::Call(context, [&](auto done) {
//     stub->async()->Say(&context, &request, &reply, std::move(done));
//   });
//
//   grpc::ClientContext stream_context;
//   spindle::grpc_fiber::ClientReader<demo::Msg> updates(stream_context, [&](auto* reactor) {
//     stub->async()->Watch(&stream_context, &request, reactor);
//   });
//   demo::Msg update;
//   while (updates.Read(&update)) Apply(update);
//   grpc::Status end = updates.Finish();
//
// Hedged or raced calls: start each in a fiber (spindle::Async) whose execution context
// is a child of the caller's tied to a StopSource, and give that source to WhenAny() as
// `cancel_rest`: the first answer wins and the other calls are cancelled (see
// docs/grpc.md).

#ifndef SPINDLE_INTEGRATIONS_GRPC_CLIENT_H_
#define SPINDLE_INTEGRATIONS_GRPC_CLIENT_H_

#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include "fiber/execution_context.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/client_callback.h"
#include "integrations/grpc/internal/op_slot.h"
#include "sync/event.h"
#include "sync/future.h"
#include "sync/stop_token.h"

namespace spindle::grpc_fiber {

namespace internal {

// Sets `context`'s deadline to the caller's execution context's when that is earlier
// (or when `context` has none).
void ApplyCallerDeadline(grpc::ClientContext& context);

// Stops the process with a message if `context` has carried a call already (gRPC allows
// one call per ClientContext, and would abort without saying why).
void CheckFreshContext(grpc::ClientContext& context);
// Stops the process with a message if `start`/`bind` returned without starting a call
// on `context` (nothing would ever complete it).
void CheckStarted(grpc::ClientContext& context, const char* function);

// Cancels a ClientContext when the caller's execution context is cancelled, for as long
// as it lives. Thread-safety: construct and destroy on the calling fiber; the stop may
// come from any thread.
class CancelWithCaller {
 public:
  explicit CancelWithCaller(grpc::ClientContext& context)
      : on_stop_(ExecutionContext::CurrentStopToken(), TryCancel{&context}) {}

 private:
  struct TryCancel {
    grpc::ClientContext* context;
    // ClientContext::TryCancel() is thread-safe, and a call started after it is
    // cancelled at its start.
    void operator()() const { context->TryCancel(); }
  };
  StopCallback<TryCancel> on_stop_;
};

}  // namespace internal

// Makes a unary call and parks the caller until its answer is in; returns the call's
// status. `start(done)` starts the call on a generated stub's async() interface, with
// `done` as its callback (a std::function<void(grpc::Status)>):
//
//   grpc::Status status = Call(context, [&](auto done) {
//     stub->async()->Method(&context, &request, &reply, std::move(done));
//   });
//
// `context` must be a fresh ClientContext (gRPC does not reuse one), and `context`,
// the request and the reply must outlive the call: they do when they are the caller's
// locals, since Call() returns only after gRPC's callback. The caller's execution
// context's deadline and cancellation apply (see above): a cancelled or expired context
// gives CANCELLED or DEADLINE_EXCEEDED. Callable from fibers and plain threads.
template <class Start>
grpc::Status Call(grpc::ClientContext& context, Start&& start) {
  static_assert(std::is_invocable_v<Start&, std::function<void(grpc::Status)>>,
                "Call: start(done) takes the std::function<void(grpc::Status)> to pass to "
                "the stub's async() method");
  internal::CheckFreshContext(context);
  internal::ApplyCallerDeadline(context);
  internal::CancelWithCaller cancel(context);
  Event done;
  grpc::Status status;
  try {
    start(std::function<void(grpc::Status)>([&done, &status](grpc::Status s) {
      status = std::move(s);  // published by Set(), read after Wait()
      done.Set();
    }));
  } catch (...) {
    // A call started before the exception still calls back into this frame: end it
    // first.
    if (context.c_call() != nullptr) {
      context.TryCancel();
      done.Wait();
    }
    throw;
  }
  internal::CheckStarted(context, "Call");
  // Not interruptible: gRPC still uses `context` and the reply until its callback.
  // The caller's cancellation reaches the call through `cancel`, its deadline through
  // the ClientContext, and gRPC then answers at once.
  done.Wait();
  return status;
}

// Starts a unary call as Call() does and returns at once: the future of its status,
// for fanning out without a fiber per call (`WhenAll()` of several, then
// `BlockingGet()`: the caller is woken once, when the last is in). The caller's
// execution context at this call (its deadline and cancellation) applies to the call.
// `context`, the request and the reply must outlive the future's fulfilment (wait for
// it before they go); the future's continuations run on gRPC's thread, so they should
// be short. Callable from fibers and plain threads.
template <class Start>
Future<grpc::Status> CallAsync(grpc::ClientContext& context, Start&& start) {
  static_assert(std::is_invocable_v<Start&, std::function<void(grpc::Status)>>,
                "CallAsync: start(done) takes the std::function<void(grpc::Status)> to pass "
                "to the stub's async() method");
  internal::CheckFreshContext(context);
  internal::ApplyCallerDeadline(context);
  // The cancellation link lives until gRPC's callback, which destroys it (after the
  // callback, no TryCancel may touch a context its owner is free to destroy).
  struct Pending {
    explicit Pending(grpc::ClientContext& context) : cancel(context) {}
    internal::CancelWithCaller cancel;
    Promise<grpc::Status> promise;
  };
  Pending* const pending = new Pending(context);
  Future<grpc::Status> future = pending->promise.GetFuture();
  try {
    start(std::function<void(grpc::Status)>([pending](grpc::Status s) {
      std::unique_ptr<Pending> done(pending);
      Promise<grpc::Status> promise = std::move(done->promise);
      done.reset();  // unlinks from the caller's stop first: waits for a running TryCancel
      promise.SetValue(std::move(s));
    }));
  } catch (...) {
    // Without a call, nobody calls back: the state is ours to free. With one, the
    // callback frees it; the call is cancelled, its outcome dropped with the future.
    if (context.c_call() == nullptr) {
      delete pending;
    } else {
      context.TryCancel();
    }
    throw;
  }
  internal::CheckStarted(context, "CallAsync");
  return future;
}

// The parts the streaming readers and writers share: their reactor's start, hold and
// end. Thread-safety: as the class using it says.
template <class Reactor>
class ClientStreamBase : public Reactor {
 public:
  ClientStreamBase(const ClientStreamBase&) = delete;
  ClientStreamBase& operator=(const ClientStreamBase&) = delete;

  // Waits for the call's end and returns its status. Call it after the last Read()
  // (which returned false) or after WritesDone(); calling it earlier cancels the call
  // first (the server sees CANCELLED) so that it cannot wait for ever. Once; later
  // calls return the same status.
  grpc::Status Finish() {
    if (!finished_) {
      finished_ = true;
      if (!ends_on_its_own_) context_.TryCancel();
      this->RemoveHold();  // the hold added before StartCall(): OnDone may now come
      done_.Wait();
    }
    return status_;
  }

 protected:
  explicit ClientStreamBase(grpc::ClientContext& context)
      : context_(context), cancel_((internal::CheckFreshContext(context), context)) {
    internal::ApplyCallerDeadline(context);
  }

  // Called by the final class's constructor: `bind(reactor)` binds the call to the stub;
  // then the call starts. If bind throws after binding, the call is started, cancelled
  // and waited for (gRPC requires every bound reactor to be started), and the exception
  // propagates.
  template <class Bind, class BaseReactor>
  void BindAndStart(Bind& bind, BaseReactor* reactor) {
    try {
      bind(reactor);
    } catch (...) {
      if (context_.c_call() != nullptr) {
        Begin();
        EndIfUnfinished();
      }
      throw;
    }
    internal::CheckStarted(context_, "a streaming call's bind");
    Begin();
  }

  bool finished() const { return finished_; }
  // The final classes' destructors call this first, while the object is whole (gRPC
  // may still call its reactions): cancels an unfinished call and waits for its end,
  // since gRPC's reactor may not be destroyed before OnDone.
  void EndIfUnfinished() {
    if (!finished_) {
      ends_on_its_own_ = false;
      Finish();
    }
  }

  // Called by the derived constructor once the stub has bound this reactor: holds the
  // call open for the fiber's own operations (they are not started from reactions),
  // then starts it.
  void Begin() {
    this->AddHold();
    this->StartCall();
  }

  void OnDone(const grpc::Status& status) override {
    status_ = status;  // published by Set(), read after Wait()
    done_.Set();
  }

  grpc::ClientContext& context_;
  bool ends_on_its_own_ = false;  // the read side saw the end, or writes are done

 private:
  internal::CancelWithCaller cancel_;
  bool finished_ = false;
  grpc::Status status_;
  Event done_;
};

// A server-streaming call read by a fiber. Construct it with the ClientContext and a
// function that binds it to the stub (`stub->async()->Method(&context, &request,
// reactor)`); Read() until false, then Finish() for the status.
//
// Thread-safety: one fiber (or thread) uses it. `context` and the request must outlive
// it. Destroying it before Finish() cancels the call and waits for its end.
template <class Response>
class ClientReader final : private ClientStreamBase<grpc::ClientReadReactor<Response>> {
  using Base = ClientStreamBase<grpc::ClientReadReactor<Response>>;

 public:
  // Binds the call (`bind(reactor)` passes the reactor to the stub's async() method)
  // and starts it.
  template <class Bind>
  ClientReader(grpc::ClientContext& context, Bind&& bind) : Base(context) {
    this->BindAndStart(bind, static_cast<grpc::ClientReadReactor<Response>*>(this));
  }
  ~ClientReader() override { this->EndIfUnfinished(); }

  using Base::Finish;

  // The next message: true with one; false at the stream's end or once the call has
  // failed (then Finish() says why). Parks the caller.
  bool Read(Response* message) {
    if (this->ends_on_its_own_ || this->finished()) return false;
    reads_.Begin();
    this->StartRead(message);
    if (!reads_.Wait()) this->ends_on_its_own_ = true;
    return !this->ends_on_its_own_;
  }

 private:
  void OnReadDone(bool ok) override { reads_.Complete(ok); }

  internal::OpSlot reads_{"Read"};
};

// A client-streaming call written by a fiber: Write() each request, WritesDone(), then
// Finish() for the status (the reply is in the message given to the stub).
//
// Thread-safety: one fiber (or thread) uses it. `context` and the reply must outlive
// it. Destroying it before Finish() cancels the call and waits for its end.
template <class Request>
class ClientWriter final : private ClientStreamBase<grpc::ClientWriteReactor<Request>> {
  using Base = ClientStreamBase<grpc::ClientWriteReactor<Request>>;

 public:
  // Binds the call (`bind(reactor)`: the stub's async() method with &reply) and starts
  // it.
  template <class Bind>
  ClientWriter(grpc::ClientContext& context, Bind&& bind) : Base(context) {
    this->BindAndStart(bind, static_cast<grpc::ClientWriteReactor<Request>*>(this));
  }
  ~ClientWriter() override { this->EndIfUnfinished(); }

  using Base::Finish;

  // Sends `message`, parking the caller until gRPC has taken it (flow control: a slow
  // server parks the writer). False once the call has failed (Finish() says why), and
  // after WritesDone() or Finish().
  bool Write(const Request& message, grpc::WriteOptions options = grpc::WriteOptions()) {
    if (this->ends_on_its_own_ || this->finished()) return false;
    writes_.Begin();
    this->StartWrite(&message, options);
    if (writes_.Wait()) return true;
    this->ends_on_its_own_ = true;  // the call is over: Finish() waits for its status
    return false;
  }
  // Tells the server no more requests come; parks until gRPC has sent that. False if
  // the call has failed, or after an earlier WritesDone() or Finish().
  bool WritesDone() {
    if (this->ends_on_its_own_ || this->finished()) return false;
    this->ends_on_its_own_ = true;
    writes_.Begin();
    this->StartWritesDone();
    return writes_.Wait();
  }

 private:
  void OnWriteDone(bool ok) override { writes_.Complete(ok); }
  void OnWritesDoneDone(bool ok) override { writes_.Complete(ok); }

  internal::OpSlot writes_{"Write"};
};

// A bidirectional-streaming call: one fiber may Read() while another Write()s.
// WritesDone() after the last write, Read() until false, then Finish().
//
// Thread-safety: one reading and one writing fiber (each direction one at a time);
// Finish() once both are done. `context` must outlive it. Destroying it before Finish()
// cancels the call and waits for its end.
template <class Request, class Response>
class ClientReaderWriter final
    : private ClientStreamBase<grpc::ClientBidiReactor<Request, Response>> {
  using Base = ClientStreamBase<grpc::ClientBidiReactor<Request, Response>>;

 public:
  // Binds the call (`bind(reactor)`: the stub's async() method) and starts it.
  template <class Bind>
  ClientReaderWriter(grpc::ClientContext& context, Bind&& bind) : Base(context) {
    this->BindAndStart(bind, static_cast<grpc::ClientBidiReactor<Request, Response>*>(this));
  }
  ~ClientReaderWriter() override { this->EndIfUnfinished(); }

  // As ClientReader::Read().
  bool Read(Response* message) {
    if (read_end_ || this->finished()) return false;
    reads_.Begin();
    this->StartRead(message);
    if (!reads_.Wait()) read_end_ = true;
    return !read_end_;
  }
  // As ClientWriter::Write().
  bool Write(const Request& message, grpc::WriteOptions options = grpc::WriteOptions()) {
    if (writes_over_ || this->finished()) return false;
    writes_.Begin();
    this->StartWrite(&message, options);
    if (writes_.Wait()) return true;
    writes_over_ = true;
    return false;
  }
  // As ClientWriter::WritesDone().
  bool WritesDone() {
    if (writes_over_ || this->finished()) return false;
    writes_over_ = true;
    writes_.Begin();
    this->StartWritesDone();
    return writes_.Wait();
  }
  // As ClientStreamBase::Finish(): the call ends on its own once the reader has seen
  // the end; before that, Finish() cancels it.
  grpc::Status Finish() {
    this->ends_on_its_own_ = read_end_;
    return Base::Finish();
  }

 private:
  void OnReadDone(bool ok) override { reads_.Complete(ok); }
  void OnWriteDone(bool ok) override { writes_.Complete(ok); }
  void OnWritesDoneDone(bool ok) override { writes_.Complete(ok); }

  internal::OpSlot reads_{"Read"};
  internal::OpSlot writes_{"Write"};
  bool read_end_ = false;     // the reading fiber's
  bool writes_over_ = false;  // the writing fiber's: WritesDone() or a failed Write()
};

}  // namespace spindle::grpc_fiber

#endif  // SPINDLE_INTEGRATIONS_GRPC_CLIENT_H_
