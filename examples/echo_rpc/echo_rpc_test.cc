// Copyright 2026 The Spindle Authors.
//
// The echo server in-process on a 2-worker runtime. The main test holds 1,000
// connections open at once (100 client fibers with 10 connections each, so the TSan
// lane stays under its fiber cap), sends 5 distinct requests of 100..4000 bytes on
// each and checks every byte that comes back. Every wait has a deadline.

#include <sys/resource.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/echo_rpc/echo_client.h"
#include "examples/echo_rpc/echo_protocol.h"
#include "examples/echo_rpc/echo_server.h"
#include "examples/echo_rpc/latency_histogram.h"
#include "examples/testing/failing_new.h"
#include "fiber/fiber.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/address.h"
#include "io/stream.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "sync/event.h"
#include "sync/latch.h"

namespace spindle::examples::echo {
namespace {

using namespace std::chrono_literals;

constexpr auto kTimeout = 45s;  // the whole of one test's traffic

// The server on a loopback port, serving from a fiber for the object's lifetime.
class TestServer {
 public:
  explicit TestServer(const EchoServerOptions& options = {}) : server_(options) {
    absl::StatusOr<io::Listener> listener =
        io::Listener::Listen(io::Address::Ipv4Loopback(0));
    CHECK(listener.ok()) << listener.status();
    listener_ = std::move(*listener);
    address_ = listener_.address();
    serving_ = Fiber([this] {
      server_.Serve(listener_);
      served_.Set();
    });
  }
  ~TestServer() {
    server_.Shutdown();
    EXPECT_TRUE(served_.WaitFor(kTimeout)) << "Serve() did not return after Shutdown()";
    serving_.join();
  }

  const io::Address& address() const { return address_; }
  EchoServer& server() { return server_; }

 private:
  EchoServer server_;
  io::Listener listener_;
  io::Address address_;
  Event served_;
  Fiber serving_;
};

std::string Frame(absl::string_view payload) {
  std::string frame(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(static_cast<std::uint32_t>(payload.size()), frame.data());
  frame.append(payload.data(), payload.size());
  return frame;
}

// Request `request` of connection `connection`: 100..4000 bytes, its content a
// function of both (so a reply from another request or connection is caught).
std::string RequestPayload(std::size_t connection, std::size_t request) {
  const std::size_t id = connection * 5 + request;
  std::string payload(100 + (id * 7919) % 3901, '\0');
  std::uint64_t x = id * 0x9E3779B97F4A7C15ull + 1;
  for (char& c : payload) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return payload;
}

// Raises the descriptor limit to `needed` if the soft limit is lower; false if the
// hard limit does not allow it.
bool EnsureDescriptors(rlim_t needed) {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return false;
  if (limit.rlim_cur >= needed) return true;
  if (limit.rlim_max < needed) return false;
  limit.rlim_cur = needed;
  return setrlimit(RLIMIT_NOFILE, &limit) == 0;
}

TEST(EchoRpcTest, ThousandConcurrentConnectionsEveryByteChecked) {
  constexpr std::size_t kClients = 100;
  constexpr std::size_t kConnectionsPerClient = 10;
  constexpr std::size_t kRequests = 5;
  constexpr std::size_t kConnections = kClients * kConnectionsPerClient;
  // Both ends of every connection live in this process.
  ASSERT_TRUE(EnsureDescriptors(2 * kConnections + 256))
      << "this test needs " << 2 * kConnections + 256 << " file descriptors";
  testing::ScopedRuntime runtime(2);
  TestServer server;
  const io::Deadline deadline = io::Clock::now() + kTimeout;

  std::atomic<std::size_t> failures{0};
  std::atomic<std::size_t> checked_bytes{0};
  std::atomic<std::size_t> opened{0};
  // Every client keeps its connections open until all clients are done, so the 1,000
  // connections are open at the same time.
  Latch all_done(kClients);
  auto fail = [&](absl::string_view what, const absl::Status& status) {
    if (failures.fetch_add(1) < 10) LOG(ERROR) << what << ": " << status;
  };
  // One client fiber's work on its connections (`first` .. `first` + 10).
  auto run_client = [&](std::size_t first, std::vector<io::Stream>& streams) {
    for (std::size_t i = 0; i < kConnectionsPerClient; ++i) {
      absl::StatusOr<io::Stream> stream = io::Stream::Connect(server.address(), deadline);
      if (!stream.ok()) return fail("connect", stream.status());
      streams.push_back(std::move(*stream));
      opened.fetch_add(1);
    }
    for (std::size_t request = 0; request < kRequests; ++request) {
      // Send on every connection, then collect every answer: 10 in flight per fiber.
      for (std::size_t i = 0; i < kConnectionsPerClient; ++i) {
        const std::string frame = Frame(RequestPayload(first + i, request));
        const absl::Status status =
            streams[i].WriteAll(frame.data(), frame.size(), deadline);
        if (!status.ok()) return fail("write", status);
      }
      for (std::size_t i = 0; i < kConnectionsPerClient; ++i) {
        const std::string expected = Frame(RequestPayload(first + i, request));
        std::string answer(expected.size(), '\0');
        const absl::Status status =
            streams[i].ReadFull(answer.data(), answer.size(), deadline);
        if (!status.ok()) return fail("read", status);
        if (answer != expected) return fail("compare", absl::DataLossError("differs"));
        checked_bytes.fetch_add(answer.size());
      }
    }
  };
  std::vector<Fiber> clients;
  for (std::size_t client = 0; client < kClients; ++client) {
    clients.emplace_back([&, client] {
      std::vector<io::Stream> streams;
      run_client(client * kConnectionsPerClient, streams);
      all_done.count_down();
      if (!all_done.WaitUntil(deadline)) {
        fail("wait", absl::DeadlineExceededError("latch"));
      }
    });
  }
  for (Fiber& client : clients) client.join();

  EXPECT_EQ(failures.load(), 0u);
  EXPECT_EQ(opened.load(), kConnections);
  std::size_t expected_bytes = 0;
  for (std::size_t c = 0; c < kConnections; ++c) {
    for (std::size_t r = 0; r < kRequests; ++r) {
      expected_bytes += kFrameHeaderBytes + RequestPayload(c, r).size();
    }
  }
  EXPECT_EQ(checked_bytes.load(), expected_bytes);
  EXPECT_EQ(server.server().stats().connections_accepted, kConnections);
}

TEST(EchoRpcTest, FramesSplitAcrossReadsAndLargerThanTheBuffer) {
  testing::ScopedRuntime runtime(2);
  TestServer server;
  const io::Deadline deadline = io::Clock::now() + kTimeout;
  absl::StatusOr<io::Stream> stream = io::Stream::Connect(server.address(), deadline);
  ASSERT_TRUE(stream.ok()) << stream.status();
  std::string big(100'000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) {
    big[i] = static_cast<char>(i * 13 + i / 251);
  }
  const std::string sent = Frame("a") + Frame("") + Frame(big) + Frame("tail");
  // Odd-sized pieces: headers and payloads split anywhere.
  for (std::size_t at = 0; at < sent.size(); at += 997) {
    const std::size_t n = std::min<std::size_t>(997, sent.size() - at);
    ASSERT_TRUE(stream->WriteAll(sent.data() + at, n, deadline).ok());
  }
  std::string answer(sent.size(), '\0');
  ASSERT_TRUE(stream->ReadFull(answer.data(), answer.size(), deadline).ok());
  EXPECT_TRUE(answer == sent) << "echo differs";
  // The server closes once we close our side and it has echoed everything.
  ASSERT_TRUE(stream->ShutdownWrite().ok());
  char byte;
  absl::StatusOr<std::size_t> end = stream->Read(&byte, 1, deadline);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(*end, 0u);
  EXPECT_EQ(server.server().stats().frames, 4u);
}

TEST(EchoRpcTest, OversizedFrameClosesTheConnection) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.max_payload_bytes = 1000;
  TestServer server(options);
  const io::Deadline deadline = io::Clock::now() + kTimeout;
  absl::StatusOr<io::Stream> stream = io::Stream::Connect(server.address(), deadline);
  ASSERT_TRUE(stream.ok()) << stream.status();
  const std::string frame = Frame(std::string(1001, 'x'));
  ASSERT_TRUE(stream->WriteAll(frame.data(), kFrameHeaderBytes, deadline).ok());
  char byte;
  absl::StatusOr<std::size_t> end = stream->Read(&byte, 1, deadline);
  EXPECT_TRUE(!end.ok() || *end == 0) << "expected the connection to close";
  EXPECT_EQ(server.server().stats().bad_frames, 1u);
}

TEST(EchoRpcTest, LoadGeneratorKeepsRequestsInFlightWithoutErrors) {
  testing::ScopedRuntime runtime(2);
  TestServer server;
  EchoLoadOptions options;
  options.connect = server.address();
  options.connections = 4;
  options.inflight = 30;  // 8, 8, 7, 7
  options.duration = 200ms;
  options.payload = 100;
  const EchoLoadResult result = RunEchoLoad(options);
  EXPECT_EQ(result.errors, 0u);
  // Every connection's first window went out and was answered, however slow the
  // machine (how many more in 200 ms is a speed, measured by the echo benchmark).
  EXPECT_GE(result.requests, options.inflight);
  EXPECT_EQ(result.latency.count(), result.requests);
  EXPECT_EQ(server.server().stats().frames, result.requests);
}

TEST(EchoRpcTest, LoadGeneratorCountsAnUnreachableServer) {
  testing::ScopedRuntime runtime(2);
  io::Address address;
  {
    // A port nobody listens on: bind one, then close it.
    absl::StatusOr<io::Listener> listener =
        io::Listener::Listen(io::Address::Ipv4Loopback(0));
    ASSERT_TRUE(listener.ok());
    address = listener->address();
  }
  EchoLoadOptions options;
  options.connect = address;
  // Two connections failing at once on two workers (io/ formats OS errors itself, not
  // through Debian's uninstrumented absl StrError, which TSan saw as a race here).
  options.connections = 2;
  options.inflight = 2;
  options.duration = 10ms;
  options.timeout = 5s;
  const EchoLoadResult result = RunEchoLoad(options);
  EXPECT_EQ(result.requests, 0u);
  EXPECT_EQ(result.errors, 2u);
}

TEST(EchoRpcTest, LoadOptionsValidationNamesFlagValueAndRange) {
  EchoLoadOptions options;
  options.connect = io::Address::Ipv4Loopback(1);
  EXPECT_TRUE(ValidateEchoLoadOptions(options).ok());
  options.connections = 4;
  options.inflight = 3;
  EXPECT_EQ(ValidateEchoLoadOptions(options).message(),
            "--inflight=3 is out of range: expected an integer in [4, 10000000]");
  options.inflight = 4;
  options.payload = 8;
  EXPECT_EQ(ValidateEchoLoadOptions(options).message(),
            "--payload=8 is out of range: expected an integer in [16, 16777216]");
}

io::Stream ConnectTo(const io::Address& address) {
  absl::StatusOr<io::Stream> stream =
      io::Stream::Connect(address, io::Clock::now() + kTimeout);
  CHECK(stream.ok()) << stream.status();
  return std::move(*stream);
}

// Sends `frame` and reads as many bytes back (in one fiber: frames that fit the
// socket buffers); "" if either fails.
std::string RoundTrip(io::Stream& stream, const std::string& frame) {
  std::string echoed(frame.size(), '\0');
  if (!stream.WriteAll(frame.data(), frame.size(), io::Clock::now() + kTimeout).ok() ||
      !stream.ReadFull(echoed.data(), echoed.size(), io::Clock::now() + kTimeout).ok()) {
    return "";
  }
  return echoed;
}

// True once the server closes `stream` (end of stream or a reset) within kTimeout.
bool ClosedByServer(io::Stream& stream) {
  char buffer[4096];
  for (;;) {
    absl::StatusOr<std::size_t> n =
        stream.Read(buffer, sizeof(buffer), io::Clock::now() + kTimeout);
    if (!n.ok()) return !absl::IsDeadlineExceeded(n.status());
    if (*n == 0) return true;
  }
}

// A header announcing a large payload reserves nothing ahead of the bytes: the buffer
// doubles only as the frame fills it (it used to take the whole 16 MiB at the header).
TEST(EchoServerMemoryTest, AnAnnouncedLengthReservesOnlyWhatArrived) {
  testing::ScopedRuntime runtime(2);
  TestServer server;
  io::Stream client = ConnectTo(server.address());
  std::string start(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(8u << 20, start.data());  // 8 MiB announced
  start += std::string(20 * 1024, 'x');       // 20 KiB sent: past the first 16 KiB
  ASSERT_TRUE(client.WriteAll(start.data(), start.size(), io::Clock::now() + kTimeout).ok());
  ASSERT_TRUE(spindle::testing::WaitFor(
      [&] { return server.server().stats().peak_buffer_bytes >= 32 * 1024; }));
  EXPECT_EQ(server.server().stats().peak_buffer_bytes, 32u * 1024);
}

// After a large frame is echoed the connection's buffer goes back to 16 KiB: idle
// connections that each echoed 4 MiB used to keep 4 MiB each.
TEST(EchoServerMemoryTest, BuffersShrinkOnceALargeFrameIsEchoed) {
  testing::ScopedRuntime runtime(2);
  TestServer server;
  constexpr int kConnections = 3;
  std::vector<io::Stream> clients;
  const std::string frame = Frame(std::string(4 << 20, 'y'));
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(ConnectTo(server.address()));
    Fiber writer([&] {
      EXPECT_TRUE(
          clients.back().WriteAll(frame.data(), frame.size(), io::Clock::now() + kTimeout).ok());
    });
    std::string echoed(frame.size(), '\0');
    ASSERT_TRUE(
        clients.back().ReadFull(echoed.data(), echoed.size(), io::Clock::now() + kTimeout).ok());
    writer.join();
    EXPECT_TRUE(echoed == frame);
  }
  EXPECT_GE(server.server().stats().peak_buffer_bytes, 4u << 20);
  EXPECT_TRUE(spindle::testing::WaitFor([&] {
    return server.server().stats().buffer_bytes == kConnections * 16u * 1024;
  })) << server.server().stats().buffer_bytes << " buffer bytes held by idle connections";
}

// A frame whose buffer cannot grow (operator new fails past 1 MiB here) closes its own
// connection; the server and its other connections go on.
TEST(EchoServerMemoryTest, AnAllocationFailureClosesOneConnectionNotTheProcess) {
  if (!failing_new::kCanFailAllocations) {
    GTEST_SKIP() << "sanitizer builds keep their own operator new";
  }
  testing::ScopedRuntime runtime(2);
  TestServer server;
  io::Stream big = ConnectTo(server.address());
  const std::string frame = Frame(std::string(4 << 20, 'm'));  // before the failures
  failing_new::FailAllocationsAbove(1 << 20);
  Fiber writer([&] {
    (void)big.WriteAll(frame.data(), frame.size(), io::Clock::now() + kTimeout);
  });
  EXPECT_TRUE(ClosedByServer(big));
  writer.join();
  failing_new::FailAllocationsAbove(0);
  io::Stream small = ConnectTo(server.address());
  const std::string ping = Frame("ping");
  EXPECT_EQ(RoundTrip(small, ping), ping);
}

TEST(EchoServerDeadlineTest, AnIdleConnectionIsClosedAtTheIdleTimeout) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.idle_timeout = 200ms;
  TestServer server(options);
  io::Stream client = ConnectTo(server.address());
  const std::string frame = Frame("ping");
  ASSERT_EQ(RoundTrip(client, frame), frame);
  EXPECT_TRUE(ClosedByServer(client));
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return server.server().stats().live_connections == 0; }));
}

// A frame trickled below min_frame_rate meets its deadline, set at its first byte.
TEST(EchoServerDeadlineTest, AFrameTrickledBelowTheMinimumRateIsClosed) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.idle_timeout = 20s;  // far: not what closes it
  options.frame_timeout = 300ms;
  options.min_frame_rate = 1000;  // a byte per 50 ms is 20 bytes/s
  TestServer server(options);
  io::Stream client = ConnectTo(server.address());
  std::string header(kFrameHeaderBytes, '\0');
  EncodeFrameHeader(400, header.data());
  ASSERT_TRUE(client.WriteAll(header.data(), header.size(), io::Clock::now() + kTimeout).ok());
  std::size_t sent = 0;
  for (; sent < 400; ++sent) {
    if (!client.WriteAll("z", 1, io::Clock::now() + kTimeout).ok()) break;
    char byte;
    // Waits up to 50 ms for the close (the wait paces the trickle: 400 bytes = 20 s).
    absl::StatusOr<std::size_t> n = client.Read(&byte, 1, io::Clock::now() + 50ms);
    if (n.ok() || !absl::IsDeadlineExceeded(n.status())) break;
  }
  EXPECT_LT(sent, 400u) << "a trickled frame kept the connection open";
}

TEST(EchoServerOptionsTest, TheRequestFlagsAreCheckedByName) {
  EchoServerOptions options;
  options.reply_delay = -1ms;
  EXPECT_NE(ValidateEchoServerOptions(options).message().find(
                "--reply_delay_ms=-1 is out of range: expected an integer in [0, 3600000]"),
            std::string::npos);
  options.reply_delay = 0ms;
  options.request_timeout = 0ms;
  EXPECT_NE(ValidateEchoServerOptions(options).message().find(
                "--request_timeout_ms=0 is out of range: expected an integer in [1, 3600000]"),
            std::string::npos);
  options.request_timeout = 1ms;
  EXPECT_TRUE(ValidateEchoServerOptions(options).ok());
}

// With a reply delay (a handler's slow backend call): each echo waits it first.
TEST(EchoServerDeadlineTest, AReplyDelayIsWaitedBeforeTheEcho) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.reply_delay = 50ms;
  TestServer server(options);
  io::Stream client = ConnectTo(server.address());
  const std::string frame = Frame("slow");
  const auto sent = io::Clock::now();
  EXPECT_EQ(RoundTrip(client, frame), frame);
  EXPECT_GE(io::Clock::now() - sent, 50ms);
  EXPECT_EQ(server.server().stats().requests_cancelled, 0u);
}

// A client that goes away while its request waits cancels the wait (an hour here):
// the connection closes at once, nothing is echoed, and it is counted. Closing and
// half-closing (end of stream) both count as gone.
TEST(EchoServerDeadlineTest, AClientThatGoesAwayCancelsItsRequest) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.reply_delay = 1h;
  options.request_timeout = 3'600'000ms;
  TestServer server(options);
  for (const bool half_close : {false, true}) {
    io::Stream client = ConnectTo(server.address());
    const std::string frame = Frame("never answered");
    ASSERT_TRUE(client.WriteAll(frame.data(), frame.size(), io::Clock::now() + kTimeout).ok());
    ASSERT_TRUE(spindle::testing::WaitFor(
        [&] { return server.server().stats().live_connections == 1; }));
    const std::uint64_t before = server.server().stats().requests_cancelled;
    if (half_close) {
      ASSERT_EQ(shutdown(client.fd(), SHUT_WR), 0);
    } else {
      client = io::Stream();  // closed
    }
    EXPECT_TRUE(spindle::testing::WaitFor(
        [&] { return server.server().stats().requests_cancelled == before + 1; }))
        << (half_close ? "half-close" : "close") << " did not cancel the request";
    EXPECT_TRUE(spindle::testing::WaitFor(
        [&] { return server.server().stats().live_connections == 0; }));
    if (half_close) {
      EXPECT_TRUE(ClosedByServer(client));
    }
  }
  EXPECT_EQ(server.server().stats().frames, 0u);
}

// A request not ready by its deadline (request_timeout from its first byte) has its
// wait cancelled and its connection closed.
TEST(EchoServerDeadlineTest, ARequestPastItsDeadlineIsClosed) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.reply_delay = 1h;
  options.request_timeout = 100ms;
  TestServer server(options);
  io::Stream client = ConnectTo(server.address());
  const std::string frame = Frame("too slow");
  ASSERT_TRUE(client.WriteAll(frame.data(), frame.size(), io::Clock::now() + kTimeout).ok());
  EXPECT_TRUE(ClosedByServer(client));
  EXPECT_EQ(server.server().stats().requests_timed_out, 1u);
  EXPECT_EQ(server.server().stats().frames, 0u);
}

// A client that sends and never reads: the echo's write deadline closes it.
TEST(EchoServerDeadlineTest, AClientThatNeverReadsIsClosedAtTheWriteDeadline) {
  testing::ScopedRuntime runtime(2);
  EchoServerOptions options;
  options.write_timeout = 300ms;
  TestServer server(options);
  io::Stream client = ConnectTo(server.address());
  const std::string frame = Frame(std::string(1 << 20, 'w'));
  for (int i = 0; i < 64; ++i) {  // 64 MiB: far past both sides' socket buffers
    if (!client.WriteAll(frame.data(), frame.size(), io::Clock::now() + 200ms).ok()) break;
  }
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return server.server().stats().live_connections == 0; }))
      << "a connection that does not read stayed open";
}

TEST(LatencyHistogramTest, QuantilesWithinBucketPrecision) {
  LatencyHistogram histogram;
  EXPECT_EQ(histogram.Quantile(0.5), 0u);
  for (std::uint64_t v = 1; v <= 100'000; ++v) histogram.Record(v * 1000);
  EXPECT_EQ(histogram.count(), 100'000u);
  const double cases[][2] = {{0.5, 50e6}, {0.99, 99e6}, {0.999, 99.9e6}, {1.0, 100e6}};
  for (const auto& [q, want] : cases) {
    const double got = static_cast<double>(histogram.Quantile(q));
    EXPECT_NEAR(got, want, want / 64) << "quantile " << q;
  }
  LatencyHistogram small;
  for (std::uint64_t v = 0; v < 64; ++v) small.Record(v);
  EXPECT_EQ(small.Quantile(1.0 / 64), 0u);
  EXPECT_EQ(small.Quantile(1.0), 63u);
  LatencyHistogram merged;
  merged.Merge(small);
  merged.Merge(small);
  EXPECT_EQ(merged.count(), 128u);
  EXPECT_EQ(merged.Quantile(0.5), 31u);
  LatencyHistogram huge;
  huge.Record(~std::uint64_t{0});
  EXPECT_GT(huge.Quantile(1.0), std::uint64_t{1} << 39);
}

}  // namespace
}  // namespace spindle::examples::echo
