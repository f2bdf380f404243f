// Copyright 2026 The Spindle Authors.
//
// A load generator for the echo RPC server: keeps a fixed number of requests in flight
// over a fixed number of connections for a while, checks every byte of every answer,
// and reports throughput and latency percentiles.

#ifndef SPINDLE_EXAMPLES_ECHO_RPC_ECHO_CLIENT_H_
#define SPINDLE_EXAMPLES_ECHO_RPC_ECHO_CLIENT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "examples/echo_rpc/latency_histogram.h"
#include "io/address.h"

namespace spindle::examples::echo {

// Each field is the echo_client flag of the same name.
struct EchoLoadOptions {
  io::Address connect;
  std::size_t connections = 1;
  // Requests in flight over all connections, spread evenly (at least one each).
  std::size_t inflight = 1;
  std::chrono::milliseconds duration{1000};
  // Bytes per request payload: an 8-byte sequence number, the 8-byte send time, then
  // a pattern derived from both and the connection (so every request differs).
  std::size_t payload = 64;
  // For connecting, and for the answers still due when the duration ends.
  std::chrono::milliseconds timeout{10'000};
};

inline constexpr std::size_t kMinPayloadBytes = 16;

// OK, or InvalidArgument naming the flag, its value and the accepted range.
absl::Status ValidateEchoLoadOptions(const EchoLoadOptions& options);

struct EchoLoadResult {
  std::uint64_t requests = 0;  // answered, every byte as sent
  // Failed connects, wrong answers, and requests never answered (a broken connection).
  std::uint64_t errors = 0;
  double seconds = 0;        // from the first request to the last answer
  LatencyHistogram latency;  // per answered request, send to answer, in ns

  double qps() const { return seconds > 0 ? static_cast<double>(requests) / seconds : 0; }
};

// Connects `connections` streams, then runs on each a writer fiber (sends requests
// whenever the connection has fewer than its share of `inflight` outstanding, several
// per write when several are free) and a reader fiber (checks answers in order,
// records latencies, frees their slots). Each connection's first window (its share of
// `inflight`) is sent whatever the time; after `duration` the writers stop and shut
// down their sending side; the server echoes what it has and closes, which ends the
// readers. Call from a fiber (it parks) or a plain thread (it blocks); the options
// must be valid (CHECKed).
EchoLoadResult RunEchoLoad(const EchoLoadOptions& options);

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_ECHO_CLIENT_H_
