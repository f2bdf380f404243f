// Copyright 2026 The Spindle Authors.
//
// The accept loop, the connection cap and the drain. Connections live in an intrusive
// list under mu so that Shutdown() can reach them: those waiting for a request are
// closed at once, the others finish what they began (see ServerConnection::EnterIdle
// and draining_ for why no idle connection can slip past both sides), and at the drain
// deadline the rest are closed. A connection unlinks itself under mu before it is
// destroyed, so the server never touches a destroyed connection.

#include "io/server.h"

#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/mutex.h"

namespace spindle::io {

namespace {

// After an unexpected Accept() error (not a close, not a lack of descriptors, which
// Accept() handles itself), the loop waits this long before trying again.
constexpr std::chrono::milliseconds kAcceptRetryDelay{10};

}  // namespace

void Server::RecordHandlerOutOfMemory() {
  // A counter and a constant message (glog formats it in its own per-thread buffer).
  handler_out_of_memory_.fetch_add(1, std::memory_order_relaxed);  // a statistic
  LOG_EVERY_N(WARNING, 100) << "io::Server: a connection handler ran out of memory; that "
                               "connection was closed (logged every 100th time)";
}

absl::Status ValidateServerOptions(const ServerOptions& options) {
  if (options.max_connections < 1 || options.max_connections > kMaxServerConnections) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_connections=", options.max_connections,
        " is out of range: expected an integer in [1, ", kMaxServerConnections, "]"));
  }
  if (options.drain_timeout.count() < 1 || options.drain_timeout.count() > kMaxDrainTimeoutMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("drain_timeout=", options.drain_timeout.count(),
                     " ms is out of range: expected milliseconds in [1, ", kMaxDrainTimeoutMs,
                     "]"));
  }
  return absl::OkStatus();
}

// ---- ServerConnection.

bool ServerConnection::EnterIdle() {
  int expected = kBusy;
  // seq_cst RMW then seq_cst load: the StoreLoad half of the Dekker pattern whose other
  // half is Shutdown()'s store of draining_ then CloseIfIdle()'s CAS of state_.
  if (!state_.compare_exchange_strong(expected, kIdle, std::memory_order_seq_cst) &&
      expected == kClosing) {
    return false;  // the drain closed us already (and counted it)
  }
  if (!server_->draining_.load(std::memory_order_seq_cst)) return true;
  // Idle while the server drains: we close. Whoever moves us idle -> closing, we or
  // CloseIfIdle(), counts it, once.
  expected = kIdle;
  if (state_.compare_exchange_strong(expected, kClosing, std::memory_order_seq_cst)) {
    server_->drained_.fetch_add(1, std::memory_order_relaxed);  // a statistic
  }
  return false;
}

bool ServerConnection::LeaveIdle() {
  int expected = kIdle;
  // seq_cst: see EnterIdle(). Failing means CloseIfIdle() won: the server is draining
  // and this request arrived after the drain began. Already busy: nothing to leave.
  if (state_.compare_exchange_strong(expected, kBusy, std::memory_order_seq_cst)) return true;
  return expected == kBusy;
}

bool ServerConnection::draining() const {
  // relaxed: a hint; a request that misses the drain is answered as usual and the
  // connection closes at its next EnterIdle().
  return server_->draining_.load(std::memory_order_relaxed);
}

bool ServerConnection::CloseIfIdle() {
  int expected = kIdle;
  // seq_cst: pairs with EnterIdle() (see there).
  if (!state_.compare_exchange_strong(expected, kClosing, std::memory_order_seq_cst)) {
    return false;
  }
  stream_.Close().IgnoreError();
  return true;
}

// ---- Server.

struct Server::Guarded {
  Event all_closed;  // set when draining and the last connection has unregistered

  Mutex mu;
  Listener* listener = nullptr;             // guarded by mu; set while Serve() accepts
  ServerConnection* connections = nullptr;  // guarded by mu; intrusive list head
  std::uint64_t open = 0;                   // guarded by mu
  Deadline drain_deadline = kNoDeadline;    // guarded by mu
};

Server::Server(const ServerOptions& options, ConnectionHandler handler)
    : options_(options), handler_(std::move(handler)), guarded_(std::make_unique<Guarded>()) {
  const absl::Status status = ValidateServerOptions(options_);
  CHECK(status.ok()) << "io::Server: " << status.message();
  CHECK(handler_ != nullptr) << "io::Server: the connection handler is empty";
}

Server::~Server() {
  std::lock_guard<Mutex> lock(guarded_->mu);
  CHECK_EQ(guarded_->open, 0u) << "io::Server destroyed while connections are open";
  CHECK(guarded_->listener == nullptr) << "io::Server destroyed while Serve() runs";
}

void Server::Serve(Listener& listener) {
  // The accept loop, its back-off and the drain run in no execution context: the
  // server is stopped by Shutdown(), not by the caller's cancellation or deadline
  // (its interruptible waits would otherwise return at once, and Serve() before its
  // handlers). The handlers' fibers start in none either.
  ScopedExecutionContext no_context(nullptr);
  Fiber::Attributes handler_attributes;
  if (!options_.pool.empty()) {
    const absl::StatusOr<FiberPool> pool = FiberPool::Find(options_.pool);
    CHECK(pool.ok()) << "io::Server: ServerOptions::pool=\"" << options_.pool
                     << "\" is invalid: " << pool.status().message();
    handler_attributes.pool = *pool;
  }
  // The groups the handlers take turns in (ServerOptions::spread_connections); with
  // one group the default placement is the same.
  std::vector<std::size_t> groups;
  if (options_.spread_connections) groups = handler_attributes.pool.scheduling_groups();
  std::size_t next_group = 0;
  {
    std::lock_guard<Mutex> lock(guarded_->mu);
    CHECK(guarded_->listener == nullptr) << "io::Server::Serve() called twice";
    guarded_->listener = &listener;
    // seq_cst: pairs with Shutdown()'s exchange; one of us closes the listener.
    if (draining_.load(std::memory_order_seq_cst)) listener.Close().IgnoreError();
  }
  while (true) {
    absl::StatusOr<Stream> stream = listener.Accept();
    // relaxed: statistics; the listener's counters are read where Accept() is not
    // running (here), as Listener says.
    refused_by_listener_.store(listener.refused(), std::memory_order_relaxed);
    accept_backoffs_.store(listener.resource_backoffs(), std::memory_order_relaxed);
    if (!stream.ok()) {
      // Closed by Shutdown() (or by its owner, which also means: stop).
      if (absl::IsFailedPrecondition(stream.status()) ||
          draining_.load(std::memory_order_seq_cst)) {
        break;
      }
      LOG_EVERY_N(WARNING, 100) << "io::Server on " << listener.address().ToString() << ": "
                                << stream.status() << " (logged every 100th time)";
      this_fiber::SleepFor(kAcceptRetryDelay);
      continue;
    }
    // Out of memory here: the stream closes with this scope, its client learns now.
    auto* connection = new (std::nothrow) ServerConnection(this, std::move(*stream));
    if (connection == nullptr) {
      refused_over_cap_.fetch_add(1, std::memory_order_relaxed);  // a statistic
      continue;
    }
    if (!Register(connection)) {
      // Over the cap: closed at once (its destructor), so its client learns now.
      refused_over_cap_.fetch_add(1, std::memory_order_relaxed);  // a statistic
      LOG_EVERY_N(WARNING, 1000) << "io::Server on " << listener.address().ToString()
                                 << ": " << options_.max_connections
                                 << " connections open (max_connections); refused one "
                                    "(logged every 1000th time)";
      delete connection;
      continue;
    }
    if (groups.size() > 1) {
      handler_attributes.scheduling_group = groups[next_group];
      next_group = next_group + 1 == groups.size() ? 0 : next_group + 1;
    }
    absl::Status started;
    try {
      started = TryStartFiberDetached(handler_attributes, [this, connection] {
        try {
          handler_(*connection);
        } catch (const std::bad_alloc&) {
          // The handler's own memory (a buffer, an answer) could not be allocated:
          // this connection ends, the process and the other connections go on.
          RecordHandlerOutOfMemory();
        }
        connection->stream_.Close().IgnoreError();
        Unregister(connection);
        delete connection;
      });
    } catch (const std::bad_alloc&) {  // no memory for the fiber: refuse this one
      started = absl::ResourceExhaustedError("no memory for the handler's fiber");
    }
    if (started.ok()) {
      accepted_.fetch_add(1, std::memory_order_relaxed);  // a statistic
    } else {
      // The pool is at its cap or has no stack to give (or no memory was left): this
      // connection is closed at once (its client learns now), the others go on.
      // Counted before the close, which its client may act on at once.
      refused_over_cap_.fetch_add(1, std::memory_order_relaxed);  // a statistic
      refused_by_pool_.fetch_add(1, std::memory_order_relaxed);   // a statistic
      Unregister(connection);
      delete connection;
      LOG_EVERY_N(WARNING, 1000) << "io::Server on " << listener.address().ToString()
                                 << ": refused a connection: " << started.message()
                                 << " (logged every 1000th time)";
    }
  }
  Shutdown();  // no-op when it started the exit; else the listener was closed under us
  Deadline drain_deadline;
  {
    std::lock_guard<Mutex> lock(guarded_->mu);
    guarded_->listener = nullptr;
    drain_deadline = guarded_->drain_deadline;
  }
  listener.Close().IgnoreError();
  WaitForConnections(drain_deadline);
  CloseAllConnections();
  WaitForConnections(kNoDeadline);
}

void Server::Shutdown() {
  // Under mu, with the deadline: whoever sees draining_ under mu (Serve()'s own
  // Shutdown(), Register()) sees the deadline too.
  std::lock_guard<Mutex> lock(guarded_->mu);
  // seq_cst: the store half of the pattern described at draining_.
  if (draining_.exchange(true, std::memory_order_seq_cst)) return;
  guarded_->drain_deadline = Clock::now() + options_.drain_timeout;
  if (guarded_->listener != nullptr) guarded_->listener->Close().IgnoreError();
  for (ServerConnection* c = guarded_->connections; c != nullptr; c = c->next_) {
    if (c->CloseIfIdle()) drained_.fetch_add(1, std::memory_order_relaxed);  // a statistic
  }
}

ServerStats Server::stats() const {
  ServerStats stats;
  // relaxed: statistics.
  stats.accepted = accepted_.load(std::memory_order_relaxed);
  stats.refused = refused_over_cap_.load(std::memory_order_relaxed) +
                  refused_by_listener_.load(std::memory_order_relaxed);
  stats.drained = drained_.load(std::memory_order_relaxed);
  stats.accept_backoffs = accept_backoffs_.load(std::memory_order_relaxed);
  stats.handler_out_of_memory = handler_out_of_memory_.load(std::memory_order_relaxed);
  stats.refused_by_pool = refused_by_pool_.load(std::memory_order_relaxed);
  std::lock_guard<Mutex> lock(guarded_->mu);
  stats.open = guarded_->open;
  return stats;
}

std::string Server::PrometheusText(absl::string_view prefix) const {
  const ServerStats s = stats();
  std::string text;
  auto metric = [&](absl::string_view name, absl::string_view type, absl::string_view help,
                    std::uint64_t value) {
    absl::StrAppend(&text, "# HELP ", prefix, "_", name, " ", help, "\n# TYPE ", prefix, "_",
                    name, " ", type, "\n", prefix, "_", name, " ", value, "\n");
  };
  metric("connections_accepted_total", "counter", "Connections accepted and served.",
         s.accepted);
  metric("connections_refused_total", "counter",
         "Connections closed at once: over max_connections, out of descriptors, or "
         "refused by the handlers' fiber pool.",
         s.refused);
  metric("connections_refused_by_pool_total", "counter",
         "Connections closed at once because the handlers' fiber pool was at its cap or "
         "had no stack to give.",
         s.refused_by_pool);
  metric("connections_drained_total", "counter",
         "Connections closed by a shutdown's drain (idle, or busy at its deadline).",
         s.drained);
  metric("accept_backoffs_total", "counter",
         "Times accepting backed off for lack of descriptors or memory.", s.accept_backoffs);
  metric("connections_open", "gauge", "Connections open now.", s.open);
  return text;
}

bool Server::Register(ServerConnection* connection) {
  std::lock_guard<Mutex> lock(guarded_->mu);
  if (guarded_->open >= options_.max_connections) return false;
  connection->next_ = guarded_->connections;
  if (guarded_->connections != nullptr) guarded_->connections->prev_ = connection;
  guarded_->connections = connection;
  ++guarded_->open;
  // relaxed: under mu, which Shutdown() holds while it sets it and closes the idle
  // connections it finds, so one it missed sees true here. Nothing of a request has
  // begun on it.
  if (draining_.load(std::memory_order_relaxed)) {
    connection->state_.store(ServerConnection::kClosing, std::memory_order_relaxed);
    connection->stream_.Close().IgnoreError();
    drained_.fetch_add(1, std::memory_order_relaxed);  // a statistic
  }
  return true;
}

void Server::Unregister(ServerConnection* connection) {
  std::lock_guard<Mutex> lock(guarded_->mu);
  if (connection->prev_ != nullptr) {
    connection->prev_->next_ = connection->next_;
  } else {
    guarded_->connections = connection->next_;
  }
  if (connection->next_ != nullptr) connection->next_->prev_ = connection->prev_;
  // relaxed: draining_ goes false -> true only under mu (Shutdown()), which Serve()
  // calls before it checks the count under mu: a last connection that reads false here
  // unlocked before that check, which then sees the count 0.
  if (--guarded_->open == 0 && draining_.load(std::memory_order_relaxed)) {
    guarded_->all_closed.Set();
  }
}

void Server::CloseAllConnections() {
  std::lock_guard<Mutex> lock(guarded_->mu);
  for (ServerConnection* c = guarded_->connections; c != nullptr; c = c->next_) {
    // Busy past the drain deadline (an idle one was closed by Shutdown()).
    if (c->state_.load(std::memory_order_relaxed) != ServerConnection::kClosing) {
      drained_.fetch_add(1, std::memory_order_relaxed);  // a statistic
    }
    c->stream_.Close().IgnoreError();
  }
}

void Server::WaitForConnections(Deadline deadline) {
  {
    std::lock_guard<Mutex> lock(guarded_->mu);
    if (guarded_->open == 0) return;
  }
  guarded_->all_closed.WaitUntil(deadline);
}

// ---- ShutdownSignals.

namespace {

sigset_t ShutdownSignalSet() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

ShutdownSignals::ShutdownSignals() {
  const sigset_t signals = ShutdownSignalSet();
  const int error = pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  CHECK_EQ(error, 0) << "pthread_sigmask: errno " << error;
}

int ShutdownSignals::ServeUntilSignal(Server& server, Listener& listener) {
  return RunUntilSignal([&] { RunAsFiber([&] { server.Serve(listener); }); },
                        [&] { server.Shutdown(); });
}

int ShutdownSignals::RunUntilSignal(absl::FunctionRef<void()> run,
                                    absl::FunctionRef<void()> stop) {
  std::atomic<int> taken{0};
  std::atomic<bool> served{false};
  std::thread waiter([&] {
    const sigset_t signals = ShutdownSignalSet();
    for (;;) {
      int signal = 0;
      while (sigwait(&signals, &signal) != 0) {
      }
      // seq_cst with `served` below: either we see run() ended (our signal was the
      // wake-up below, not a request to stop), or the main thread sees `taken`.
      if (served.load(std::memory_order_seq_cst)) return;
      if (taken.exchange(signal, std::memory_order_seq_cst) == 0) {
        stop();
        continue;  // a second signal during the drain ends the process
      }
      // The second: an operator who does not want to wait for the drain (a handler
      // stuck in a blocking call would hold it forever).
      LOG(WARNING) << "a second signal (" << signal
                   << ") during the drain: exiting without waiting for it";
      std::_Exit(128 + signal);
    }
  });
  run();
  served.store(true, std::memory_order_seq_cst);
  // run() ended (after a signal's drain, or on its own): the waiter, back in sigwait()
  // for a second signal or never woken, is woken by a signal of its own set directed at
  // it alone (blocked everywhere, so only its sigwait() takes it, now or at its next
  // call), sees `served` and returns.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  return taken.load(std::memory_order_seq_cst);
}

}  // namespace spindle::io
