// Copyright 2026 The Spindle Authors.
//
// http_server --listen=HOST:PORT [--max_header_bytes=N] [--max_body_bytes=N]
//             [--idle_timeout_ms=N] [--header_timeout_ms=N] [--body_timeout_ms=N]
//             [--min_body_rate=N] [--write_timeout_ms=N] [--max_pending_output_bytes=N]
//             [--drain_timeout_ms=N] [--max_connections=N] [--debug_endpoints]
//             [--fiber_* flags] [--flagfile=F]
//
// Serves GET / and POST /echo (see http_server.h) until SIGTERM or SIGINT, then stops
// accepting, drains the requests in flight and exits 0 (io::ShutdownSignals).

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "examples/http_server/http_server.h"
#include "gflags/gflags.h"
#include "io/address.h"
#include "io/server.h"
#include "io/stream.h"
#include "runtime/runtime.h"

DEFINE_string(listen, "127.0.0.1:8080",
              "Address to listen on: IPV4:PORT, [IPV6]:PORT or unix:PATH (port 0: any)");
DEFINE_uint64(max_header_bytes, 8192,
              "Largest request line plus headers, in bytes; more is answered 431 "
              "(range [256, 65536])");
DEFINE_uint64(max_body_bytes, 1 << 20,
              "Largest POST /echo body, in bytes; more is answered 413 "
              "(range [0, 1073741824])");
DEFINE_int64(idle_timeout_ms, 60000,
             "Close a keep-alive connection that sends no new request for this long, in "
             "milliseconds (range [1, 3600000])");
DEFINE_int64(header_timeout_ms, 10000,
             "A request's line and headers must all arrive within this many milliseconds "
             "of its first byte, however they trickle in (range [1, 3600000])");
DEFINE_int64(body_timeout_ms, 10000,
             "A request body must arrive within this many milliseconds of the headers' "
             "end, plus a second per --min_body_rate bytes received (range [1, 3600000])");
DEFINE_uint64(min_body_rate, 1024,
              "Bytes per second a request body must keep up to extend its deadline "
              "(range [1, 1073741824])");
DEFINE_int64(write_timeout_ms, 10000,
             "A client must take each flush of answers within this many milliseconds, or "
             "the connection closes (range [1, 3600000])");
DEFINE_int64(request_timeout_ms, 10000,
             "a request's deadline from its first byte, for the waits of its handler "
             "(GET /wait): 504 past it; in [1, 3600000]");
DEFINE_uint64(max_pending_output_bytes, 65536,
              "Answers a connection holds before it stops parsing pipelined requests and "
              "sends them (range [1024, 1073741824])");
DEFINE_bool(debug_endpoints, false,
            "Serve GET /metrics and GET /fibers (they reveal code addresses and walk every "
            "fiber: keep them off on a public listener)");
DEFINE_int64(drain_timeout_ms, 5000,
             "On SIGTERM, how long requests in flight may take to finish, in "
             "milliseconds (range [1, 3600000])");
DEFINE_uint64(max_connections, 10000,
              "Connections open at once; one more is accepted and closed at once "
              "(range [1, 16777216])");

namespace {

using spindle::examples::http::HttpServer;
using spindle::examples::http::HttpServerOptions;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "http_server: %s\n", message.c_str());
  std::exit(2);
}

HttpServerOptions OptionsFromFlags() {
  HttpServerOptions options;
  options.max_header_bytes = FLAGS_max_header_bytes;
  options.max_body_bytes = FLAGS_max_body_bytes;
  options.idle_timeout = std::chrono::milliseconds(FLAGS_idle_timeout_ms);
  options.drain_timeout = std::chrono::milliseconds(FLAGS_drain_timeout_ms);
  options.max_connections = FLAGS_max_connections;
  options.header_timeout = std::chrono::milliseconds(FLAGS_header_timeout_ms);
  options.body_timeout = std::chrono::milliseconds(FLAGS_body_timeout_ms);
  options.min_body_rate = FLAGS_min_body_rate;
  options.write_timeout = std::chrono::milliseconds(FLAGS_write_timeout_ms);
  options.request_timeout = std::chrono::milliseconds(FLAGS_request_timeout_ms);
  options.max_pending_output_bytes = FLAGS_max_pending_output_bytes;
  options.debug_endpoints = FLAGS_debug_endpoints;
  // uint64 flags past int64: report the flag's own value, not a wrapped one.
  if (FLAGS_max_header_bytes > spindle::examples::http::kMaxHeaderBytes) {
    Fail("--max_header_bytes=" + std::to_string(FLAGS_max_header_bytes) +
         " is out of range: expected an integer in [256, 65536]");
  }
  if (FLAGS_max_body_bytes > spindle::examples::http::kMaxBodyBytes) {
    Fail("--max_body_bytes=" + std::to_string(FLAGS_max_body_bytes) +
         " is out of range: expected an integer in [0, 1073741824]");
  }
  const absl::Status status = spindle::examples::http::ValidateHttpServerOptions(options);
  if (!status.ok()) Fail(std::string(status.message()));
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  // First, before any thread starts: SIGTERM and SIGINT are taken by one thread.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage("a keep-alive HTTP/1.1 server: GET / and POST /echo");
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const HttpServerOptions options = OptionsFromFlags();
  absl::StatusOr<spindle::io::Address> address =
      spindle::io::Address::Parse(FLAGS_listen);
  if (!address.ok()) {
    Fail("--listen=" + FLAGS_listen + ": " + std::string(address.status().message()));
  }

  spindle::StartRuntime();
  absl::StatusOr<spindle::io::Listener> listener =
      spindle::io::Listener::Listen(*address);
  if (!listener.ok()) Fail(std::string(listener.status().message()));
  std::printf("http_server: listening on %s\n", listener->address().ToString().c_str());
  std::fflush(stdout);

  HttpServer server(options);
  signals.ServeUntilSignal(server.io_server(), *listener);
  spindle::TerminateRuntime();

  const auto stats = server.stats();
  std::printf("http_server: drained; %" PRIu64 " connections, %" PRIu64
              " requests (%" PRIu64 " bad)\n",
              stats.connections_accepted, stats.requests, stats.bad_requests);
  return 0;
}
