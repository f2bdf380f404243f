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

#include "examples/echo_rpc/echo_protocol.h"
#include "io/stream.h"
#include "sync/event.h"
#include "sync/mutex.h"

namespace spindle::examples::echo {

struct EchoServerOptions {
  // A frame announcing a longer payload closes its connection.
  std::size_t max_payload_bytes = kDefaultMaxPayloadBytes;
};

// Counters since construction; relaxed snapshots, exact once the server is quiet.
struct EchoServerStats {
  std::uint64_t connections_accepted = 0;
  std::uint64_t frames = 0;      // echoed
  std::uint64_t bad_frames = 0;  // over max_payload_bytes
  std::uint64_t live_connections = 0;
};

// Serves the echo protocol on a listener until shut down. Serve() runs the accept
// loop in the calling fiber and serves each accepted stream in a detached fiber.
// Shutdown(), from any thread, closes the listener and every connection; Serve()
// returns once every connection fiber has finished. A connection ends when its peer
// closes (after every complete frame it sent has been echoed) or on an error.
//
// Thread-safety: Serve() once, from a fiber; Shutdown() and stats() from anywhere.
class EchoServer {
 public:
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

 private:
  struct Connection;

  void ServeConnection(Connection* connection);
  void Register(Connection* connection);
  void Unregister(Connection* connection);

  const EchoServerOptions options_;
  // seq_cst: Shutdown() sets it, then closes what is registered under mu_; Register()
  // links a connection under mu_, then checks it. One of them closes every connection.
  std::atomic<bool> shutting_down_{false};
  std::atomic<std::uint64_t> connections_accepted_{0};
  std::atomic<std::uint64_t> frames_{0};
  std::atomic<std::uint64_t> bad_frames_{0};
  Event drained_;  // set when shutting down and the last connection has unregistered

  mutable Mutex mu_;
  io::Listener* listener_ = nullptr;    // guarded by mu_; set while Serve() accepts
  Connection* connections_ = nullptr;   // guarded by mu_; intrusive list head
  std::uint64_t live_connections_ = 0;  // guarded by mu_
};

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_ECHO_SERVER_H_
