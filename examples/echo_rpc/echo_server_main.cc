// Copyright 2026 The Spindle Authors.
//
// echo_server --listen=HOST:PORT [--max_payload_bytes=N] [--max_connections=N]
//             [--drain_timeout_ms=N] [--idle_timeout_ms=N] [--frame_timeout_ms=N]
//             [--min_frame_rate=N] [--write_timeout_ms=N] [--reply_delay_ms=N]
//             [--request_timeout_ms=N] [--fiber_* flags]
//
// Serves the echo RPC protocol (echo_protocol.h) until SIGTERM or SIGINT, then closes
// every connection between frames, lets one in the middle of a frame finish it, and
// exits 0 (io::ShutdownSignals).

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "examples/echo_rpc/echo_server.h"
#include "gflags/gflags.h"
#include "io/address.h"
#include "io/server.h"
#include "io/stream.h"
#include "runtime/runtime.h"

DEFINE_string(listen, "127.0.0.1:9090",
              "Address to listen on: IPV4:PORT, [IPV6]:PORT or unix:PATH (port 0: any)");
DEFINE_int64(max_payload_bytes, 16 << 20,
             "Largest request payload, in bytes; a larger one closes its connection "
             "(range [0, 16777216])");
DEFINE_uint64(max_connections, 10000,
              "Connections open at once; one more is accepted and closed at once "
              "(range [1, 16777216])");
DEFINE_int64(drain_timeout_ms, 5000,
             "On SIGTERM, how long a connection in the middle of a frame may take to "
             "finish it, in milliseconds (range [1, 3600000])");
DEFINE_int64(idle_timeout_ms, 60000,
             "Close a connection that starts no frame for this long, in milliseconds "
             "(range [1, 3600000])");
DEFINE_int64(frame_timeout_ms, 10000,
             "A frame must arrive within this many milliseconds of its first byte, plus a "
             "second per --min_frame_rate bytes received (range [1, 3600000])");
DEFINE_uint64(min_frame_rate, 1024,
              "Bytes per second a frame must keep up to extend its deadline "
              "(range [1, 1073741824])");
DEFINE_int64(write_timeout_ms, 10000,
             "A client must take each echo within this many milliseconds, or the "
             "connection closes (range [1, 3600000])");
DEFINE_int64(reply_delay_ms, 0,
             "Each echo waits this many milliseconds first, a stand-in for a handler "
             "that calls a slow backend; a client that goes away meanwhile cancels the "
             "wait (range [0, 3600000]; 0 = none)");
DEFINE_int64(request_timeout_ms, 10000,
             "A request (the frames one read completed) must be ready to echo within "
             "this many milliseconds of its first byte, or its wait is cancelled and "
             "the connection closes (range [1, 3600000])");

namespace {

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "echo_server: %s\n", message.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  // First, before any thread starts: SIGTERM and SIGINT are taken by one thread.
  spindle::io::ShutdownSignals signals;
  gflags::SetUsageMessage("an echo RPC server (4-byte big-endian length + payload)");
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (FLAGS_max_payload_bytes < 0) {  // the size_t below would wrap
    Fail("--max_payload_bytes=" + std::to_string(FLAGS_max_payload_bytes) +
         " is out of range: expected an integer in [0, 16777216]");
  }
  spindle::examples::echo::EchoServerOptions options;
  options.max_payload_bytes = static_cast<std::size_t>(FLAGS_max_payload_bytes);
  options.max_connections = FLAGS_max_connections;
  options.drain_timeout = std::chrono::milliseconds(FLAGS_drain_timeout_ms);
  options.idle_timeout = std::chrono::milliseconds(FLAGS_idle_timeout_ms);
  options.frame_timeout = std::chrono::milliseconds(FLAGS_frame_timeout_ms);
  options.min_frame_rate = FLAGS_min_frame_rate;
  options.write_timeout = std::chrono::milliseconds(FLAGS_write_timeout_ms);
  options.reply_delay = std::chrono::milliseconds(FLAGS_reply_delay_ms);
  options.request_timeout = std::chrono::milliseconds(FLAGS_request_timeout_ms);
  if (const absl::Status status = spindle::examples::echo::ValidateEchoServerOptions(options);
      !status.ok()) {
    Fail(std::string(status.message()));
  }
  absl::StatusOr<spindle::io::Address> address =
      spindle::io::Address::Parse(FLAGS_listen);
  if (!address.ok()) {
    Fail("--listen=" + FLAGS_listen + ": " + std::string(address.status().message()));
  }

  spindle::StartRuntime();
  absl::StatusOr<spindle::io::Listener> listener =
      spindle::io::Listener::Listen(*address);
  if (!listener.ok()) Fail(std::string(listener.status().message()));
  std::printf("echo_server: listening on %s\n", listener->address().ToString().c_str());
  std::fflush(stdout);

  spindle::examples::echo::EchoServer server(options);
  signals.ServeUntilSignal(server.io_server(), *listener);
  spindle::TerminateRuntime();

  const auto stats = server.stats();
  std::printf("echo_server: stopped; %" PRIu64 " connections, %" PRIu64
              " frames echoed (%" PRIu64 " refused); %" PRIu64 " requests cancelled, %" PRIu64
              " timed out\n",
              stats.connections_accepted, stats.frames, stats.bad_frames,
              stats.requests_cancelled, stats.requests_timed_out);
  return 0;
}
