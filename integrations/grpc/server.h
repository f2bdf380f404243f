// Copyright 2026 The Spindle Authors.
//
// gRPC services whose handlers are fibers: each call of a method runs, in the blocking
// style, in a Spindle fiber of its own; reading or writing a stream parks that fiber,
// never a gRPC thread. Keep gRPC's generated CallbackService and write each method as
// one line that hands the call to a fiber:
//
//   class EchoService final : public demo::Echo::CallbackService {
//     grpc::ServerUnaryReactor* Say(grpc::CallbackServerContext* context,
//                                   const demo::Msg* request, demo::Msg* reply) override {
//       return spindle::grpc_fiber::ServeUnary(context, [=] {
//         reply->set_text(LookUp(request->text()));   // may park: mutexes, sockets, calls
//         return grpc::Status::OK;
//       });
//     }
//     grpc::ServerWriteReactor<demo::Msg>* Watch(grpc::CallbackServerContext* context,
//                                               const demo::Msg* request) override {
//       return spindle::grpc_fiber::ServeServerStreaming<demo::Msg>(
//           context, [=](spindle::grpc_fiber::ServerWriter<demo::Msg>& writer) {
//             demo::Msg update;
//             while (NextUpdate(&update)) {
//               if (!writer.Write(update)) break;   // parks while the client is slow
//             }
//             return grpc::Status::OK;
//           });
//     }
//   };
//
// The call's deadline and cancellation reach the handler as its execution context's
// (fiber/execution_context.h): the handler runs in a context whose deadline is the
// call's and which is cancelled when the client cancels or goes away, when the call's
// deadline passes, or when the server shuts down past its drain time. Every
// interruptible Spindle wait in the handler (sync/ timed waits, sockets, RunBlocking
// with a deadline, BlockingTryGet, calls made with integrations/grpc/client.h) then
// ends with its cancelled or deadline result, and the backend calls the handler makes
// through client.h are cancelled with it.
//
// The cancellation runs on gRPC's thread (its executor, for OnCancel): the
// StopCallbacks registered in the handler's context run there, so keep them short (a
// flag, a TryCancel, a socket's shutdown), as every StopCallback should be. The
// handler's captures are destroyed on gRPC's thread too, when the call is done.
//
// A handler that starts fibers of its own on its stream (a reader beside the writer of
// a bidirectional call) must join them before it returns: the stream is gone once the
// call is finished.
//
// A call whose deadline passes (or which is cancelled) while its fiber waits for a
// worker is answered DEADLINE_EXCEEDED (CANCELLED) without running its handler, so an
// overloaded server spends no work on answers nobody waits for.
//
// A handler returns the call's status. An exception out of it answers the call with
// UNKNOWN (its what() in the message), is counted in ServerStats::handler_exceptions and
// logged (at most once a second); the server goes on serving.

#ifndef SPINDLE_INTEGRATIONS_GRPC_SERVER_H_
#define SPINDLE_INTEGRATIONS_GRPC_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "fiber/execution_context.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/server_callback.h"
#include "integrations/grpc/internal/op_slot.h"
#include "io/server.h"

namespace spindle::grpc_fiber {

namespace internal {

// The status of a call whose handler's fiber could not be started.
inline grpc::Status OutOfMemoryStatus() {
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                      "out of memory starting the handler's fiber");
}

// What every kind of call shares, out of line (server.cc): the execution context made
// from the call's deadline, the handler's fiber, its exception handling and counters.
//
// Thread-safety: OnCancelled() from gRPC's threads; the rest from the handler's fiber.
// Owned by the call's reactor, which lives until gRPC's OnDone.
class ServerCallCore {
 public:
  explicit ServerCallCore(grpc::CallbackServerContext* server_context);
  ServerCallCore(const ServerCallCore&) = delete;
  ServerCallCore& operator=(const ServerCallCore&) = delete;

  // Runs `body` in a new detached fiber; gRPC's thread returns at once. False (logged)
  // if the fiber could not be started for want of memory: the reactor then finishes
  // the call itself.
  bool StartFiber(absl::AnyInvocable<void()> body);
  // Runs `handler` in the call's execution context and returns its status; an
  // exception out of it becomes UNKNOWN (counted and logged).
  grpc::Status RunHandler(absl::FunctionRef<grpc::Status()> handler);
  // OnCancel: cancels the execution context (wakes every interruptible wait in it).
  void OnCancelled();
  // OnDone: counts the call finished.
  void OnDone();

  // Waits for `slot`'s operation interruptibly; if the wait is interrupted (the context
  // is cancelled or past its deadline), cancels the gRPC call so that gRPC completes the
  // operation (with false), and waits for that.
  bool Wait(OpSlot& slot) {
    return slot.WaitInterruptibly([this] { server_context_->TryCancel(); });
  }

  grpc::CallbackServerContext* server_context() const { return server_context_; }

 private:
  grpc::CallbackServerContext* const server_context_;
  const std::shared_ptr<ExecutionContext> context_;
};

}  // namespace internal

// Counts over every call served through this file since the process started (relaxed
// snapshots, exact once the server is quiet).
struct ServerStats {
  std::uint64_t started = 0;             // handlers started in their fibers
  std::uint64_t finished = 0;            // calls gRPC reported done (OnDone)
  std::uint64_t cancelled = 0;           // calls gRPC cancelled: client, deadline, shutdown
  std::uint64_t handler_exceptions = 0;  // handlers ended by an exception (UNKNOWN)
  // Calls answered without running their handler: cancelled, or past their deadline,
  // by the time their fiber started (DEADLINE_EXCEEDED or CANCELLED).
  std::uint64_t expired_before_start = 0;
};
// The counts now. Thread-safe; never fails.
ServerStats GetServerStats();

// What a server-streaming handler writes through. Write() parks the handler's fiber
// until gRPC has taken the message (the transport's flow control holds it while the
// client reads slowly, so a slow client parks the writer and the server's memory stays
// bounded: one message per call in flight, plus the HTTP/2 window).
//
// Thread-safety: one Write() at a time (a second concurrent one stops the process with
// a message). The call's reactor owns it; valid while the handler runs.
template <class Response>
class ServerWriter {
 public:
  // Sends `message`; true once gRPC has taken it, false if the call is over (cancelled,
  // past its deadline, the client gone): then no later Write() succeeds and the
  // handler should return. `message` may be reused once Write() returns. Interruptible:
  // a cancellation or deadline of the caller's execution context ends it (false) and
  // cancels the call.
  bool Write(const Response& message) { return Write(message, grpc::WriteOptions()); }
  // Write() with gRPC's options (e.g. set_buffer_hint() to let gRPC batch writes).
  bool Write(const Response& message, grpc::WriteOptions options) {
    writes_.Begin();
    start_write_(&message, options);
    return core_.Wait(writes_);
  }
  // The call's server context (metadata, peer, deadline).
  grpc::CallbackServerContext* context() const { return core_.server_context(); }

  ServerWriter(const ServerWriter&) = delete;
  ServerWriter& operator=(const ServerWriter&) = delete;

 private:
  template <class Req, class Resp, class F>
  friend class ServerBidiCall;
  template <class Resp, class F>
  friend class ServerStreamingCall;
  template <class Req, class Resp>
  friend class ServerReaderWriter;

  ServerWriter(internal::ServerCallCore& core,
               absl::AnyInvocable<void(const Response*, grpc::WriteOptions)> start_write)
      : core_(core), start_write_(std::move(start_write)) {}

  internal::ServerCallCore& core_;
  absl::AnyInvocable<void(const Response*, grpc::WriteOptions)> start_write_;
  internal::OpSlot writes_{"Write"};
};

// What a client-streaming handler reads through. Read() parks the handler's fiber until
// the next message arrives.
//
// Thread-safety: one Read() at a time (a second concurrent one stops the process with a
// message). The call's reactor owns it; valid while the handler runs.
template <class Request>
class ServerReader {
 public:
  // Reads the next message into `message`: true with one, false once the client has
  // finished writing or the call is over (cancelled, past its deadline, gone); every
  // later Read() is then false at once. Interruptible as ServerWriter::Write().
  bool Read(Request* message) {
    if (closed_) return false;
    reads_.Begin();
    start_read_(message);
    if (!core_.Wait(reads_)) closed_ = true;
    return !closed_;
  }
  // The call's server context.
  grpc::CallbackServerContext* context() const { return core_.server_context(); }

  ServerReader(const ServerReader&) = delete;
  ServerReader& operator=(const ServerReader&) = delete;

 private:
  template <class Req, class Resp, class F>
  friend class ServerBidiCall;
  template <class Req, class F>
  friend class ClientStreamingCall;
  template <class Req, class Resp>
  friend class ServerReaderWriter;

  ServerReader(internal::ServerCallCore& core, absl::AnyInvocable<void(Request*)> start_read)
      : core_(core), start_read_(std::move(start_read)) {}

  internal::ServerCallCore& core_;
  absl::AnyInvocable<void(Request*)> start_read_;
  internal::OpSlot reads_{"Read"};
  bool closed_ = false;  // a Read() came back false (the reading fiber's alone)
};

// What a bidirectional-streaming handler reads and writes through: a ServerReader and a
// ServerWriter in one. One fiber may read while another writes (start one with
// spindle::Fiber for the other direction); each direction one at a time.
template <class Request, class Response>
class ServerReaderWriter {
 public:
  // As ServerReader::Read().
  bool Read(Request* message) { return reader_.Read(message); }
  // As ServerWriter::Write().
  bool Write(const Response& message) { return writer_.Write(message); }
  bool Write(const Response& message, grpc::WriteOptions options) {
    return writer_.Write(message, options);
  }
  // The call's server context.
  grpc::CallbackServerContext* context() const { return reader_.context(); }

  ServerReaderWriter(const ServerReaderWriter&) = delete;
  ServerReaderWriter& operator=(const ServerReaderWriter&) = delete;

 private:
  template <class Req, class Resp, class F>
  friend class ServerBidiCall;

  ServerReaderWriter(internal::ServerCallCore& core,
                     absl::AnyInvocable<void(Request*)> start_read,
                     absl::AnyInvocable<void(const Response*, grpc::WriteOptions)> start_write)
      : reader_(core, std::move(start_read)), writer_(core, std::move(start_write)) {}

  ServerReader<Request> reader_;
  ServerWriter<Response> writer_;
};

// The reactors below are what the Serve*() functions return to gRPC. Each is created
// on gRPC's thread, starts the handler's fiber and returns; the fiber finishes the call
// exactly once, with the handler's status, and touches the reactor no more after that
// (gRPC deletes nothing: OnDone, after every reaction, deletes the reactor).

namespace internal {

// What the four reactors share: the call's core and handler, the handler's fiber, and
// gRPC's OnCancel and OnDone.
template <class Reactor, class F>
class ServerCall : public Reactor {
 protected:
  ServerCall(grpc::CallbackServerContext* context, F handler)
      : core_(context), handler_(std::move(handler)) {}

  // The final class's constructor ends with this, once what `args` refer to (its
  // stream) is built: starts the fiber that runs handler_(args...) and finishes the call
  // with its status.
  template <class... Args>
  void Start(Args&... args) {
    if (!core_.StartFiber([this, &args...] {
          this->Finish(core_.RunHandler([&] { return handler_(args...); }));
        })) {
      this->Finish(OutOfMemoryStatus());
    }
  }

  void OnCancel() override { core_.OnCancelled(); }
  void OnDone() override {
    core_.OnDone();
    delete this;  // the final class's, through the reactor's virtual destructor
  }

  ServerCallCore core_;
  F handler_;
};

}  // namespace internal

template <class F>
class ServerUnaryCall final : public internal::ServerCall<grpc::ServerUnaryReactor, F> {
 public:
  ServerUnaryCall(grpc::CallbackServerContext* context, F handler)
      : internal::ServerCall<grpc::ServerUnaryReactor, F>(context, std::move(handler)) {
    this->Start();
  }
};

template <class Response, class F>
class ServerStreamingCall final
    : public internal::ServerCall<grpc::ServerWriteReactor<Response>, F> {
 public:
  ServerStreamingCall(grpc::CallbackServerContext* context, F handler)
      : internal::ServerCall<grpc::ServerWriteReactor<Response>, F>(context, std::move(handler)),
        writer_(this->core_, [this](const Response* message, grpc::WriteOptions options) {
          this->StartWrite(message, options);
        }) {
    this->Start(writer_);
  }
  void OnWriteDone(bool ok) override { writer_.writes_.Complete(ok); }

 private:
  ServerWriter<Response> writer_;
};

template <class Request, class F>
class ClientStreamingCall final
    : public internal::ServerCall<grpc::ServerReadReactor<Request>, F> {
 public:
  ClientStreamingCall(grpc::CallbackServerContext* context, F handler)
      : internal::ServerCall<grpc::ServerReadReactor<Request>, F>(context, std::move(handler)),
        reader_(this->core_, [this](Request* message) { this->StartRead(message); }) {
    this->Start(reader_);
  }
  void OnReadDone(bool ok) override { reader_.reads_.Complete(ok); }

 private:
  ServerReader<Request> reader_;
};

template <class Request, class Response, class F>
class ServerBidiCall final
    : public internal::ServerCall<grpc::ServerBidiReactor<Request, Response>, F> {
 public:
  ServerBidiCall(grpc::CallbackServerContext* context, F handler)
      : internal::ServerCall<grpc::ServerBidiReactor<Request, Response>, F>(context,
                                                                            std::move(handler)),
        stream_(
            this->core_, [this](Request* message) { this->StartRead(message); },
            [this](const Response* message, grpc::WriteOptions options) {
              this->StartWrite(message, options);
            }) {
    this->Start(stream_);
  }
  void OnReadDone(bool ok) override { stream_.reader_.reads_.Complete(ok); }
  void OnWriteDone(bool ok) override { stream_.writer_.writes_.Complete(ok); }

 private:
  ServerReaderWriter<Request, Response> stream_;
};

// Serves a unary call: `handler()` (returning grpc::Status; it fills the reply the
// generated method was given) runs in a fiber of its own. Return what this returns
// from the generated CallbackService method. Needs a running runtime.
template <class F>
grpc::ServerUnaryReactor* ServeUnary(grpc::CallbackServerContext* context, F&& handler) {
  static_assert(std::is_invocable_r_v<grpc::Status, std::decay_t<F>&>,
                "ServeUnary: the handler takes no arguments and returns grpc::Status");
  return new ServerUnaryCall<std::decay_t<F>>(context, std::forward<F>(handler));
}

// Serves a server-streaming call: `handler(ServerWriter<Response>&)` returns the status.
template <class Response, class F>
grpc::ServerWriteReactor<Response>* ServeServerStreaming(grpc::CallbackServerContext* context,
                                                         F&& handler) {
  static_assert(std::is_invocable_r_v<grpc::Status, std::decay_t<F>&, ServerWriter<Response>&>,
                "ServeServerStreaming: the handler takes ServerWriter<Response>& and returns "
                "grpc::Status");
  return new ServerStreamingCall<Response, std::decay_t<F>>(context, std::forward<F>(handler));
}

// Serves a client-streaming call: `handler(ServerReader<Request>&)` reads the requests,
// fills the reply the generated method was given, and returns the status.
template <class Request, class F>
grpc::ServerReadReactor<Request>* ServeClientStreaming(grpc::CallbackServerContext* context,
                                                       F&& handler) {
  static_assert(std::is_invocable_r_v<grpc::Status, std::decay_t<F>&, ServerReader<Request>&>,
                "ServeClientStreaming: the handler takes ServerReader<Request>& and returns "
                "grpc::Status");
  return new ClientStreamingCall<Request, std::decay_t<F>>(context, std::forward<F>(handler));
}

// Serves a bidirectional-streaming call: `handler(ServerReaderWriter<Request,
// Response>&)` returns the status.
template <class Request, class Response, class F>
grpc::ServerBidiReactor<Request, Response>* ServeBidiStreaming(
    grpc::CallbackServerContext* context, F&& handler) {
  static_assert(std::is_invocable_r_v<grpc::Status, std::decay_t<F>&,
                                      ServerReaderWriter<Request, Response>&>,
                "ServeBidiStreaming: the handler takes ServerReaderWriter<Request, Response>& "
                "and returns grpc::Status");
  return new ServerBidiCall<Request, Response, std::decay_t<F>>(context,
                                                                std::forward<F>(handler));
}

// Shuts `server` down gracefully: stops accepting calls, lets the calls in flight run
// for up to `drain`, then cancels those still running (their handlers' contexts are
// cancelled, so their waits end) and returns once every call is done. Call it from a
// plain thread, not from a fiber or one of gRPC's threads: it blocks. A handler that
// ignores its cancellation (a long computation that never waits) holds it until it
// returns.
void ShutdownServer(grpc::Server& server, std::chrono::milliseconds drain);

// Runs `server` until SIGTERM or SIGINT, then ShutdownServer(server, drain); returns
// the signal once the server has drained. A second signal during the drain ends the
// process at once (as io::ShutdownSignals::ServeUntilSignal()). Construct `signals`
// first thing in main(), before gRPC or the runtime starts a thread:
//
//   spindle::io::ShutdownSignals signals;
//   spindle::StartRuntime();
//   std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
//   spindle::grpc_fiber::ServeUntilSignal(signals, *server, std::chrono::seconds(5));
//   spindle::TerminateRuntime();
int ServeUntilSignal(io::ShutdownSignals& signals, grpc::Server& server,
                     std::chrono::milliseconds drain);

}  // namespace spindle::grpc_fiber

#endif  // SPINDLE_INTEGRATIONS_GRPC_SERVER_H_
