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
  // Deadlines, each set once when its phase begins and never renewed by a read: a
  // connection between frames is closed after idle_timeout; a frame must arrive within
  // frame_timeout of its first byte, plus a second for every min_frame_rate bytes
  // that arrive; each echo must be taken by the client within write_timeout.
  std::chrono::milliseconds idle_timeout{60'000};
  std::chrono::milliseconds frame_timeout{10'000};
  std::size_t min_frame_rate = 1024;  // bytes per second
  std::chrono::milliseconds write_timeout{10'000};
  // A stand-in for a handler that calls a slow backend: each echo waits this long first
  // (0: none). The wait runs in a fiber of its own, in an execution context whose
  // deadline is request_timeout from the request's first byte (the request: the frames
  // one read completed), while the connection's fiber watches the socket: a client that
  // closes or resets cancels it, and one that is not answered by the deadline is closed
  // (the protocol has no error frame).
  std::chrono::milliseconds reply_delay{0};
  std::chrono::milliseconds request_timeout{10'000};
};

// OK, or InvalidArgument naming the flag (--max_payload_bytes, --max_connections,
// --drain_timeout_ms, --idle_timeout_ms, --frame_timeout_ms, --min_frame_rate,
// --write_timeout_ms, --reply_delay_ms, --request_timeout_ms), its value and the
// accepted range.
absl::Status ValidateEchoServerOptions(const EchoServerOptions& options);

// Counters since construction; relaxed snapshots, exact once the server is quiet.
struct EchoServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t frames = 0;      // echoed
  std::uint64_t bad_frames = 0;  // over max_payload_bytes
  // With a reply_delay: requests whose client went away while they waited (their
  // handler cancelled), and requests not answered by their deadline (closed).
  std::uint64_t requests_cancelled = 0;
  std::uint64_t requests_timed_out = 0;
  std::uint64_t live_connections = 0;
  // Buffer bytes the connections hold now. A connection's buffer grows with the bytes
  // of a frame as they arrive (never ahead of them: at most twice what arrived) and
  // shrinks back to 16 KiB once the frame is echoed.
  std::uint64_t buffer_bytes = 0;
  std::uint64_t peak_buffer_bytes = 0;  // the largest one connection held
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
  // One connection's loop; throws std::bad_alloc when a buffer cannot grow (io::Server
  // then closes that connection).
  void ServeConnection(io::ServerConnection& connection);
  // The request's handler (reply_delay) while this fiber watches the client: true if
  // the echo may go out; false if the client went away or the request's deadline
  // (request_timeout from `request_start`) passed first (counted; the caller closes).
  bool AwaitReply(io::Stream& stream, io::Deadline request_start);

  const EchoServerOptions options_;
  std::atomic<std::uint64_t> frames_{0};      // relaxed: a statistic
  std::atomic<std::uint64_t> bad_frames_{0};  // relaxed: a statistic
  std::atomic<std::uint64_t> requests_cancelled_{0};  // relaxed: a statistic
  std::atomic<std::uint64_t> requests_timed_out_{0};  // relaxed: a statistic
  std::atomic<std::uint64_t> buffer_bytes_{0};       // relaxed: a statistic
  std::atomic<std::uint64_t> peak_buffer_bytes_{0};  // relaxed: a statistic
  io::Server server_;
};

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_ECHO_SERVER_H_
