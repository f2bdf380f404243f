// Copyright 2026 The Spindle Authors.
//
// http_server --listen=HOST:PORT [--max_header_bytes=N] [--max_body_bytes=N]
//             [--idle_timeout_ms=N] [--header_timeout_ms=N] [--body_timeout_ms=N]
//             [--min_body_rate=N] [--write_timeout_ms=N] [--max_pending_output_bytes=N]
//             [--drain_timeout_ms=N] [--max_connections=N] [--debug_endpoints]
//             [--pool=P] [--spread_connections=BOOL]
//             [--admin_listen=HOST:PORT [--admin_pool=P]]
//             [--fiber_* flags] [--flagfile=F]
//
// Serves GET / and POST /echo (see http_server.h) until SIGTERM or SIGINT, then stops
// accepting, drains the requests in flight and exits 0 (io::ShutdownSignals). With
// --admin_listen, a second listener answers GET /healthz and GET /metrics from the fiber
// pool --admin_pool (e.g. --fiber_pools=default:auto,admin:1 --admin_pool=admin), so a
// health check does not wait behind the main load. A connection the main pool cannot
// take (at its --fiber_pools max_fibers cap, or no stack to be had) is closed at once and
// counted (spindle_http_connections_refused_by_pool_total).

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "examples/http_server/http_server.h"
#include "fiber/fiber.h"
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
DEFINE_string(pool, "",
              "The fiber pool (--fiber_pools) that runs the connections of --listen "
              "(default \"\" = the default pool)");
DEFINE_bool(spread_connections, true,
            "Start each connection of --listen in the next of its pool's scheduling "
            "groups, so that every group and NUMA node serves a share (false: in the "
            "accept loop's group, where a plain start goes)");
DEFINE_string(admin_listen, "",
              "An address for an admin listener that serves GET /healthz and GET /metrics "
              "(and /fibers), e.g. 127.0.0.1:9090 (default \"\" = none)");
DEFINE_string(admin_pool, "",
              "The fiber pool that runs the admin listener's connections, e.g. admin with "
              "--fiber_pools=default:auto,admin:1: its answers then do not wait behind "
              "the main listener's load (default \"\" = the default pool)");
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
  options.health_endpoint = true;
  options.pool = FLAGS_pool;
  options.spread_connections = FLAGS_spread_connections;
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

  std::optional<spindle::io::Address> admin_address;
  if (!FLAGS_admin_listen.empty()) {
    absl::StatusOr<spindle::io::Address> parsed = spindle::io::Address::Parse(FLAGS_admin_listen);
    if (!parsed.ok()) {
      Fail("--admin_listen=" + FLAGS_admin_listen + ": " +
           std::string(parsed.status().message()));
    }
    admin_address = *parsed;
  }

  const std::string runtime_error = spindle::TryStartRuntime();
  if (!runtime_error.empty()) Fail(runtime_error);
  for (const std::string* pool : {&FLAGS_pool, &FLAGS_admin_pool}) {
    if (pool->empty()) continue;
    const absl::StatusOr<spindle::FiberPool> found = spindle::FiberPool::Find(*pool);
    if (!found.ok()) {
      Fail(std::string(pool == &FLAGS_pool ? "--pool=" : "--admin_pool=") + *pool + ": " +
           std::string(found.status().message()));
    }
  }
  absl::StatusOr<spindle::io::Listener> listener =
      spindle::io::Listener::Listen(*address);
  if (!listener.ok()) Fail(std::string(listener.status().message()));
  std::printf("http_server: listening on %s\n", listener->address().ToString().c_str());
  std::optional<spindle::io::Listener> admin_listener;
  if (admin_address.has_value()) {
    absl::StatusOr<spindle::io::Listener> admin = spindle::io::Listener::Listen(*admin_address);
    if (!admin.ok()) Fail("--admin_listen: " + std::string(admin.status().message()));
    admin_listener = std::move(*admin);
    std::printf("http_server: admin (/healthz, /metrics) on %s, pool %s\n",
                admin_listener->address().ToString().c_str(),
                FLAGS_admin_pool.empty() ? "default" : FLAGS_admin_pool.c_str());
  }
  std::fflush(stdout);

  HttpServer server(options);
  if (!admin_listener.has_value()) {
    signals.ServeUntilSignal(server.io_server(), *listener);
  } else {
    HttpServerOptions admin_options = options;
    admin_options.debug_endpoints = true;
    admin_options.pool = FLAGS_admin_pool;
    admin_options.max_connections = 64;
    admin_options.metrics_of = &server;
    HttpServer admin(admin_options);
    signals.RunUntilSignal(
        [&] {
          spindle::RunAsFiber([&] {
            // The admin accept loop runs in the admin pool too, so that accepting a
            // health check never waits behind the main listener's work.
            spindle::Fiber::Attributes in_admin;
            if (!FLAGS_admin_pool.empty()) in_admin.pool_name = FLAGS_admin_pool.c_str();
            spindle::Fiber admin_serving(in_admin, [&] { admin.Serve(*admin_listener); });
            server.Serve(*listener);
            admin.Shutdown();  // the main server ended (a signal, or its listener closed)
            admin_serving.join();
          });
        },
        [&] {
          server.Shutdown();
          admin.Shutdown();
        });
  }
  spindle::TerminateRuntime();

  const auto stats = server.stats();
  std::printf("http_server: drained; %" PRIu64 " connections, %" PRIu64
              " requests (%" PRIu64 " bad)\n",
              stats.connections_accepted, stats.requests, stats.bad_requests);
  return 0;
}
