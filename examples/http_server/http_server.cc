// Copyright 2026 The Spindle Authors.
//
// The accept loop and the drain. Connections live in an intrusive list under mu_ so
// that Shutdown() can reach them: those waiting for a request are closed at once,
// the others finish what they began (see HttpConnection::EnterIdle and draining_ for
// why no idle connection can slip past both sides), and at the drain deadline the rest
// are closed. A connection unlinks itself under mu_ before it is destroyed, so the
// server never touches a destroyed connection.

#include "examples/http_server/http_server.h"

#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "examples/http_server/http_connection.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"

namespace spindle::examples::http {

namespace {

absl::Status CheckRange(const char* flag, std::int64_t value, std::int64_t min,
                        std::int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " is out of range: expected an integer in [",
                   min, ", ", max, "]"));
}

// After an unexpected Accept() error (not a close, not a lack of descriptors, which
// Accept() waits out itself), the loop waits this long before trying again.
constexpr std::chrono::milliseconds kAcceptRetryDelay{10};

}  // namespace

absl::Status ValidateHttpServerOptions(const HttpServerOptions& options) {
  absl::Status status =
      CheckRange("max_header_bytes", static_cast<std::int64_t>(options.max_header_bytes),
                 kMinHeaderBytes, kMaxHeaderBytes);
  status.Update(CheckRange("max_body_bytes",
                           static_cast<std::int64_t>(options.max_body_bytes),
                           kMinBodyBytes, kMaxBodyBytes));
  status.Update(CheckRange("idle_timeout_ms", options.idle_timeout.count(), kMinTimeoutMs,
                           kMaxTimeoutMs));
  status.Update(CheckRange("drain_timeout_ms", options.drain_timeout.count(),
                           kMinTimeoutMs, kMaxTimeoutMs));
  return status;
}

HttpServer::HttpServer(const HttpServerOptions& options) : options_(options) {
  const absl::Status status = ValidateHttpServerOptions(options_);
  CHECK(status.ok()) << "HttpServer: " << status.message();
}

HttpServer::~HttpServer() {
  std::lock_guard<Mutex> lock(mu_);
  CHECK_EQ(live_connections_, 0u) << "HttpServer destroyed while connections are live";
  CHECK(listener_ == nullptr) << "HttpServer destroyed while Serve() runs";
}

void HttpServer::Serve(io::Listener& listener) {
  {
    std::lock_guard<Mutex> lock(mu_);
    CHECK(listener_ == nullptr) << "HttpServer::Serve() called twice";
    listener_ = &listener;
    // seq_cst: pairs with Shutdown()'s exchange; one of us closes the listener.
    if (draining_.load(std::memory_order_seq_cst)) listener.Close().IgnoreError();
  }
  while (true) {
    absl::StatusOr<io::Stream> stream = listener.Accept();
    if (!stream.ok()) {
      // Closed by Shutdown() (or by its owner, which also means: stop).
      if (absl::IsFailedPrecondition(stream.status()) ||
          draining_.load(std::memory_order_seq_cst)) {
        break;
      }
      LOG(WARNING) << "http_server: " << stream.status();
      this_fiber::SleepFor(kAcceptRetryDelay);
      continue;
    }
    connections_accepted_.fetch_add(1, std::memory_order_relaxed);  // a statistic
    auto* connection = new HttpConnection(this, std::move(*stream));
    Register(connection);
    StartFiberDetached([this, connection] {
      connection->Serve();
      Unregister(connection);
      delete connection;
    });
  }
  Shutdown();  // no-op when it started the exit; else the listener was closed under us
  io::Deadline drain_deadline;
  {
    std::lock_guard<Mutex> lock(mu_);
    listener_ = nullptr;
    drain_deadline = drain_deadline_;
  }
  listener.Close().IgnoreError();
  WaitForConnections(drain_deadline);
  CloseAllConnections();
  WaitForConnections(io::kNoDeadline);
}

void HttpServer::Shutdown() {
  // seq_cst: the store half of the pattern described at draining_.
  if (draining_.exchange(true, std::memory_order_seq_cst)) return;
  std::lock_guard<Mutex> lock(mu_);
  drain_deadline_ = io::Clock::now() + options_.drain_timeout;
  if (listener_ != nullptr) listener_->Close().IgnoreError();
  for (HttpConnection* c = connections_; c != nullptr; c = c->next_) c->CloseIfIdle();
}

HttpServerStats HttpServer::stats() const {
  HttpServerStats stats;
  // relaxed: statistics.
  stats.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  stats.requests = requests_.load(std::memory_order_relaxed);
  stats.bad_requests = bad_requests_.load(std::memory_order_relaxed);
  std::lock_guard<Mutex> lock(mu_);
  stats.live_connections = live_connections_;
  return stats;
}

std::string HttpServer::PrometheusText() const {
  const HttpServerStats s = stats();
  return absl::StrCat(
      "# HELP spindle_http_connections_accepted_total Connections accepted.\n"
      "# TYPE spindle_http_connections_accepted_total counter\n"
      "spindle_http_connections_accepted_total ",
      s.connections_accepted,
      "\n# HELP spindle_http_requests_total Requests answered, with any status.\n"
      "# TYPE spindle_http_requests_total counter\n"
      "spindle_http_requests_total ",
      s.requests,
      "\n# HELP spindle_http_bad_requests_total Requests answered 400, 413 or 431.\n"
      "# TYPE spindle_http_bad_requests_total counter\n"
      "spindle_http_bad_requests_total ",
      s.bad_requests,
      "\n# HELP spindle_http_live_connections Connections open now.\n"
      "# TYPE spindle_http_live_connections gauge\n"
      "spindle_http_live_connections ",
      s.live_connections, "\n");
}

void HttpServer::Register(HttpConnection* connection) {
  std::lock_guard<Mutex> lock(mu_);
  connection->next_ = connections_;
  if (connections_ != nullptr) connections_->prev_ = connection;
  connections_ = connection;
  ++live_connections_;
}

void HttpServer::Unregister(HttpConnection* connection) {
  std::lock_guard<Mutex> lock(mu_);
  if (connection->prev_ != nullptr) {
    connection->prev_->next_ = connection->next_;
  } else {
    connections_ = connection->next_;
  }
  if (connection->next_ != nullptr) connection->next_->prev_ = connection->prev_;
  // relaxed: draining_ only goes false -> true, and Serve() sets or reads it (the
  // exchange in Shutdown()) before it checks the count under mu_: a last connection
  // that reads false here unlocked before that check, which then sees the count 0.
  if (--live_connections_ == 0 && draining_.load(std::memory_order_relaxed)) {
    drained_.Set();
  }
}

void HttpServer::CloseAllConnections() {
  std::lock_guard<Mutex> lock(mu_);
  for (HttpConnection* c = connections_; c != nullptr; c = c->next_) c->ForceClose();
}

void HttpServer::WaitForConnections(io::Deadline deadline) {
  {
    std::lock_guard<Mutex> lock(mu_);
    if (live_connections_ == 0) return;
  }
  drained_.WaitUntil(deadline);
}

}  // namespace spindle::examples::http
