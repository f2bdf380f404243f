// Copyright 2026 The Spindle Authors.
//
// io::Server: each connection in its own fiber, the connection cap, the drain (idle
// connections closed at once, busy ones finishing, the deadline closing the rest),
// the counters, option validation, and ServeUntilSignal's return when the listener is
// closed. Clients are plain threads' streams (they block in poll) or fibers; every wait
// has a deadline and nothing sleeps to let something happen.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/internal/descriptor.h"
#include "io/server.h"
#include "io/stream.h"
#include "runtime/internal/poller_host.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/latch.h"

namespace spindle::io {
namespace {

using spindle::testing::ScopedRuntime;
using std::chrono::milliseconds;

constexpr auto kTestDeadline = std::chrono::seconds(60);
Deadline TestDeadline() { return Clock::now() + kTestDeadline; }

Listener ListenLoopback() {
  absl::StatusOr<Listener> listener = Listener::Listen(Address::Ipv4Loopback(0));
  CHECK(listener.ok()) << listener.status();
  return std::move(*listener);
}

// A line protocol: each request is a line, answered with "ok:" + the line. Idle
// between lines; busy from a line's first byte to its answer, and then `on_busy`
// (if any) is told.
ConnectionHandler LineHandlerTelling(std::function<void()> on_busy) {
  return [on_busy](ServerConnection& connection) {
    std::string line;
    char c;
    while (connection.EnterIdle()) {
      absl::StatusOr<std::size_t> n = connection.stream().Read(&c, 1, TestDeadline());
      if (!n.ok() || *n == 0) return;
      if (!connection.LeaveIdle()) return;
      if (on_busy) on_busy();
      line.assign(1, c);
      while (c != '\n') {
        n = connection.stream().Read(&c, 1, TestDeadline());
        if (!n.ok() || *n == 0) return;
        line += c;
      }
      const std::string answer = "ok:" + line;
      if (!connection.stream().WriteAll(answer.data(), answer.size(), TestDeadline()).ok()) {
        return;
      }
    }
  };
}

void LineHandler(ServerConnection& connection) { LineHandlerTelling(nullptr)(connection); }

Stream Connect(const Listener& listener) {
  absl::StatusOr<Stream> stream = Stream::Connect(listener.address(), TestDeadline());
  CHECK(stream.ok()) << stream.status();
  return std::move(*stream);
}

// Reads until end of stream or an error; the text read.
std::string ReadToEnd(Stream& stream) {
  std::string text;
  char buffer[256];
  for (;;) {
    absl::StatusOr<std::size_t> n = stream.Read(buffer, sizeof(buffer), TestDeadline());
    if (!n.ok() || *n == 0) return text;
    text.append(buffer, *n);
  }
}

std::string Ask(Stream& stream, const std::string& line) {
  CHECK(stream.WriteAll(line.data(), line.size(), TestDeadline()).ok());
  std::string answer(3 + line.size(), '\0');
  if (!stream.ReadFull(answer.data(), answer.size(), TestDeadline()).ok()) return "";
  return answer;
}

// Serves `listener` in a detached fiber; Wait() waits for Serve() to return.
class Serving {
 public:
  Serving(Server& server, Listener& listener) {
    StartFiberDetached([&server, &listener, this] {
      server.Serve(listener);
      done_.Set();
    });
  }
  ~Serving() { CHECK(done_.WaitFor(kTestDeadline)) << "Serve() did not return"; }
  bool Wait() { return done_.WaitFor(kTestDeadline); }
  bool done() const { return done_.IsSet(); }

 private:
  Event done_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { records_before_ = internal::LiveDescriptors(); }
  void TearDown() override {
    EXPECT_EQ(internal::LiveDescriptors(), records_before_) << "descriptor records leaked";
  }
  std::size_t records_before_ = 0;
};

TEST_F(ServerTest, ServesEveryConnectionInAFiberOfItsOwnAndCountsThem) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  Server server(ServerOptions{}, &LineHandler);
  {
    Serving serving(server, listener);
    constexpr int kClients = 40;
    // All connected at once, then all asked: a server that served one connection at a
    // time could not answer the last before the first closed.
    std::vector<Stream> clients;
    for (int i = 0; i < kClients; ++i) clients.push_back(Connect(listener));
    for (int i = 0; i < kClients; ++i) {
      EXPECT_EQ(Ask(clients[i], "q" + std::to_string(i) + "\n"),
                "ok:q" + std::to_string(i) + "\n");
    }
    EXPECT_EQ(server.stats().open, static_cast<std::uint64_t>(kClients));
    for (Stream& client : clients) client.Close().IgnoreError();
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return server.stats().open == 0; }));
    server.Shutdown();
  }
  const ServerStats stats = server.stats();
  EXPECT_EQ(stats.accepted, 40u);
  EXPECT_EQ(stats.refused, 0u);
  EXPECT_EQ(stats.drained, 0u);
  const std::string text = server.PrometheusText("test_server");
  EXPECT_NE(text.find("test_server_connections_accepted_total 40\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE test_server_connections_open gauge"), std::string::npos);
}

// Serve() called in a context that is cancelled (and past its deadline) serves as
// usual, and stops only at Shutdown(), after its handlers: the caller's context does
// not reach the server's accept loop, back-off or drain.
TEST_F(ServerTest, ACancelledCallerContextDoesNotStopTheServer) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.drain_timeout = kTestDeadline;  // long: the busy one finishes by itself
  std::atomic<int> requests{0};
  Server server(options, LineHandlerTelling([&requests] { requests.fetch_add(1); }));
  Event done;
  ExecutionContext::Options context_options;
  context_options.deadline = std::chrono::steady_clock::now();
  auto context = ExecutionContext::Create(context_options);
  context->Cancel();
  StartFiberDetached([&] {
    ScopedExecutionContext scope(context);
    server.Serve(listener);
    done.Set();
  });
  Stream client = Connect(listener);
  EXPECT_EQ(Ask(client, "a\n"), "ok:a\n");
  // A request in progress at Shutdown(): Serve() must wait for its handler.
  ASSERT_TRUE(client.WriteAll("par", 3, TestDeadline()).ok());
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return requests.load() == 2; }));
  EXPECT_FALSE(done.IsSet());
  server.Shutdown();
  ASSERT_TRUE(client.WriteAll("tial\n", 5, TestDeadline()).ok());
  EXPECT_EQ(ReadToEnd(client), "ok:partial\n");
  ASSERT_TRUE(done.WaitFor(kTestDeadline));
  EXPECT_EQ(server.stats().open, 0u);
  EXPECT_EQ(server.stats().drained, 1u);
}

TEST_F(ServerTest, AConnectionOverTheCapIsClosedAtOnceAndTheNextOneAfterRoomIsServed) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.max_connections = 2;
  Server server(options, &LineHandler);
  {
    Serving serving(server, listener);
    Stream first = Connect(listener);
    Stream second = Connect(listener);
    // Both registered (answered) before the third arrives.
    EXPECT_EQ(Ask(first, "a\n"), "ok:a\n");
    EXPECT_EQ(Ask(second, "b\n"), "ok:b\n");
    Stream third = Connect(listener);
    // Closed at once: end of stream (or a reset) long before the test's deadline.
    EXPECT_EQ(ReadToEnd(third), "");
    EXPECT_EQ(server.stats().refused, 1u);
    first.Close().IgnoreError();
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return server.stats().open == 1; }));
    Stream fourth = Connect(listener);
    EXPECT_EQ(Ask(fourth, "d\n"), "ok:d\n");
    server.Shutdown();
  }
  EXPECT_EQ(server.stats().accepted, 3u);
  EXPECT_EQ(server.stats().refused, 1u);
}

// Connections spread over every scheduling group and NUMA node
// (ServerOptions::spread_connections): with a fake two-node topology, 8 workers in 4
// groups and no stealing between groups, 40 connections are 10 per group, 20 per node,
// each group's reactor polling its sockets; switched off, every handler runs where the
// accept loop does.
TEST_F(ServerTest, ConnectionsSpreadOverEveryGroupAndNode) {
  for (const bool spread : {true, false}) {
    SCOPED_TRACE(spread ? "spread" : "not spread");
    gflags::FlagSaver flags;
    gflags::SetCommandLineOption("fiber_numa_topology_override", "0:0-3;1:4-7");
    gflags::SetCommandLineOption("fiber_numa_aware", "true");
    gflags::SetCommandLineOption("fiber_work_stealing_ratio", "0");
    ScopedRuntime runtime(8, 2);
    const std::vector<SchedulingGroupStats> groups = GetSchedulingGroupStats();
    ASSERT_EQ(groups.size(), 4u);
    ASSERT_NE(groups.front().numa_node, groups.back().numa_node);
    Listener listener = ListenLoopback();
    ServerOptions options;
    options.spread_connections = spread;
    std::vector<std::atomic<int>> per_group(groups.size());
    Server server(options, [&](ServerConnection& connection) {
      per_group[spindle::internal::PollerHostCurrentGroup()].fetch_add(1);
      LineHandler(connection);
    });
    constexpr int kConnections = 40;
    std::size_t accept_group = 0;
    {
      Event accepting;
      Event served;
      StartFiberDetached([&] {
        accept_group = spindle::internal::PollerHostCurrentGroup();
        accepting.Set();
        server.Serve(listener);
        served.Set();
      });
      ASSERT_TRUE(accepting.WaitFor(kTestDeadline));
      std::vector<Stream> clients;
      for (int i = 0; i < kConnections; ++i) {
        clients.push_back(Connect(listener));
        const std::string line = std::to_string(i) + "\n";
        EXPECT_EQ(Ask(clients.back(), line), "ok:" + line);
      }
      server.Shutdown();
      ASSERT_TRUE(served.WaitFor(kTestDeadline));
    }
    std::vector<int> per_node(2, 0);
    for (std::size_t g = 0; g < groups.size(); ++g) {
      ASSERT_TRUE(groups[g].numa_node == 0 || groups[g].numa_node == 1) << "group " << g;
      const int n = per_group[g].load();
      per_node[groups[g].numa_node] += n;
      if (spread) {
        EXPECT_EQ(n, kConnections / 4) << "group " << g;
      } else {
        EXPECT_EQ(n, g == accept_group ? kConnections : 0) << "group " << g;
      }
    }
    if (spread) {
      EXPECT_EQ(per_node, std::vector<int>({kConnections / 2, kConnections / 2}));
    }
  }
}

// The handlers' pool at its cap on live fibers: a connection is closed at once and
// counted; once a handler ends, the next connection is served, in that pool.
TEST_F(ServerTest, AConnectionIsRefusedWhileItsPoolIsAtItsCap) {
  gflags::FlagSaver flags;
  gflags::SetCommandLineOption("fiber_pools", "conns:1:max_fibers=2");
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.pool = "conns";
  std::atomic<int> outside_the_pool{0};
  Server server(options, [&](ServerConnection& connection) {
    if (FiberPool::Current().name() != "conns") outside_the_pool.fetch_add(1);
    LineHandler(connection);
  });
  const auto live_in_pool = [] {
    for (const PoolMetrics& pool : GetRuntimeMetrics().pools) {
      if (pool.name == "conns") return pool.live_fibers;
    }
    return std::uint64_t{999};
  };
  {
    Serving serving(server, listener);  // Serve() itself runs in the default pool
    Stream first = Connect(listener);
    Stream second = Connect(listener);
    EXPECT_EQ(Ask(first, "a\n"), "ok:a\n");
    EXPECT_EQ(Ask(second, "b\n"), "ok:b\n");
    Stream third = Connect(listener);
    EXPECT_EQ(ReadToEnd(third), "");  // closed at once
    EXPECT_EQ(server.stats().refused, 1u);
    EXPECT_EQ(server.stats().refused_by_pool, 1u);
    EXPECT_NE(server.PrometheusText("t").find("t_connections_refused_by_pool_total 1"),
              std::string::npos);
    first.Close().IgnoreError();
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return live_in_pool() == 1; }));
    Stream fourth = Connect(listener);
    EXPECT_EQ(Ask(fourth, "d\n"), "ok:d\n");
    server.Shutdown();
  }
  EXPECT_EQ(server.stats().accepted, 3u);
  EXPECT_EQ(server.stats().refused_by_pool, 1u);
  EXPECT_EQ(outside_the_pool.load(), 0);
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return live_in_pool() == 0; }));
}

TEST_F(ServerTest, ShutdownClosesIdleConnectionsAtOnceAndLetsABusyOneFinish) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.drain_timeout = kTestDeadline;  // long: the busy one finishes by itself
  std::atomic<int> requests{0};
  Server server(options, LineHandlerTelling([&requests] { requests.fetch_add(1); }));
  Serving serving(server, listener);
  Stream idle = Connect(listener);
  Stream probe = Connect(listener);
  Stream busy = Connect(listener);
  EXPECT_EQ(Ask(idle, "i\n"), "ok:i\n");
  EXPECT_EQ(Ask(probe, "p\n"), "ok:p\n");
  // Half a request: busy from its first byte, which its handler has taken (the third
  // request begun) before the drain begins.
  ASSERT_TRUE(busy.WriteAll("par", 3, TestDeadline()).ok());
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return requests.load() == 3; }));
  server.Shutdown();
  // The idle connections end at once ...
  EXPECT_EQ(ReadToEnd(idle), "");
  EXPECT_EQ(ReadToEnd(probe), "");
  // ... the busy one finishes its request and gets its answer, then closes at its next
  // idle point.
  ASSERT_TRUE(busy.WriteAll("tial\n", 5, TestDeadline()).ok());
  EXPECT_EQ(ReadToEnd(busy), "ok:partial\n");
  ASSERT_TRUE(serving.Wait());
  // All three closed by the drain: two idle, one at the end of its request.
  EXPECT_EQ(server.stats().drained, 3u);
  EXPECT_EQ(server.stats().open, 0u);
  // The listener is closed: nobody is accepted any more.
  absl::StatusOr<Stream> late = Stream::Connect(listener.address(), TestDeadline());
  EXPECT_FALSE(late.ok());
}

TEST_F(ServerTest, TheDrainDeadlineClosesConnectionsStillBusy) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.drain_timeout = milliseconds(100);
  std::atomic<int> requests{0};
  Server server(options, LineHandlerTelling([&requests] { requests.fetch_add(1); }));
  Serving serving(server, listener);
  Stream busy = Connect(listener);
  EXPECT_EQ(Ask(busy, "x\n"), "ok:x\n");
  ASSERT_TRUE(busy.WriteAll("never finished", 14, TestDeadline()).ok());
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return requests.load() == 2; }));
  server.Shutdown();
  EXPECT_EQ(ReadToEnd(busy), "");  // closed by the drain deadline
  ASSERT_TRUE(serving.Wait());
  EXPECT_EQ(server.stats().drained, 1u);
}

TEST_F(ServerTest, AHandlerThatNeverSaysIdleIsBusyUntilTheDrainDeadline) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  ServerOptions options;
  options.drain_timeout = milliseconds(50);
  Event entered;
  Server server(options, [&entered](ServerConnection& connection) {
    entered.Set();
    char byte;
    // Waits for a byte that never comes: only a close ends it.
    (void)connection.stream().Read(&byte, 1, TestDeadline());
  });
  Serving serving(server, listener);
  Stream client = Connect(listener);
  ASSERT_TRUE(entered.WaitFor(kTestDeadline));
  server.Shutdown();
  EXPECT_EQ(ReadToEnd(client), "");
  ASSERT_TRUE(serving.Wait());
  EXPECT_EQ(server.stats().drained, 1u);
}

TEST_F(ServerTest, ServeReturnsWhenItsOwnerClosesTheListener) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  Server server(ServerOptions{}, &LineHandler);
  Serving serving(server, listener);
  Stream client = Connect(listener);
  EXPECT_EQ(Ask(client, "y\n"), "ok:y\n");
  listener.Close().IgnoreError();
  // The accept loop ends; the idle connection is drained like at a Shutdown().
  EXPECT_EQ(ReadToEnd(client), "");
  ASSERT_TRUE(serving.Wait());
}

// A handler that runs out of memory ends its own connection; the server goes on.
TEST_F(ServerTest, AHandlerOutOfMemoryClosesItsConnectionOnly) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  std::atomic<int> calls{0};
  Server server(ServerOptions{}, [&calls](ServerConnection& connection) {
    if (calls.fetch_add(1) == 0) throw std::bad_alloc();
    LineHandler(connection);
  });
  Serving serving(server, listener);
  Stream first = Connect(listener);
  EXPECT_EQ(ReadToEnd(first), "");
  Stream second = Connect(listener);
  EXPECT_EQ(Ask(second, "ok\n"), "ok:ok\n");
  EXPECT_EQ(server.stats().handler_out_of_memory, 1u);
  server.Shutdown();
}

TEST(ServerOptionsTest, OutOfRangeValuesAreNamedWithTheirRange) {
  ServerOptions options;
  EXPECT_TRUE(ValidateServerOptions(options).ok());
  options.max_connections = 0;
  absl::Status status = ValidateServerOptions(options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("max_connections=0"), std::string::npos) << status;
  EXPECT_NE(status.message().find("[1, 16777216]"), std::string::npos) << status;
  options.max_connections = 1;
  options.drain_timeout = milliseconds(0);
  status = ValidateServerOptions(options);
  EXPECT_NE(status.message().find("drain_timeout=0"), std::string::npos) << status;
  EXPECT_NE(status.message().find("[1, 3600000]"), std::string::npos) << status;
}

// Serve() ends because the listener was closed, not by a signal: ServeUntilSignal()
// returns 0 and leaves no thread behind waiting for a signal. (The signal path is the
// examples' end-to-end SIGTERM tests.)
TEST_F(ServerTest, ServeUntilSignalReturnsWhenServeEndsWithoutASignal) {
  ShutdownSignals signals;  // blocks SIGTERM/SIGINT in this thread only; nothing sends one
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  Server server(ServerOptions{}, &LineHandler);
  std::thread closer([&] {
    Stream client = Connect(listener);
    EXPECT_EQ(Ask(client, "z\n"), "ok:z\n");
    listener.Close().IgnoreError();
  });
  EXPECT_EQ(signals.ServeUntilSignal(server, listener), 0);
  closer.join();
}

}  // namespace
}  // namespace spindle::io
