// Copyright 2026 The Spindle Authors.
//
// A small keep-alive HTTP/1.1 server on Spindle's fibers and io::Stream: one fiber per
// connection, requests parsed by nodejs/http-parser, pipelining, draining shutdown.
//
//   GET /        200 "hello, world\n" (text/plain)
//   POST /echo   200 with the request body (Content-Length or chunked)
//   GET /wait?ms=N  200 "waited N ms\n" after N ms (N in [0, 3600000], else 400): a
//                stand-in for a slow backend call. It runs in an execution context with
//                the request's deadline (request_timeout from its first byte: 504 when
//                that ends the wait) and is cancelled when the client goes away (no
//                answer; the connection closes; counted in requests_cancelled)
//   GET /metrics 200 the runtime's and this server's counters (Prometheus text), and
//   GET /fibers  200 spindle::DumpFibers() (text/plain): only with debug_endpoints on
//                (off by default: they reveal code addresses and cost a walk of every
//                fiber; otherwise 404)
//   HEAD         on every route, the GET answer's status and headers without its body
//   other paths  404; a known path with another method 405 with Allow
//   malformed    400, then the connection closes; request line + headers over
//                max_header_bytes: 431 and close; a body over max_body_bytes (on any
//                route: bodies of routes that take none are read and dropped): 413 and
//                close
//
//   spindle::StartRuntime();
//   auto listener = spindle::io::Listener::Listen(address);
//   HttpServer server(options);
//   spindle::RunAsFiber([&] { server.Serve(*listener); });  // until server.Shutdown()

#ifndef SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_SERVER_H_
#define SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "io/server.h"
#include "io/stream.h"

namespace spindle::examples::http {

class HttpConnection;

// The server's limits; each field is the command-line flag of the same name.
class HttpServer;

struct HttpServerOptions {
  // Request line plus header fields of one request; more gives 431.
  std::size_t max_header_bytes = 8192;
  // Body of one request (POST /echo's, or one dropped on another route); more gives 413.
  std::size_t max_body_bytes = 1 << 20;
  // Deadlines, each set once when its phase begins and never renewed by a read: a
  // keep-alive connection waiting for a request's first byte is closed after
  // idle_timeout; a request's line and headers must all arrive within header_timeout
  // of its first byte; its body within body_timeout of the end of the headers, plus
  // one second for every min_body_rate bytes that arrive (a slow upload that keeps
  // that rate goes on); each flush of answers must be taken by the client within
  // write_timeout. Past a deadline the connection closes.
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{10'000};
  std::size_t min_body_rate = 1024;  // bytes per second
  std::chrono::milliseconds write_timeout{10'000};
  // A request's deadline, from its first byte: the waits of its handler (GET /wait)
  // end there, and it is answered 504.
  std::chrono::milliseconds request_timeout{10'000};
  // Answers waiting to be sent: past this, the connection stops parsing the requests
  // it has read (pipelined ones) and sends what it has before it goes on. One answer
  // may be larger (an /echo body); several never pile up past it.
  std::size_t max_pending_output_bytes = 64 * 1024;
  // After Shutdown(), how long requests in flight have to finish.
  std::chrono::milliseconds drain_timeout{5'000};
  // Connections open at once; more are accepted and closed at once (io::Server).
  std::size_t max_connections = 10'000;
  // Serve GET /metrics and GET /fibers (debug endpoints; 404 when off).
  bool debug_endpoints = false;
  // Serve GET /healthz ("ok"; 404 when off).
  bool health_endpoint = false;
  // The fiber pool (--fiber_pools) that runs the connections (io::ServerOptions::pool;
  // "": the pool of the fiber that calls Serve()).
  std::string pool;
  // Each connection in the next of the pool's scheduling groups (true), or where the
  // accept loop's plain start puts it (io::ServerOptions::spread_connections).
  bool spread_connections = true;
  // The server whose figures GET /metrics reports beside the runtime's (an admin
  // listener reports the main one's); null: this one. Must outlive this server.
  const HttpServer* metrics_of = nullptr;
};

inline constexpr std::size_t kMinHeaderBytes = 256;
inline constexpr std::size_t kMaxHeaderBytes = 65536;  // under http-parser's own 80 KiB
inline constexpr std::size_t kMinBodyBytes = 0;
inline constexpr std::size_t kMaxBodyBytes = std::size_t{1} << 30;
inline constexpr std::int64_t kMinTimeoutMs = 1;
inline constexpr std::int64_t kMaxTimeoutMs = 3'600'000;
inline constexpr std::size_t kMinBodyRate = 1;
inline constexpr std::size_t kMaxBodyRate = std::size_t{1} << 30;
inline constexpr std::size_t kMinPendingOutputBytes = 1024;
inline constexpr std::size_t kMaxPendingOutputBytes = std::size_t{1} << 30;

// OK, or InvalidArgument naming the flag, its value and the accepted range.
absl::Status ValidateHttpServerOptions(const HttpServerOptions& options);
// CHECK-fails with ValidateHttpServerOptions()'s message unless `options` are valid.
void CheckValid(const HttpServerOptions& options);

// Counters since construction; relaxed snapshots, exact once the server is quiet.
struct HttpServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t requests = 0;      // answered with any status, or cancelled
  // Handlers cancelled because their client went away (or the drain closed it), and
  // handlers that reached the request's deadline (answered 504).
  std::uint64_t requests_cancelled = 0;
  std::uint64_t requests_timed_out = 0;
  std::uint64_t bad_requests = 0;  // answered 400, 413 or 431
  std::uint64_t live_connections = 0;
  std::uint64_t connections_refused = 0;  // over max_connections, or out of descriptors
  // The most answer bytes one connection held at once before sending them (bounded by
  // max_pending_output_bytes plus one answer).
  std::uint64_t peak_pending_output_bytes = 0;
};

// Serves HTTP on a listener until shut down, on an io::Server: Serve() accepts in the
// calling fiber and serves every connection in a detached fiber of its own
// (HttpConnection). Shutdown() may come from any thread (a signal-waiting thread, a
// test): it stops accepting, closes connections waiting between requests, lets the
// others finish the requests they have begun (answered with "Connection: close") for
// up to drain_timeout, then closes what is left; Serve() returns when every connection
// fiber has finished.
//
// Thread-safety: Serve() once, from a fiber; Shutdown() and stats() from anywhere. The
// server must outlive Serve()'s return; options must be valid (CHECKed).
class HttpServer {
 public:
  explicit HttpServer(const HttpServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Accepts on `listener` until Shutdown(), then drains; closes the listener. Parks the
  // calling fiber throughout.
  void Serve(io::Listener& listener);
  // Starts the shutdown described above and returns at once. Idempotent.
  void Shutdown();

  HttpServerStats stats() const;
  // stats() in the Prometheus text exposition format (spindle_http_*), for /metrics.
  std::string PrometheusText() const;
  const HttpServerOptions& options() const { return options_; }
  // The stream server underneath (for io::ShutdownSignals::ServeUntilSignal).
  io::Server& io_server() { return server_; }

 private:
  friend class HttpConnection;

  // Connections count these; relaxed: statistics.
  void CountRequest(bool bad) {
    requests_.fetch_add(1, std::memory_order_relaxed);
    if (bad) bad_requests_.fetch_add(1, std::memory_order_relaxed);
  }
  void CountCancelled() { requests_cancelled_.fetch_add(1, std::memory_order_relaxed); }
  void CountTimedOut() { requests_timed_out_.fetch_add(1, std::memory_order_relaxed); }
  void NotePendingOutput(std::uint64_t bytes) {
    std::uint64_t peak = peak_pending_output_.load(std::memory_order_relaxed);
    while (bytes > peak && !peak_pending_output_.compare_exchange_weak(
                               peak, bytes, std::memory_order_relaxed)) {
    }
  }

  const HttpServerOptions options_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> bad_requests_{0};
  std::atomic<std::uint64_t> requests_cancelled_{0};
  std::atomic<std::uint64_t> requests_timed_out_{0};
  std::atomic<std::uint64_t> peak_pending_output_{0};
  io::Server server_;
};

}  // namespace spindle::examples::http

#endif  // SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_SERVER_H_
