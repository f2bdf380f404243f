// Copyright 2026 The Spindle Authors.
//
// Sockets from fibers and threads: data paths, deadlines on every blocking call, peer
// resets and half-closes, closing under a waiter, many connections, EMFILE on accept,
// descriptor leaks, and RunBlocking with its pool saturated. Every wait has a deadline;
// nothing sleeps to let something happen.

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/address.h"
#include "io/internal/descriptor.h"
#include "io/internal/reactor.h"
#include "io/run_blocking.h"
#include "io/stream.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/latch.h"

DECLARE_uint64(io_blocking_threads);

namespace spindle::io {
namespace {

using spindle::testing::ScopedRuntime;
using std::chrono::milliseconds;

constexpr auto kTestDeadline = std::chrono::seconds(60);

Deadline In(Clock::duration d) { return Clock::now() + d; }
Deadline TestDeadline() { return In(kTestDeadline); }

// Open descriptors that io could leak (sockets, pipes), not counting the reactors' epoll
// and eventfd descriptors (created once per scheduling group index and kept for the
// process), regular files, or the DIR's own.
std::size_t OpenFds() {
  std::size_t n = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.' || std::atoi(entry->d_name) == dirfd(dir)) continue;
    char target[256] = {};
    const std::string link = std::string("/proc/self/fd/") + entry->d_name;
    // Not counted: the reactor's epoll and eventfds, made once and kept, and regular
    // files (a path), which io never opens: absl's symbolizer keeps the object files
    // it read open after a hog report or a fiber dump symbolized a stack.
    if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 &&
        (std::strcmp(target, "anon_inode:[eventpoll]") == 0 ||
         std::strcmp(target, "anon_inode:[eventfd]") == 0 || target[0] == '/')) {
      continue;
    }
    ++n;
  }
  closedir(dir);
  return n;
}

// Every test checks that it leaves no descriptor and no record behind.
class IoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fds_before_ = OpenFds();
    records_before_ = internal::LiveDescriptors();
  }
  void TearDown() override {
    EXPECT_EQ(internal::LiveDescriptors(), records_before_) << "descriptor records leaked";
    EXPECT_EQ(OpenFds(), fds_before_) << "file descriptors leaked";
  }
  std::size_t fds_before_ = 0;
  std::size_t records_before_ = 0;
};

Listener ListenLoopback() {
  absl::StatusOr<Listener> listener = Listener::Listen(Address::Ipv4Loopback(0));
  CHECK(listener.ok()) << listener.status();
  return std::move(*listener);
}

// A connected pair over `listener`: the client side and the server side.
struct StreamPair {
  Stream client;
  Stream server;
};
StreamPair ConnectPair(Listener& listener) {
  absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
  CHECK(client.ok()) << client.status();
  absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
  CHECK(server.ok()) << server.status();
  return StreamPair{std::move(*client), std::move(*server)};
}

// ---- Addresses.

TEST(AddressTest, ParsesAndPrintsEachFamily) {
  for (const char* text : {"127.0.0.1:80", "[::1]:8080", "unix:/tmp/x.sock", "unix:@abstract"}) {
    absl::StatusOr<Address> address = Address::Parse(text);
    ASSERT_TRUE(address.ok()) << address.status();
    EXPECT_EQ(address->ToString(), text);
  }
  EXPECT_EQ(Address::Parse("127.0.0.1:80")->port(), 80);
  EXPECT_EQ(Address::Parse("[::1]:8080")->family(), AF_INET6);
}

TEST(AddressTest, RejectsBadTextNamingTheValue) {
  for (const char* text : {"127.0.0.1", "127.0.0.1:65536", "localhost:80", "[::1:80",
                           "1.2.3.4:x", "unix:"}) {
    absl::StatusOr<Address> address = Address::Parse(text);
    ASSERT_FALSE(address.ok()) << text;
    EXPECT_EQ(address.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_NE(Address::Parse("localhost:80").status().message().find("\"localhost:80\""),
            absl::string_view::npos);
}

// ---- Data paths across fibers and threads.

// A fiber server echoes; the client is a fiber or a plain thread (then it blocks in
// poll), over IPv4, IPv6 and a Unix socket.
void EchoOnce(const Address& listen_at, bool client_is_thread) {
  absl::StatusOr<Listener> listener = Listener::Listen(listen_at);
  ASSERT_TRUE(listener.ok()) << listener.status();
  const Address address = listener->address();
  Event served;
  StartFiberDetached([&] {
    absl::StatusOr<Stream> stream = listener->Accept(TestDeadline());
    ASSERT_TRUE(stream.ok()) << stream.status();
    char buffer[4096];
    for (;;) {
      absl::StatusOr<std::size_t> n = stream->Read(buffer, sizeof(buffer), TestDeadline());
      ASSERT_TRUE(n.ok()) << n.status();
      if (*n == 0) break;
      ASSERT_TRUE(stream->WriteAll(buffer, *n, TestDeadline()).ok());
    }
    served.Set();
  });
  auto client = [&] {
    absl::StatusOr<Stream> stream = Stream::Connect(address, TestDeadline());
    ASSERT_TRUE(stream.ok()) << stream.status();
    std::string sent(256 * 1024, '\0');
    for (std::size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 7 + 3);
    // Writer and reader at once: the payload is larger than the socket buffers.
    Fiber writer;
    std::thread writer_thread;
    auto write = [&] {
      EXPECT_TRUE(stream->WriteAll(sent.data(), sent.size(), TestDeadline()).ok());
      EXPECT_TRUE(stream->ShutdownWrite().ok());
    };
    if (client_is_thread) {
      writer_thread = std::thread(write);
    } else {
      writer = Fiber(write);
    }
    std::string received(sent.size(), '\0');
    ASSERT_TRUE(stream->ReadFull(received.data(), received.size(), TestDeadline()).ok());
    EXPECT_TRUE(received == sent);
    char extra;
    absl::StatusOr<std::size_t> end = stream->Read(&extra, 1, TestDeadline());
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, 0u);
    if (client_is_thread) writer_thread.join(); else writer.join();
  };
  if (client_is_thread) {
    client();
  } else {
    RunAsFiber(client);
  }
  ASSERT_TRUE(served.WaitFor(kTestDeadline));
}

TEST_F(IoTest, EchoBetweenFibersAndThreadsOverEveryFamily) {
  ScopedRuntime runtime(2);
  const std::string unix_path = "/tmp/spindle_io_test_" + std::to_string(getpid());
  for (bool thread_client : {false, true}) {
    SCOPED_TRACE(thread_client ? "thread client" : "fiber client");
    EchoOnce(Address::Ipv4Loopback(0), thread_client);
    EchoOnce(Address::Ipv6Loopback(0), thread_client);
    unlink(unix_path.c_str());
    EchoOnce(*Address::Unix(unix_path), thread_client);
    unlink(unix_path.c_str());
  }
}

TEST_F(IoTest, PlainThreadsWorkWithoutARuntime) {
  Listener listener = ListenLoopback();
  std::thread server([&] {
    absl::StatusOr<Stream> stream = listener.Accept(TestDeadline());
    ASSERT_TRUE(stream.ok()) << stream.status();
    ASSERT_TRUE(stream->WriteAll("hi", 2, TestDeadline()).ok());
  });
  absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
  ASSERT_TRUE(client.ok());
  char buffer[2];
  ASSERT_TRUE(client->ReadFull(buffer, 2, TestDeadline()).ok());
  EXPECT_EQ(std::string(buffer, 2), "hi");
  server.join();
}

// ---- Deadlines.

TEST_F(IoTest, EveryBlockingCallHonoursItsDeadline) {
  ScopedRuntime runtime(2);
  for (bool as_fiber : {true, false}) {
    SCOPED_TRACE(as_fiber ? "fiber" : "thread");
    auto body = [] {
      Listener listener = ListenLoopback();
      auto expect_deadline = [](const absl::Status& status, const char* what) {
        EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << what << ": " << status;
      };
      expect_deadline(listener.Accept(In(milliseconds(20))).status(), "Accept");
      absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
      ASSERT_TRUE(client.ok());
      absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
      ASSERT_TRUE(server.ok());
      char byte;
      expect_deadline(client->Read(&byte, 1, In(milliseconds(20))).status(), "Read");
      expect_deadline(client->ReadFull(&byte, 1, In(milliseconds(20))), "ReadFull");
      expect_deadline(client->WaitReadable(In(milliseconds(20))), "WaitReadable");
      // Fill the send path (nobody reads on the other side).
      const std::string chunk(1 << 20, 'x');
      absl::Status full;
      for (int i = 0; i < 256 && full.ok(); ++i) {
        full = client->WriteAll(chunk.data(), chunk.size(), In(milliseconds(20)));
      }
      expect_deadline(full, "WriteAll");
      // The kernel may still open a little room (the peer's receive window grows, an ACK
      // lands): then Write() returns a short count and WaitWritable() OK, which is
      // right. Each is asked again until the path is full; a call that can make no
      // progress must end at its deadline, never hang.
      absl::Status write;
      for (int i = 0; i < 64 && write.ok(); ++i) {
        write = client->Write(chunk.data(), chunk.size(), In(milliseconds(20))).status();
      }
      expect_deadline(write, "Write");
      absl::Status writable;
      for (int i = 0; i < 64 && writable.ok(); ++i) {
        writable = client->WaitWritable(In(milliseconds(20)));
        if (writable.ok()) {
          client->Write(chunk.data(), chunk.size(), In(milliseconds(20))).status().IgnoreError();
        }
      }
      expect_deadline(writable, "WaitWritable");
      EXPECT_NE(full.message().find(listener.address().ToString()), absl::string_view::npos)
          << "the message names the peer: " << full;
    };
    if (as_fiber) {
      RunAsFiber(body);
    } else {
      body();
    }
  }
}

// ---- Cancellation: every blocking call is interruptible by its execution context.

// Runs `call` in a fresh context, from a fiber or a plain thread; once it is parked (or
// blocked in poll) waiting on its socket, cancels the context: the call must return
// Cancelled, naming what it did.
void ExpectCancelledWhileWaiting(bool as_fiber, const char* what,
                                 const std::function<absl::Status()>& call) {
  auto context = ExecutionContext::Create();
  std::atomic<std::uint64_t> id{0};
  std::atomic<int> tid{0};
  absl::Status status;
  auto body = [&] {
    ScopedExecutionContext scope(context);
    id = this_fiber::GetId();
    tid = spindle::testing::CurrentThreadId();
    status = call();
  };
  if (as_fiber) {
    Fiber fiber(body);
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return id.load() != 0; }));
    ASSERT_TRUE(spindle::testing::WaitUntilWaitingIn(id.load(),
                                                     spindle::internal::WaitKind::kSocket))
        << what;
    context->Cancel();
    fiber.join();
  } else {
    std::thread thread(body);
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return tid.load() != 0; }));
    ASSERT_TRUE(spindle::testing::WaitUntilThreadBlocked(tid.load())) << what;
    context->Cancel();
    thread.join();
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << what << ": " << status;
  EXPECT_NE(status.message().find("cancelled"), absl::string_view::npos) << status;
}

TEST_F(IoTest, EveryBlockingCallEndsWhenItsContextIsCancelled) {
  ScopedRuntime runtime(2);
  for (bool as_fiber : {true, false}) {
    SCOPED_TRACE(as_fiber ? "fiber" : "thread");
    Listener listener = ListenLoopback();
    ExpectCancelledWhileWaiting(as_fiber, "Accept",
                                [&] { return listener.Accept(TestDeadline()).status(); });
    StreamPair pair = ConnectPair(listener);
    char byte;
    ExpectCancelledWhileWaiting(as_fiber, "Read", [&] {
      return pair.client.Read(&byte, 1, TestDeadline()).status();
    });
    ExpectCancelledWhileWaiting(as_fiber, "ReadFull",
                                [&] { return pair.client.ReadFull(&byte, 1, TestDeadline()); });
    ExpectCancelledWhileWaiting(as_fiber, "WaitReadable",
                                [&] { return pair.client.WaitReadable(TestDeadline()); });
    // Fill the send path (nobody reads on the other side), then a write waits.
    const std::string chunk(1 << 20, 'x');
    for (int i = 0; i < 256; ++i) {
      if (!pair.client.WriteAll(chunk.data(), chunk.size(), In(milliseconds(20))).ok()) break;
    }
    ExpectCancelledWhileWaiting(as_fiber, "WriteAll", [&] {
      return pair.client.WriteAll(chunk.data(), chunk.size(), TestDeadline());
    });
    // The stream still works after the cancelled calls: the other side's byte arrives.
    ASSERT_TRUE(pair.server.WriteAll("z", 1, TestDeadline()).ok());
    ASSERT_TRUE(pair.client.ReadFull(&byte, 1, TestDeadline()).ok());
    EXPECT_EQ(byte, 'z');
  }
}

// In a cancelled context a call that must wait returns Cancelled at once, one that need
// not wait succeeds; a context's deadline bounds the calls made in it (DeadlineExceeded).
TEST_F(IoTest, ACancelledContextFailsOnlyTheCallsThatWouldWait) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  StreamPair pair = ConnectPair(listener);
  for (bool as_fiber : {true, false}) {
    SCOPED_TRACE(as_fiber ? "fiber" : "thread");
    auto body = [&] {
      auto cancelled = ExecutionContext::Create();
      cancelled->Cancel();
      {
        ScopedExecutionContext scope(cancelled);
        char byte;
        EXPECT_EQ(pair.client.Read(&byte, 1, TestDeadline()).status().code(),
                  absl::StatusCode::kCancelled);
        EXPECT_TRUE(pair.server.WriteAll("a", 1, TestDeadline()).ok());  // room to write
        EXPECT_TRUE(pair.client.ReadFull(&byte, 1, TestDeadline()).ok());  // data ready
        EXPECT_EQ(byte, 'a');
      }
      ExecutionContext::Options options;
      options.deadline = Clock::now() + milliseconds(20);
      auto bounded = ExecutionContext::Create(options);
      ScopedExecutionContext scope(bounded);
      char byte;
      EXPECT_EQ(pair.client.Read(&byte, 1, TestDeadline()).status().code(),
                absl::StatusCode::kDeadlineExceeded);
      EXPECT_GE(Clock::now(), bounded->deadline());
    };
    if (as_fiber) {
      RunAsFiber(body);
    } else {
      body();
    }
  }
}

TEST_F(IoTest, ConnectHonoursItsDeadline) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    // A listener that never accepts, with a backlog of 1: once its queue is full the
    // kernel drops further SYNs, so a connect stays in progress.
    absl::StatusOr<Listener> listener =
        Listener::Listen(Address::Ipv4Loopback(0), ListenOptions{.backlog = 1});
    ASSERT_TRUE(listener.ok());
    std::vector<Stream> filled;
    absl::Status status;
    for (int i = 0; i < 64 && status.ok(); ++i) {
      absl::StatusOr<Stream> stream = Stream::Connect(listener->address(), In(milliseconds(50)));
      status = stream.status();
      if (stream.ok()) filled.push_back(std::move(*stream));
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
    EXPECT_LE(filled.size(), 8u);
  });
}

// A writer blocked on a peer that half-closed its side (EPOLLRDHUP seen) still parks
// and honours its deadline (the guess that skips a wait must not turn into a spin).
TEST_F(IoTest, WritingToAHalfClosedPeerThatDoesNotReadParksUntilTheDeadline) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    Listener listener = ListenLoopback();
    absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client.ok());
    absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
    ASSERT_TRUE(server.ok());
    ASSERT_TRUE(client->ShutdownWrite().ok());
    char byte;
    absl::StatusOr<std::size_t> end = server->Read(&byte, 1, TestDeadline());
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, 0u);
    const std::string chunk(1 << 20, 'x');
    absl::Status status;
    for (int i = 0; i < 256 && status.ok(); ++i) {
      status = server->WriteAll(chunk.data(), chunk.size(), In(milliseconds(50)));
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  });
}

// A Read after WaitReadable finds the data WaitReadable saw, even when the Read before
// was short (the edge went to WaitReadable).
TEST_F(IoTest, ReadAfterWaitReadableGetsTheData) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    Listener listener = ListenLoopback();
    absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client.ok());
    absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
    ASSERT_TRUE(server.ok());
    char buffer[64];
    for (int round = 0; round < 50; ++round) {
      ASSERT_TRUE(client->WriteAll("ab", 2, TestDeadline()).ok());
      absl::StatusOr<std::size_t> n = server->Read(buffer, sizeof(buffer), TestDeadline());
      ASSERT_TRUE(n.ok());  // short: 2 of 64
      Fiber writer([&] { EXPECT_TRUE(client->WriteAll("cd", 2, TestDeadline()).ok()); });
      ASSERT_TRUE(server->WaitReadable(TestDeadline()).ok());
      n = server->Read(buffer, sizeof(buffer), In(std::chrono::seconds(5)));
      ASSERT_TRUE(n.ok()) << n.status();
      writer.join();
      if (*n < 2) {
        ASSERT_TRUE(server->ReadFull(buffer, 2 - *n, TestDeadline()).ok());
      }
    }
  });
}

TEST_F(IoTest, ConnectingToAFullUnixBacklogIsAnErrorNotAHang) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    const std::string path = "/tmp/spindle_io_backlog_" + std::to_string(getpid());
    unlink(path.c_str());
    absl::StatusOr<Listener> listener =
        Listener::Listen(*Address::Unix(path), ListenOptions{.backlog = 1});
    ASSERT_TRUE(listener.ok());
    std::vector<Stream> filled;
    absl::Status status;
    for (int i = 0; i < 64 && status.ok(); ++i) {
      absl::StatusOr<Stream> stream = Stream::Connect(listener->address(), TestDeadline());
      status = stream.status();
      if (stream.ok()) filled.push_back(std::move(*stream));
    }
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_NE(status.message().find(path), absl::string_view::npos) << status;
    unlink(path.c_str());
  });
}

// ---- Peer reset and half-close.

TEST_F(IoTest, PeerResetMidRequestIsAnErrorAndHalfCloseStillGetsTheAnswer) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    Listener listener = ListenLoopback();
    // Reset: the client sends half a request and aborts (SO_LINGER 0: RST).
    {
      absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
      ASSERT_TRUE(client.ok());
      absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
      ASSERT_TRUE(server.ok());
      ASSERT_TRUE(client->WriteAll("GET / HT", 8, TestDeadline()).ok());
      char buffer[64];
      absl::StatusOr<std::size_t> n = server->Read(buffer, sizeof(buffer), TestDeadline());
      ASSERT_TRUE(n.ok());
      const linger abort_now{1, 0};
      ASSERT_EQ(setsockopt(client->fd(), SOL_SOCKET, SO_LINGER, &abort_now, sizeof(abort_now)), 0);
      ASSERT_TRUE(client->Close().ok());
      n = server->Read(buffer, sizeof(buffer), TestDeadline());
      ASSERT_FALSE(n.ok());
      EXPECT_EQ(n.status().code(), absl::StatusCode::kUnavailable) << n.status();
      EXPECT_NE(n.status().message().find("Read from"), absl::string_view::npos);
      // Writing to a reset connection fails (at once or at the next write), and is an
      // error, not a SIGPIPE that kills the process.
      absl::Status write;
      for (int i = 0; i < 8 && write.ok(); ++i) write = server->WriteAll("x", 1, TestDeadline());
      EXPECT_FALSE(write.ok());
    }
    // Half-close: the client sends its request and shuts its side; the server reads to
    // end of stream, then answers, and the client reads the answer.
    {
      absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
      ASSERT_TRUE(client.ok());
      absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
      ASSERT_TRUE(server.ok());
      ASSERT_TRUE(client->WriteAll("request", 7, TestDeadline()).ok());
      ASSERT_TRUE(client->ShutdownWrite().ok());
      std::string request;
      char buffer[64];
      for (;;) {
        absl::StatusOr<std::size_t> n = server->Read(buffer, sizeof(buffer), TestDeadline());
        ASSERT_TRUE(n.ok());
        if (*n == 0) break;
        request.append(buffer, *n);
      }
      EXPECT_EQ(request, "request");
      ASSERT_TRUE(server->WriteAll("answer", 6, TestDeadline()).ok());
      ASSERT_TRUE(server->Close().ok());
      char answer[6];
      ASSERT_TRUE(client->ReadFull(answer, 6, TestDeadline()).ok());
      EXPECT_EQ(std::string(answer, 6), "answer");
      absl::Status more = client->ReadFull(answer, 1, TestDeadline());
      EXPECT_EQ(more.code(), absl::StatusCode::kOutOfRange) << more;
    }
  });
}

// ---- Closing under a waiter.

TEST_F(IoTest, ClosingWakesAWaitingFiberAndThreadWithAnError) {
  ScopedRuntime runtime(2);
  for (int round = 0; round < 20; ++round) {
    Listener listener = ListenLoopback();
    // Two connections: a fiber reads the server side of the first, a thread the client
    // side of the second, and a fiber accepts; those three are closed from elsewhere
    // while they wait (their peers stay open, so only the close can end the waits).
    absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client.ok());
    absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
    ASSERT_TRUE(server.ok());
    absl::StatusOr<Stream> client2 = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client2.ok());
    absl::StatusOr<Stream> server2 = listener.Accept(TestDeadline());
    ASSERT_TRUE(server2.ok());
    Latch waiting(3);
    Event fiber_done, thread_done, accept_done;
    absl::Status fiber_status, thread_status, accept_status;
    std::atomic<std::uint64_t> reader_id{0}, acceptor_id{0};
    StartFiberDetached([&] {
      char byte;
      reader_id.store(spindle::this_fiber::GetId());
      waiting.count_down();
      fiber_status = server->Read(&byte, 1, TestDeadline()).status();
      fiber_done.Set();
    });
    std::thread reader([&] {
      char byte;
      waiting.count_down();
      thread_status = client2->Read(&byte, 1, TestDeadline()).status();
      thread_done.Set();
    });
    StartFiberDetached([&] {
      acceptor_id.store(spindle::this_fiber::GetId());
      waiting.count_down();
      accept_status = listener.Accept(TestDeadline()).status();
      accept_done.Set();
    });
    waiting.wait();
    // Even rounds close under parked fibers (seen parked in the fiber dump, so the
    // close is what wakes them); odd rounds close at once, maybe before they park,
    // which must fail their calls too. (The thread's read may be either.)
    if (round % 2 == 0) {
      ASSERT_TRUE(spindle::testing::WaitUntilWaitingIn(reader_id.load(),
                                                       spindle::internal::WaitKind::kSocket));
      ASSERT_TRUE(spindle::testing::WaitUntilWaitingIn(acceptor_id.load(),
                                                       spindle::internal::WaitKind::kSocket));
    }
    RunAsFiber([&] {
      EXPECT_TRUE(server->Close().ok());
      EXPECT_TRUE(listener.Close().ok());
    });
    EXPECT_TRUE(client2->Close().ok());
    ASSERT_TRUE(fiber_done.WaitFor(kTestDeadline));
    ASSERT_TRUE(thread_done.WaitFor(kTestDeadline));
    ASSERT_TRUE(accept_done.WaitFor(kTestDeadline));
    reader.join();
    EXPECT_EQ(fiber_status.code(), absl::StatusCode::kFailedPrecondition) << fiber_status;
    EXPECT_EQ(thread_status.code(), absl::StatusCode::kFailedPrecondition) << thread_status;
    EXPECT_EQ(accept_status.code(), absl::StatusCode::kFailedPrecondition) << accept_status;
    // Later calls fail the same way, and closing again is fine.
    char byte;
    EXPECT_EQ(server->Read(&byte, 1).status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(server->is_open());
    EXPECT_TRUE(server->Close().ok());
  }
}

TEST_F(IoTest, ASecondReaderIsRefused) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  StreamPair pair = ConnectPair(listener);
  Stream& client = pair.client;
  Stream& server = pair.server;
  Event first_done;
  StartFiberDetached([&] {
    char byte;
    absl::StatusOr<std::size_t> n;
    // The probe below may hold the read side for a moment: then we are the refused one.
    do {
      n = server.Read(&byte, 1, TestDeadline());
    } while (absl::IsFailedPrecondition(n.status()));
    EXPECT_TRUE(n.ok()) << n.status();
    first_done.Set();
  });
  // Until the first reader is in, the probe may get in instead (and time out); once
  // the first reader waits, the probe is refused.
  ASSERT_TRUE(spindle::testing::WaitFor([&] {
    char byte;
    return absl::IsFailedPrecondition(server.Read(&byte, 1, In(milliseconds(1))).status());
  }));
  ASSERT_TRUE(client.WriteAll("x", 1, TestDeadline()).ok());
  ASSERT_TRUE(first_done.WaitFor(kTestDeadline));
}

// The writer side of the one-operation-per-direction rule: while a writer waits for
// room (the peer reads nothing), every other write call is refused, and once it is done
// the next writer gets in. The first writer is seen parked before the probes, so they
// meet it mid-call, not before it started.
TEST_F(IoTest, ASecondWriterIsRefusedWhileTheFirstWaits) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  StreamPair pair = ConnectPair(listener);
  Stream& client = pair.client;
  Stream& server = pair.server;
  // Far more than the socket buffers hold, so the writer must wait for the reader.
  const std::string payload(32 << 20, 'w');
  std::atomic<std::uint64_t> writer_id{0};
  Event written;
  absl::Status write_status;
  StartFiberDetached([&] {
    writer_id.store(spindle::this_fiber::GetId());
    write_status = server.WriteAll(payload.data(), payload.size(), TestDeadline());
    written.Set();
  });
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return writer_id.load() != 0; }));
  ASSERT_TRUE(spindle::testing::WaitUntilWaitingIn(writer_id.load(),
                                                   spindle::internal::WaitKind::kSocket));
  // From a plain thread and from a fiber: each write call is refused by name.
  auto probe = [&] {
    absl::StatusOr<std::size_t> n = server.Write("y", 1, In(milliseconds(1)));
    EXPECT_TRUE(absl::IsFailedPrecondition(n.status())) << n.status();
    EXPECT_NE(n.status().message().find("already using it"), absl::string_view::npos)
        << n.status();
    const absl::string_view piece = "z";
    EXPECT_TRUE(absl::IsFailedPrecondition(
        server.WriteAllVectored(absl::MakeSpan(&piece, 1), In(milliseconds(1)))));
    EXPECT_TRUE(absl::IsFailedPrecondition(server.WaitWritable(In(milliseconds(1)))));
    EXPECT_TRUE(absl::IsFailedPrecondition(server.ShutdownWrite()));
  };
  probe();
  RunAsFiber(probe);
  EXPECT_FALSE(written.IsSet());  // still waiting: the probes met it mid-call
  // Reading on the server side is the other direction: not refused.
  char byte;
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      server.Read(&byte, 1, In(milliseconds(1))).status()));
  // Drain: the first writer finishes with every byte, and none of the probes' went out.
  std::string received(payload.size(), '\0');
  ASSERT_TRUE(client.ReadFull(received.data(), received.size(), TestDeadline()).ok());
  ASSERT_TRUE(written.WaitFor(kTestDeadline));
  EXPECT_TRUE(write_status.ok()) << write_status;
  EXPECT_TRUE(received == payload);
  // The direction is free again.
  ASSERT_TRUE(server.WriteAll("!", 1, TestDeadline()).ok());
  ASSERT_TRUE(client.ReadFull(&byte, 1, TestDeadline()).ok());
  EXPECT_EQ(byte, '!');
}

// Close() under a running call leaves the descriptor number taken until that call
// returns (stream.h), so a socket opened meanwhile cannot get the number and receive
// the late call's system calls. One worker makes the window certain: the reader is
// parked in Read(), and the closer, a fiber on the same worker, checks the number while
// the reader, woken by the close, cannot run until the closer is done.
TEST_F(IoTest, CloseUnderARunningCallKeepsTheNumberUntilTheCallReturns) {
  ScopedRuntime runtime(1);
  for (int round = 0; round < 20; ++round) {
    Listener listener = ListenLoopback();
    StreamPair pair = ConnectPair(listener);  // the client side stays open: no end of stream
    Stream& server = pair.server;
    const int fd = server.fd();
    struct stat before = {};
    ASSERT_EQ(fstat(fd, &before), 0);
    std::atomic<std::uint64_t> reader_id{0};
    std::atomic<bool> reader_returned{false};
    Event reader_done;
    absl::Status read_status;
    StartFiberDetached([&] {
      reader_id.store(spindle::this_fiber::GetId());
      char byte;
      read_status = server.Read(&byte, 1, TestDeadline()).status();
      reader_returned.store(true);
      reader_done.Set();
    });
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return reader_id.load() != 0; }));
    ASSERT_TRUE(spindle::testing::WaitUntilWaitingIn(reader_id.load(),
                                                     spindle::internal::WaitKind::kSocket));
    RunAsFiber([&] {
      EXPECT_TRUE(server.Close().ok());
      // New descriptors take the lowest free numbers: had the close released ours,
      // one of these would get it.
      int probes[4];
      for (int& probe : probes) probe = socket(AF_INET, SOCK_STREAM, 0);
      // The reader cannot have run (one worker, and we have not given it up), so its
      // call is still in flight.
      EXPECT_FALSE(reader_returned.load());
      struct stat now = {};
      EXPECT_EQ(fstat(fd, &now), 0) << "the number was released under a running call";
      EXPECT_EQ(now.st_ino, before.st_ino) << "the number was reused under a running call";
      for (int probe : probes) {
        EXPECT_GE(probe, 0);
        EXPECT_NE(probe, fd) << "a new socket got the number of a call in flight";
        if (probe >= 0) close(probe);
      }
    });
    ASSERT_TRUE(reader_done.WaitFor(kTestDeadline));
    EXPECT_TRUE(absl::IsFailedPrecondition(read_status)) << read_status;
    // Released with the call's return: the number no longer names our socket.
    struct stat after = {};
    EXPECT_TRUE(fstat(fd, &after) != 0 || after.st_ino != before.st_ino)
        << "the socket outlived the last call on a closed stream";
  }
}

// ---- Many connections.

class ManyConnectionsTest : public IoTest,
                            public ::testing::WithParamInterface<std::size_t> {};

TEST_P(ManyConnectionsTest, AThousandConcurrentEchoConnectionsKeepEveryByte) {
  ScopedRuntime runtime(GetParam());
  // A thousand, scaled in the slow lanes (runtime_testing.h's Scaled(): 100 under TSan,
  // where the thousand took half a minute per worker count), at least 50.
  const int connections = static_cast<int>(std::max<std::size_t>(
      50, spindle::testing::Scaled(1000)));
  Listener listener = ListenLoopback();
  std::atomic<int> served{0};
  Latch all_served(connections);
  StartFiberDetached([&] {
    for (int i = 0; i < connections; ++i) {
      absl::StatusOr<Stream> stream = listener.Accept(TestDeadline());
      ASSERT_TRUE(stream.ok()) << stream.status();
      StartFiberDetached([&, stream = std::make_shared<Stream>(std::move(*stream))] {
        char buffer[1024];
        for (;;) {
          absl::StatusOr<std::size_t> n = stream->Read(buffer, sizeof(buffer), TestDeadline());
          if (!n.ok() || *n == 0) break;
          if (!stream->WriteAll(buffer, *n, TestDeadline()).ok()) break;
        }
        served.fetch_add(1);
        all_served.count_down();
      });
    }
  });
  Latch clients_done(connections);
  std::atomic<int> bad{0};
  for (int c = 0; c < connections; ++c) {
    StartFiberDetached([&, c] {
      absl::StatusOr<Stream> stream = Stream::Connect(listener.address(), TestDeadline());
      if (!stream.ok()) {
        ADD_FAILURE() << stream.status();
        bad.fetch_add(1);
        clients_done.count_down();
        return;
      }
      const std::size_t size = 100 + static_cast<std::size_t>(c) * 37 % 4000;
      std::string sent(size, '\0');
      for (std::size_t i = 0; i < size; ++i) sent[i] = static_cast<char>(c * 131 + i);
      std::string received(size, '\0');
      for (int request = 0; request < 3; ++request) {
        if (!stream->WriteAll(sent.data(), size, TestDeadline()).ok() ||
            !stream->ReadFull(received.data(), size, TestDeadline()).ok() ||
            received != sent) {
          bad.fetch_add(1);
          break;
        }
      }
      stream->Close().IgnoreError();
      clients_done.count_down();
    });
  }
  clients_done.wait();
  all_served.wait();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(served.load(), connections);
}

INSTANTIATE_TEST_SUITE_P(Workers, ManyConnectionsTest, spindle::testing::WorkerCounts(),
                         spindle::testing::WorkerCountName);

// ---- EMFILE.

// Runs `body` with the process's descriptors used up to its limit (restored after).
template <typename F>
void WithDescriptorsExhausted(F&& body) {
  rlimit original;
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &original), 0);
  std::vector<int> filler;
  const rlimit low{static_cast<rlim_t>(OpenFds() + 8), original.rlim_max};
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  for (;;) {
    const int fd = dup(0);
    if (fd < 0) break;
    filler.push_back(fd);
  }
  body();
  for (int fd : filler) close(fd);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &original), 0);
}

TEST_F(IoTest, AcceptBacksOffOnEmfileWithoutSpinningAndRecovers) {
  ScopedRuntime runtime(2);
  ListenOptions options;
  options.refuse_when_out_of_descriptors = false;  // the back-off alone
  absl::StatusOr<Listener> listening = Listener::Listen(Address::Ipv4Loopback(0), options);
  ASSERT_TRUE(listening.ok());
  Listener& listener = *listening;
  // A connection waits in the backlog.
  absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
  ASSERT_TRUE(client.ok());
  Event accepted;
  absl::Status accept_status;
  WithDescriptorsExhausted([&] {
    absl::Status exhausted;
    std::uint64_t backoffs = 0;
    RunAsFiber([&] {
      exhausted = listener.Accept(In(milliseconds(200))).status();
      backoffs = listener.resource_backoffs();
    });
    EXPECT_EQ(exhausted.code(), absl::StatusCode::kResourceExhausted) << exhausted;
    EXPECT_NE(exhausted.message().find("Too many open files"), absl::string_view::npos);
    // The back-off path ran (about 6 times in 200 ms at 5 ms doubling; once if the
    // fiber first ran after its deadline). A busy loop would make thousands; waits can
    // only stretch on a slow machine, so fewer, never more, than the doubling allows.
    EXPECT_GE(backoffs, 1u);
    EXPECT_LE(backoffs, 12u);
    EXPECT_EQ(listener.refused(), 0u);
    // Descriptors come back (as the helper returns) while this Accept backs off: it
    // recovers within its deadline.
    StartFiberDetached([&] {
      absl::StatusOr<Stream> stream = listener.Accept(TestDeadline());
      accept_status = stream.status();
      accepted.Set();
    });
  });
  ASSERT_TRUE(accepted.WaitFor(kTestDeadline));
  EXPECT_TRUE(accept_status.ok()) << accept_status;
}

// With the spare descriptor (the default), a client that arrives while the process is
// out of descriptors learns it at once: its connection is accepted and closed, instead
// of waiting unanswered in the backlog until descriptors come back.
TEST_F(IoTest, AcceptOutOfDescriptorsRefusesWaitingClientsAtOnceAndRecovers) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  constexpr int kClients = 3;
  std::vector<Stream> clients;
  for (int i = 0; i < kClients; ++i) {
    absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client.ok());
    clients.push_back(std::move(*client));
  }
  WithDescriptorsExhausted([&] {
    absl::Status accepted;
    RunAsFiber([&] {
      // Refuses the waiting clients, then waits for one it can keep: none comes.
      accepted = listener.Accept(In(milliseconds(200))).status();
    });
    EXPECT_EQ(accepted.code(), absl::StatusCode::kDeadlineExceeded) << accepted;
    EXPECT_EQ(listener.refused(), static_cast<std::uint64_t>(kClients));
    // Every client sees its connection end (end of stream or a reset), long before its
    // own deadline.
    for (Stream& client : clients) {
      char byte;
      absl::StatusOr<std::size_t> n = client.Read(&byte, 1, TestDeadline());
      EXPECT_TRUE(!n.ok() ? absl::IsUnavailable(n.status()) : *n == 0)
          << (n.ok() ? "read data" : n.status().ToString());
    }
  });
  for (Stream& client : clients) client.Close().IgnoreError();
  // Descriptors are back: the next client is accepted and served.
  absl::StatusOr<Stream> late = Stream::Connect(listener.address(), TestDeadline());
  ASSERT_TRUE(late.ok());
  RunAsFiber([&] {
    absl::StatusOr<Stream> stream = listener.Accept(TestDeadline());
    ASSERT_TRUE(stream.ok()) << stream.status();
    EXPECT_TRUE(stream->WriteAll("ok", 2, TestDeadline()).ok());
  });
  char buffer[2];
  ASSERT_TRUE(late->ReadFull(buffer, 2, TestDeadline()).ok());
  EXPECT_EQ(std::string(buffer, 2), "ok");
}

// ---- Registration errors.

// epoll_ctl failing with anything but EPERM (ENOSPC at fs.epoll.max_user_watches) is
// the operation's error at once; it used to fall back to poll(2) on the worker for up
// to the whole deadline.
TEST_F(IoTest, ARegistrationFailureOtherThanEpermIsTheOperationsError) {
  ScopedRuntime runtime(2);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  absl::StatusOr<Stream> ours = Stream::Adopt(pair[0], Address());
  ASSERT_TRUE(ours.ok());
  RunAsFiber([&] {
    internal::Reactor::FailRegistrationsForTesting(ENOSPC, 1);
    char byte;
    absl::StatusOr<std::size_t> n = ours->Read(&byte, 1, In(std::chrono::seconds(5)));
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), absl::StatusCode::kResourceExhausted) << n.status();
    EXPECT_NE(n.status().message().find("epoll_ctl"), absl::string_view::npos)
        << n.status();
    // The next wait registers and works.
    ASSERT_EQ(write(pair[1], "x", 1), 1);
    n = ours->Read(&byte, 1, TestDeadline());
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(*n, 1u);
  });
  internal::Reactor::FailRegistrationsForTesting(0, 0);
  close(pair[1]);
}

// A poll that may take only `max_events` (a busy worker's budget, PollBudget) leaves the
// rest in the kernel, in order, for the next poll: none is lost with edge triggering.
// The one worker spins in a fiber meanwhile, so nobody else polls.
TEST_F(IoTest, APollTakesAtMostItsBudgetAndTheRestWaitForTheNext) {
  ScopedRuntime runtime(1);
  std::atomic<bool> spinning{false}, stop{false};
  StartFiberDetached([&] {
    spinning = true;
    while (!stop.load()) {
    }
  });
  while (!spinning.load()) std::this_thread::yield();
  internal::Reactor* reactor = internal::Reactor::ForGroup(0);
  ASSERT_TRUE(reactor->TryAcquire());
  int pipes[5][2];
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(pipe2(pipes[i], O_CLOEXEC | O_NONBLOCK), 0);
    ASSERT_EQ(write(pipes[i][1], "x", 1), 1);
    ASSERT_EQ(reactor->Register(pipes[i][0], 1000 + static_cast<std::uint64_t>(i)), 0);
  }
  const auto expired = spindle::internal::MonotonicDeadline::Expired();
  const std::uint64_t before = reactor->stats().events;
  EXPECT_TRUE(reactor->Wait(expired, 2));
  EXPECT_EQ(reactor->stats().events - before, 2u);
  EXPECT_TRUE(reactor->Wait(expired, 256));
  EXPECT_EQ(reactor->stats().events - before, 5u);
  EXPECT_FALSE(reactor->Wait(expired, 256));  // edge-triggered: each reported once
  EXPECT_EQ(reactor->stats().events - before, 5u);
  for (int i = 0; i < 5; ++i) {
    reactor->Unregister(pipes[i][0]);
    close(pipes[i][0]);
    close(pipes[i][1]);
  }
  (void)reactor->Release();
  stop = true;
}

// ---- Vectored writes.

TEST_F(IoTest, VectoredWritesKeepOrderAcrossPartialWritesEmptyPiecesAndIovMax) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    Listener listener = ListenLoopback();
    absl::StatusOr<Stream> client = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(client.ok());
    absl::StatusOr<Stream> server = listener.Accept(TestDeadline());
    ASSERT_TRUE(server.ok());
    // 3000 pieces (past IOV_MAX), some empty, some large (past the socket buffers, so
    // writes are partial and end inside pieces), with a reader that starts late.
    std::vector<std::string> storage;
    std::string expected;
    for (int i = 0; i < 3000; ++i) {
      const std::size_t size = i % 7 == 0 ? 0 : i % 500 == 1 ? 300'000 : 1 + i % 13;
      std::string piece(size, '\0');
      for (std::size_t k = 0; k < size; ++k) piece[k] = static_cast<char>(i * 31 + k);
      expected += piece;
      storage.push_back(std::move(piece));
    }
    std::vector<absl::string_view> pieces(storage.begin(), storage.end());
    Fiber writer([&] {
      EXPECT_TRUE(server->WriteAllVectored(pieces, TestDeadline()).ok());
      EXPECT_TRUE(server->ShutdownWrite().ok());
    });
    std::string received(expected.size(), '\0');
    ASSERT_TRUE(client->ReadFull(received.data(), received.size(), TestDeadline()).ok());
    EXPECT_TRUE(received == expected);
    char extra;
    absl::StatusOr<std::size_t> end = client->Read(&extra, 1, TestDeadline());
    ASSERT_TRUE(end.ok());
    EXPECT_EQ(*end, 0u);
    writer.join();
    // One call writes some and says how much; all-empty pieces write nothing.
    absl::StatusOr<std::size_t> some = client->WriteVectored({"ab", "", "cd"});
    ASSERT_TRUE(some.ok());
    EXPECT_EQ(*some, 4u);
    absl::StatusOr<std::size_t> none = client->WriteVectored({"", ""});
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, 0u);
    char four[4];
    ASSERT_TRUE(server->ReadFull(four, 4, TestDeadline()).ok());
    EXPECT_EQ(std::string(four, 4), "abcd");
  });
}

// ---- Idle: the poller blocks, nothing spins.

TEST_F(IoTest, IdleConnectionsCostNoPolling) {
  ScopedRuntime runtime(2);
  Listener listener = ListenLoopback();
  constexpr int kIdle = 200;
  std::vector<Stream> clients;
  Latch parked(kIdle);
  Event stop;
  StartFiberDetached([&] {
    for (int i = 0; i < kIdle; ++i) {
      absl::StatusOr<Stream> stream = listener.Accept(TestDeadline());
      ASSERT_TRUE(stream.ok());
      StartFiberDetached([&, stream = std::make_shared<Stream>(std::move(*stream))] {
        parked.count_down();
        char byte;
        (void)stream->Read(&byte, 1, TestDeadline());
      });
    }
  });
  for (int i = 0; i < kIdle; ++i) {
    absl::StatusOr<Stream> stream = Stream::Connect(listener.address(), TestDeadline());
    ASSERT_TRUE(stream.ok());
    clients.push_back(std::move(*stream));
  }
  parked.wait();
  internal::Reactor* reactor = internal::Reactor::AtIndex(0);
  ASSERT_NE(reactor, nullptr);
  // Wait until a worker sleeps in the poller, then watch: an idle runtime makes no
  // polls at all (a reactor re-run every few ms would make hundreds a second).
  ASSERT_TRUE(spindle::testing::WaitFor([&] {
    const auto before = reactor->stats().polls;
    Event quiet;
    (void)quiet.WaitFor(milliseconds(50));  // a deadline-bounded observation window
    return reactor->stats().polls == before;
  }));
  const internal::ReactorStats before = reactor->stats();
  Event window;
  (void)window.WaitFor(milliseconds(300));
  const internal::ReactorStats after = reactor->stats();
  // A reactor re-run every few ms would make dozens here; a wake-up of the earlier
  // activity that a loaded machine delays past the quiet stretch, one or two.
  EXPECT_LE(after.polls - before.polls, 2u) << "polls while idle";
  // The server sides (the clients are plain threads' streams: never registered).
  EXPECT_GE(after.registered, kIdle);
  // A fiber made ready by a plain thread while a worker blocks in epoll_wait runs at
  // once (the eventfd), not at the next network event.
  Event ran;
  StartFiberDetached([&] { ran.Set(); });
  ASSERT_TRUE(ran.WaitFor(kTestDeadline));
  for (Stream& client : clients) client.Close().IgnoreError();
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return reactor->stats().registered <= after.registered - kIdle; }));
}

// ---- RunBlocking.

TEST_F(IoTest, RunBlockingSaturatesItsPoolWithoutBlockingWorkers) {
  ScopedRuntime runtime(2);
  const std::uint64_t saved = FLAGS_io_blocking_threads;
  FLAGS_io_blocking_threads = 4;
  constexpr int kCalls = 64;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  Event release;
  Latch done(kCalls);
  std::atomic<int> sum{0};
  for (int i = 0; i < kCalls; ++i) {
    StartFiberDetached([&, i] {
      const int result = RunBlocking([&] {
        const int now = running.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        // A blocking call: waits for a plain-thread signal, blocking this pool thread.
        release.WaitFor(kTestDeadline);
        running.fetch_sub(1);
        return i;
      });
      sum.fetch_add(result);
      done.count_down();
    });
  }
  // The pool fills up while the workers stay free: a fiber still runs (within the
  // test's deadline, so that a worker held by a blocking call fails here, not hangs).
  ASSERT_TRUE(spindle::testing::WaitFor([&] { return running.load() == 4; }));
  Event fiber_ran;
  StartFiberDetached([&] { fiber_ran.Set(); });
  EXPECT_TRUE(fiber_ran.WaitFor(kTestDeadline)) << "no worker ran a fiber while the pool was full";
  release.Set();
  done.wait();
  EXPECT_EQ(most.load(), 4);
  EXPECT_EQ(sum.load(), kCalls * (kCalls - 1) / 2);
  // Exceptions come back to the caller; a plain thread may call it too.
  EXPECT_THROW(RunBlocking([]() -> int { throw std::runtime_error("boom"); }),
               std::runtime_error);
  EXPECT_EQ(RunBlocking([] { return std::string("thread"); }), "thread");
  FLAGS_io_blocking_threads = saved;
}

TEST(RunBlockingFlagTest, RejectsAnOutOfRangePoolSize) {
  EXPECT_TRUE(gflags::SetCommandLineOption("io_blocking_threads", "0").empty());
  EXPECT_TRUE(gflags::SetCommandLineOption("io_blocking_threads", "5000").empty());
  EXPECT_FALSE(gflags::SetCommandLineOption("io_blocking_threads", "8").empty());
}

}  // namespace
}  // namespace spindle::io
