// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_SERVER_H_
#define SPINDLE_IO_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "io/deadline.h"
#include "io/stream.h"

namespace spindle::io {

class Server;

// How a Server admits and drains connections. Check it with ValidateServerOptions();
// Server's constructor stops the process with a message on an invalid one.
struct ServerOptions {
  // Connections open at once. One accepted beyond it is closed at once (its client sees
  // the connection end rather than a silent wait) and counted in ServerStats::refused;
  // accepting goes on, so the backlog does not fill with clients nobody answers.
  std::size_t max_connections = 10000;
  // After Shutdown(): how long connections busy with a request have to finish it before
  // they are closed. Idle ones are closed at once.
  std::chrono::milliseconds drain_timeout{5000};
  // The fiber pool (--fiber_pools) that runs the connections' handlers; "": the pool of
  // the fiber that calls Serve(). Each handler starts with TryStartFiberDetached: while
  // the pool is at its cap on live fibers (max_fibers), or no stack can be had, an
  // accepted connection is closed at once and counted in ServerStats::refused and
  // refused_by_pool. A name no pool has stops the process, when Serve() begins, with a
  // message naming it.
  std::string pool;
  // Where each connection's handler runs. True (the default): in the handlers' pool's
  // scheduling groups in turn, so that every group, on every NUMA node the pool spans,
  // runs a share of the connections and polls their sockets (a socket is watched by the
  // reactor of the group its handler runs in). False: where a plain start from the
  // accepting fiber goes: its own group (stealing moves work only between groups of
  // one node, and across nodes never by default), or for another pool that pool's
  // groups on the accepting CPU's node.
  bool spread_connections = true;
};

// The largest values ValidateServerOptions() accepts: ServerOptions::max_connections,
// and ServerOptions::drain_timeout in milliseconds (the least is 1 for both).
inline constexpr std::size_t kMaxServerConnections = std::size_t{1} << 24;
inline constexpr std::int64_t kMaxDrainTimeoutMs = 3'600'000;

// OK, or InvalidArgument naming the field, its value and the accepted range
// (max_connections [1, 16777216], drain_timeout [1, 3600000] ms).
absl::Status ValidateServerOptions(const ServerOptions& options);

// Counters since construction; relaxed snapshots, exact once the server is quiet.
struct ServerStats {
  std::uint64_t accepted = 0;  // connections handed to the handler
  // Closed at once: over max_connections, while the process was out of descriptors
  // (Listener::refused()), or refused by the handlers' pool (refused_by_pool).
  std::uint64_t refused = 0;
  std::uint64_t open = 0;     // handlers running now
  // Closed by the drain: idle when Shutdown() came, idle at the end of the request it
  // was finishing, or still busy at the drain deadline.
  std::uint64_t drained = 0;
  std::uint64_t accept_backoffs = 0;  // Listener::resource_backoffs()
  // Handlers that ended with std::bad_alloc (their connection closed, the server on).
  std::uint64_t handler_out_of_memory = 0;
  // Of `refused`: closed because the pool refused the handler's fiber (at its cap, or
  // no stack to be had: ServerOptions::pool).
  std::uint64_t refused_by_pool = 0;
};

// One accepted connection as its handler sees it: the stream, and the idle/busy state
// through which Shutdown() closes only connections that wait for a new request. A
// handler that serves requests calls EnterIdle() before it waits for one and
// LeaveIdle() when one begins to arrive; one that never calls them counts as busy
// throughout (the drain deadline closes it).
//
// Thread-safety: the handler's fiber uses it; the server closes its stream from any
// thread (Shutdown(), the drain deadline), which wakes a handler waiting on it with an
// error. The server owns it; it lives until the handler returns.
class ServerConnection {
 public:
  // The connection's stream, for the handler to read and write (one reader and one
  // writer at a time, as Stream says). The server may close it from another thread
  // (Shutdown(), the drain deadline): its calls then fail with FailedPrecondition.
  // Valid until the handler returns; the server closes it then.
  Stream& stream() { return stream_; }
  // The connection now waits for a new request: from here Shutdown() may close it.
  // False if the server is draining: the handler should return (nothing is begun).
  bool EnterIdle();
  // A request began to arrive: Shutdown() lets it finish (up to the drain deadline).
  // False if the drain closed the connection first (the request came after it began):
  // the handler should return.
  bool LeaveIdle();
  // Whether Shutdown() has begun: a hint, e.g. for "Connection: close" on the answer
  // to the request in progress.
  bool draining() const;

  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

 private:
  friend class Server;
  ServerConnection(Server* server, Stream stream)
      : server_(server), stream_(std::move(stream)) {}
  enum State : int { kIdle, kBusy, kClosing };

  // The server's side, under its mutex: closes the stream if the connection is idle.
  bool CloseIfIdle();

  Server* const server_;
  Stream stream_;
  // The handler writes kIdle/kBusy; the server CASes kIdle -> kClosing under its mutex.
  // seq_cst: see Server::draining_.
  std::atomic<int> state_{kBusy};
  // The server's intrusive list of live connections; guarded by the server's mutex.
  ServerConnection* prev_ = nullptr;
  ServerConnection* next_ = nullptr;
};

// Called in each accepted connection's own fiber, for many connections at once; the
// connection's stream is closed after it returns. A std::bad_alloc out of it closes that
// connection only (counted in ServerStats::handler_out_of_memory).
using ConnectionHandler = std::function<void(ServerConnection&)>;

// A stream server: Serve() accepts on a listener and runs `handler` for each connection
// in a detached fiber of its own, at most max_connections at once. Shutdown() (from any
// thread: a signal-waiting thread, a test) stops accepting, closes the connections
// that are idle, lets the busy ones finish for up to drain_timeout, then closes what is
// left; Serve() returns when every handler has returned. Serve() and the handlers run
// in no execution context: the caller's cancellation or deadline does not stop the
// server (Shutdown() does).
//
// Out of descriptors, the listener refuses waiting connections (see Listener) and
// accepting goes on; other accept errors are logged and retried after 10 ms.
//
// Thread-safety: Serve() once, from a fiber; Shutdown(), stats() and PrometheusText()
// from anywhere. The server must outlive Serve()'s return.
class Server {
 public:
  // `options` must be valid (ValidateServerOptions; CHECKed).
  Server(const ServerOptions& options, ConnectionHandler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Accepts on `listener` until Shutdown() (or until its owner closes it), then drains;
  // closes the listener. Parks the calling fiber throughout.
  void Serve(Listener& listener);
  // Starts the shutdown described above and returns at once. Idempotent.
  void Shutdown();

  // The counters now (see ServerStats). Thread-safe: from any fiber or thread, also
  // after Serve() has returned. Takes the server's lock briefly (a fiber parks, a thread
  // blocks, while another holds it).
  ServerStats stats() const;
  // stats() in the Prometheus text format, each metric named `prefix` + "_" + what it
  // counts (e.g. "spindle_http" gives spindle_http_connections_accepted_total).
  std::string PrometheusText(absl::string_view prefix) const;
  // The options the server was constructed with; they never change. Thread-safe; the
  // reference is valid as long as the server.
  const ServerOptions& options() const { return options_; }

 private:
  friend class ServerConnection;

  void RecordHandlerOutOfMemory();
  // Links a connection in; false (not linked) when max_connections are open. One that
  // arrives while the server drains is linked and closed at once.
  bool Register(ServerConnection* connection);
  void Unregister(ServerConnection* connection);
  void CloseAllConnections();
  void WaitForConnections(Deadline deadline);

  const ServerOptions options_;
  const ConnectionHandler handler_;
  // seq_cst: Shutdown() stores it, then reads each connection's state; a connection
  // stores its state, then reads this (ServerConnection::EnterIdle). Whichever comes
  // second sees the other, so an idle connection is always closed by one of them.
  std::atomic<bool> draining_{false};
  // relaxed: statistics.
  std::atomic<std::uint64_t> accepted_{0};
  std::atomic<std::uint64_t> refused_over_cap_{0};
  std::atomic<std::uint64_t> refused_by_pool_{0};
  std::atomic<std::uint64_t> refused_by_listener_{0};
  std::atomic<std::uint64_t> drained_{0};
  std::atomic<std::uint64_t> accept_backoffs_{0};
  std::atomic<std::uint64_t> handler_out_of_memory_{0};
  // The connection list, its lock and what they guard (server.cc), behind a pointer so
  // that this header needs no sync primitive's.
  struct Guarded;
  const std::unique_ptr<Guarded> guarded_;
};

// SIGTERM and SIGINT for a server's main, taken by one plain thread in sigwait() so no
// handler ever runs on a fiber's stack:
//
//   spindle::io::ShutdownSignals signals;  // first: blocks the signals
//   spindle::StartRuntime();
//   ... Listen, build the Server ...
//   signals.ServeUntilSignal(server, listener);
//   spindle::TerminateRuntime();
//
// Thread-safety: construct it on the main thread before any other thread starts (the
// signal mask is inherited by threads started later); ServeUntilSignal() once.
class ShutdownSignals {
 public:
  // Blocks SIGTERM and SIGINT in the calling thread.
  ShutdownSignals();
  ShutdownSignals(const ShutdownSignals&) = delete;
  ShutdownSignals& operator=(const ShutdownSignals&) = delete;

  // Serves (server.Serve(listener) in a fiber) until SIGTERM or SIGINT arrives, then
  // shuts the server down and returns once it has drained; also returns when Serve()
  // ends otherwise (its listener closed). Returns the signal taken, or 0. A second
  // signal during the drain ends the process at once (_Exit(128 + signal)).
  int ServeUntilSignal(Server& server, Listener& listener);

  // The same for any server: runs `run()` on the calling thread; the first SIGTERM or
  // SIGINT calls `stop()` on a thread of its own (it should return soon, having asked
  // `run()` to end: a server's Shutdown()). Returns once `run()` has returned: the
  // signal taken, or 0 if `run()` ended without one. A second signal before then ends
  // the process at once (_Exit(128 + signal)). Once, as ServeUntilSignal().
  int RunUntilSignal(absl::FunctionRef<void()> run, absl::FunctionRef<void()> stop);
};

}  // namespace spindle::io

#endif  // SPINDLE_IO_SERVER_H_
