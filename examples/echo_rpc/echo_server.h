// Copyright 2026 The Spindle Authors.
//
// The echo RPC server (protocol: echo_protocol.h): one fiber per connection, which
// reads into one buffer and sends back every complete frame of a read with a single
// WriteAll().
//
//   EchoServer server(options);
//   spindle::RunAsFiber([&] { server.Serve(listener); });  // until server.Shutdown()

#ifndef SPINDLE_EXAMPLES_ECHO_RPC_ECHO_SERVER_H_
#define SPINDLE_EXAMPLES_ECHO_RPC_ECHO_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <chrono>

#include "absl/status/status.h"
#include "examples/echo_rpc/echo_protocol.h"
#include "io/server.h"
#include "io/stream.h"

namespace spindle::examples::echo {

struct EchoServerOptions {
  // A frame announcing a longer payload closes its connection.
  std::size_t max_payload_bytes = kDefaultMaxPayloadBytes;
  // Connections open at once; more are accepted and closed at once (io::Server).
  std::size_t max_connections = 10'000;
  // After Shutdown(): how long a connection in the middle of a frame has to finish it.
  std::chrono::milliseconds drain_timeout{5'000};
};

// OK, or InvalidArgument naming the flag (--max_payload_bytes, --max_connections,
// --drain_timeout_ms), its value and the accepted range.
absl::Status ValidateEchoServerOptions(const EchoServerOptions& options);

// Counters since construction; relaxed snapshots, exact once the server is quiet.
struct EchoServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t frames = 0;      // echoed
  std::uint64_t bad_frames = 0;  // over max_payload_bytes
  std::uint64_t live_connections = 0;
};

// Serves the echo protocol on a listener until shut down, on an io::Server: Serve()
// accepts in the calling fiber and serves each connection in a detached fiber.
// Shutdown(), from any thread, closes the listener and every connection between
// frames, lets one in the middle of a frame finish it (up to drain_timeout), and
// Serve() returns once every connection fiber has finished. A connection ends when its
// peer closes (after every complete frame it sent has been echoed) or on an error.
//
// Thread-safety: Serve() once, from a fiber; Shutdown() and stats() from anywhere.
class EchoServer {
 public:
  // `options` must be valid (CHECKed).
  explicit EchoServer(const EchoServerOptions& options);
  ~EchoServer();
  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  // Accepts on `listener` until Shutdown() (or the listener is closed); parks the
  // calling fiber until every connection has finished.
  void Serve(io::Listener& listener);
  // Closes the listener and every connection; returns at once. Idempotent.
  void Shutdown();

  EchoServerStats stats() const;
  // The stream server underneath (for io::ShutdownSignals::ServeUntilSignal).
  io::Server& io_server() { return server_; }

 private:
  void ServeConnection(io::ServerConnection& connection);

  const EchoServerOptions options_;
  std::atomic<std::uint64_t> frames_{0};      // relaxed: a statistic
  std::atomic<std::uint64_t> bad_frames_{0};  // relaxed: a statistic
  io::Server server_;
};

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_ECHO_SERVER_H_
