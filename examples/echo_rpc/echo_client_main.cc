// Copyright 2026 The Spindle Authors.
//
// echo_client --connect=HOST:PORT --connections=M --inflight=N --duration_ms=D
//             --payload=B [--timeout_ms=T] [--fiber_* flags]
//
// Keeps N requests in flight over M connections to an echo_server for D ms (a writer
// and a reader fiber per connection, requests pipelined), checks every byte of every
// answer, and prints requests/s, latency percentiles and errors. Exits 1 if there
// were errors.

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "examples/echo_rpc/echo_client.h"
#include "examples/echo_rpc/echo_protocol.h"
#include "gflags/gflags.h"
#include "io/address.h"
#include "runtime/runtime.h"

DEFINE_string(connect, "127.0.0.1:9090",
              "The echo server: IPV4:PORT, [IPV6]:PORT or unix:PATH");
DEFINE_int64(connections, 16, "Connections to open (range [1, 100000])");
DEFINE_int64(inflight, 256,
             "Requests in flight over all connections (range [connections, 10000000])");
DEFINE_int64(duration_ms, 10000,
             "How long to send requests, in ms (range [1, 86400000])");
DEFINE_int64(payload, 64, "Request payload size, in bytes (range [16, 16777216])");
DEFINE_int64(timeout_ms, 10000,
             "Limit on connecting, and on the answers due after the duration, in ms "
             "(range [1, 3600000])");

namespace {

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "echo_client: %s\n", message.c_str());
  std::exit(2);
}

// The flags are int64 so that a negative value is reported as typed.
void CheckFlag(const char* name, std::int64_t value, std::int64_t min, std::int64_t max) {
  if (value >= min && value <= max) return;
  Fail("--" + std::string(name) + "=" + std::to_string(value) +
       " is out of range: expected an integer in [" + std::to_string(min) + ", " +
       std::to_string(max) + "]");
}

}  // namespace

int main(int argc, char** argv) {
  namespace echo = spindle::examples::echo;
  gflags::SetUsageMessage("a load generator for echo_server");
  // The runtime's layout line on stderr at start (--fiber_log_layout=false hides it).
  gflags::SetCommandLineOptionWithMode("fiber_log_layout", "true", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  CheckFlag("connections", FLAGS_connections, 1, 100'000);
  CheckFlag("inflight", FLAGS_inflight, FLAGS_connections, 10'000'000);
  CheckFlag("duration_ms", FLAGS_duration_ms, 1, 86'400'000);
  CheckFlag("payload", FLAGS_payload, echo::kMinPayloadBytes,
            echo::kDefaultMaxPayloadBytes);
  CheckFlag("timeout_ms", FLAGS_timeout_ms, 1, 3'600'000);
  absl::StatusOr<spindle::io::Address> address =
      spindle::io::Address::Parse(FLAGS_connect);
  if (!address.ok()) {
    Fail("--connect=" + FLAGS_connect + ": " + std::string(address.status().message()));
  }
  echo::EchoLoadOptions options;
  options.connect = *address;
  options.connections = static_cast<std::size_t>(FLAGS_connections);
  options.inflight = static_cast<std::size_t>(FLAGS_inflight);
  options.duration = std::chrono::milliseconds(FLAGS_duration_ms);
  options.payload = static_cast<std::size_t>(FLAGS_payload);
  options.timeout = std::chrono::milliseconds(FLAGS_timeout_ms);
  const absl::Status valid = echo::ValidateEchoLoadOptions(options);
  if (!valid.ok()) Fail(std::string(valid.message()));

  spindle::StartRuntime();
  const echo::EchoLoadResult result = echo::RunEchoLoad(options);
  spindle::TerminateRuntime();

  auto us = [&](double q) {
    return static_cast<double>(result.latency.Quantile(q)) / 1e3;
  };
  std::printf("echo_client: %" PRId64 " connections, %" PRId64 " in flight, %" PRId64
              "-byte payloads, %.2f s\n",
              FLAGS_connections, FLAGS_inflight, FLAGS_payload, result.seconds);
  std::printf("requests %" PRIu64
              "  qps %.0f  p50 %.1f us  p99 %.1f us  p999 %.1f us  "
              "errors %" PRIu64 "\n",
              result.requests, result.qps(), us(0.5), us(0.99), us(0.999), result.errors);
  return result.errors == 0 ? 0 : 1;
}
