// Copyright 2026 The Spindle Authors.
//
// Options and counters; the accept loop, the connection cap and the drain are
// io::Server's.

#include "examples/http_server/http_server.h"

#include <chrono>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "examples/http_server/http_connection.h"
#include "glog/logging.h"

namespace spindle::examples::http {

namespace {

// OK, or InvalidArgument naming the flag, `value` and [min, max] (any integer type:
// uint64 flags past int64 keep their own value in the message).
template <typename T>
absl::Status CheckRange(const char* flag, T value, T min, T max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " is out of range: expected an integer in [",
                   min, ", ", max, "]"));
}

}  // namespace

absl::Status ValidateHttpServerOptions(const HttpServerOptions& options) {
  absl::Status status = CheckRange<std::size_t>("max_header_bytes", options.max_header_bytes,
                                                kMinHeaderBytes, kMaxHeaderBytes);
  status.Update(CheckRange<std::size_t>("max_body_bytes", options.max_body_bytes,
                                        kMinBodyBytes, kMaxBodyBytes));
  const std::pair<const char*, std::chrono::milliseconds> timeouts[] = {
      {"idle_timeout_ms", options.idle_timeout},     {"drain_timeout_ms", options.drain_timeout},
      {"header_timeout_ms", options.header_timeout}, {"body_timeout_ms", options.body_timeout},
      {"write_timeout_ms", options.write_timeout},
      {"request_timeout_ms", options.request_timeout},
  };
  for (const auto& [flag, timeout] : timeouts) {
    status.Update(
        CheckRange<std::int64_t>(flag, timeout.count(), kMinTimeoutMs, kMaxTimeoutMs));
  }
  status.Update(CheckRange<std::size_t>("min_body_rate", options.min_body_rate, kMinBodyRate,
                                        kMaxBodyRate));
  status.Update(CheckRange<std::size_t>("max_pending_output_bytes",
                                        options.max_pending_output_bytes,
                                        kMinPendingOutputBytes, kMaxPendingOutputBytes));
  status.Update(CheckRange<std::size_t>("max_connections", options.max_connections, 1,
                                        io::kMaxServerConnections));
  return status;
}

void CheckValid(const HttpServerOptions& options) {
  const absl::Status status = ValidateHttpServerOptions(options);
  CHECK(status.ok()) << "HttpServer: " << status.message();
}

namespace {

io::ServerOptions IoOptions(const HttpServerOptions& options) {
  io::ServerOptions io_options;
  io_options.max_connections = options.max_connections;
  io_options.drain_timeout = options.drain_timeout;
  io_options.pool = options.pool;
  io_options.spread_connections = options.spread_connections;
  return io_options;
}

}  // namespace

HttpServer::HttpServer(const HttpServerOptions& options)
    : options_(options),
      server_((CheckValid(options), IoOptions(options)), [this](io::ServerConnection& connection) {
        HttpConnection(this, connection).Serve();
      }) {}

HttpServer::~HttpServer() = default;

void HttpServer::Serve(io::Listener& listener) { server_.Serve(listener); }

void HttpServer::Shutdown() { server_.Shutdown(); }

HttpServerStats HttpServer::stats() const {
  const io::ServerStats io_stats = server_.stats();
  HttpServerStats stats;
  stats.connections_accepted = io_stats.accepted;
  stats.live_connections = io_stats.open;
  stats.connections_refused = io_stats.refused;
  // relaxed: statistics.
  stats.requests = requests_.load(std::memory_order_relaxed);
  stats.bad_requests = bad_requests_.load(std::memory_order_relaxed);
  stats.requests_cancelled = requests_cancelled_.load(std::memory_order_relaxed);
  stats.requests_timed_out = requests_timed_out_.load(std::memory_order_relaxed);
  stats.peak_pending_output_bytes = peak_pending_output_.load(std::memory_order_relaxed);
  return stats;
}

std::string HttpServer::PrometheusText() const {
  const HttpServerStats s = stats();
  return absl::StrCat(
      server_.PrometheusText("spindle_http"),
      "# HELP spindle_http_requests_total Requests answered, with any status, or "
      "cancelled.\n"
      "# TYPE spindle_http_requests_total counter\n"
      "spindle_http_requests_total ",
      s.requests,
      "\n# HELP spindle_http_bad_requests_total Requests answered 400, 413 or 431.\n"
      "# TYPE spindle_http_bad_requests_total counter\n"
      "spindle_http_bad_requests_total ",
      s.bad_requests,
      "\n# HELP spindle_http_requests_cancelled_total Handlers cancelled: their client "
      "went away.\n"
      "# TYPE spindle_http_requests_cancelled_total counter\n"
      "spindle_http_requests_cancelled_total ",
      s.requests_cancelled,
      "\n# HELP spindle_http_requests_timed_out_total Handlers that reached the request "
      "deadline (504).\n"
      "# TYPE spindle_http_requests_timed_out_total counter\n"
      "spindle_http_requests_timed_out_total ",
      s.requests_timed_out, "\n");
}

}  // namespace spindle::examples::http
