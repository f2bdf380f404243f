// Copyright 2026 The Spindle Authors.
//
// integrations/grpc end to end: a gRPC server on 127.0.0.1 whose handlers are fibers,
// called through the fiber-blocking client, in one process. Every method kind; 1,000
// calls at once; deadlines, client cancellation and a client that disconnects ending a
// parked handler and cancelling its own backend calls; flow control holding a slow
// reader's writer; shutdown's drain; a handler that throws; hedged calls.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fiber/async.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "integrations/grpc/client.h"
#include "integrations/grpc/server.h"
#include "integrations/grpc/test_service.grpc.pb.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/future.h"
#include "sync/latch.h"

namespace spindle::grpc_fiber {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::TestReply;
using testing::TestRequest;
using testing::TestService;

// What the handlers saw, by the request's tag, and counts over all calls.
struct Records {
  std::mutex mu;
  std::map<std::string, steady_clock::time_point> started;  // "park"/"fanout" handlers
  std::map<std::string, steady_clock::time_point> ended;    // ... whose wait ended
  std::atomic<int> parked{0};          // "park" handlers waiting now
  std::atomic<int> park_cancelled{0};  // "park" waits ended by cancellation/deadline
  std::atomic<int> streamed_written{0};  // ServerStream messages gRPC took
  std::atomic<int> handlers_done{0};
  Event first_park;  // set when a "park" handler first waits

  void Started(const std::string& tag) {
    std::lock_guard<std::mutex> lock(mu);
    started[tag] = steady_clock::now();
  }
  void Ended(const std::string& tag) {
    std::lock_guard<std::mutex> lock(mu);
    ended[tag] = steady_clock::now();
  }
  std::optional<steady_clock::time_point> WhenEnded(const std::string& tag) {
    std::lock_guard<std::mutex> lock(mu);
    auto it = ended.find(tag);
    if (it == ended.end()) return std::nullopt;
    return it->second;
  }
  bool HasStarted(const std::string& tag) {
    std::lock_guard<std::mutex> lock(mu);
    return started.count(tag) != 0;
  }
  // How many handlers whose tag begins with `prefix` started, and how many ended.
  std::pair<int, int> Count(const std::string& prefix) {
    std::lock_guard<std::mutex> lock(mu);
    int s = 0, e = 0;
    for (const auto& [tag, at] : started) s += tag.rfind(prefix, 0) == 0;
    for (const auto& [tag, at] : ended) e += tag.rfind(prefix, 0) == 0;
    return {s, e};
  }
};

class TestServiceImpl final : public TestService::CallbackService {
 public:
  explicit TestServiceImpl(Records& records) : records_(records) {}
  // Set once the server's port is known: "fanout" calls back into this server.
  void SetSelf(std::shared_ptr<grpc::Channel> channel) {
    self_ = TestService::NewStub(std::move(channel));
  }

  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context,
                                  const TestRequest* request, TestReply* reply) override {
    return ServeUnary(context, [this, request, reply] {
      const grpc::Status status = HandleUnary(*request, reply);
      records_.handlers_done.fetch_add(1);
      return status;
    });
  }

  grpc::ServerWriteReactor<TestReply>* ServerStream(grpc::CallbackServerContext* context,
                                                    const TestRequest* request) override {
    return ServeServerStreaming<TestReply>(context, [this, request](
                                                        ServerWriter<TestReply>& writer) {
      TestReply reply;
      reply.set_payload(std::string(request->payload_bytes(), 'x'));
      for (int i = 0; i < request->count(); ++i) {
        reply.set_value(request->value() + i);
        if (!writer.Write(reply)) {
          return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        }
        records_.streamed_written.fetch_add(1);
      }
      records_.handlers_done.fetch_add(1);
      return grpc::Status::OK;
    });
  }

  grpc::ServerReadReactor<TestRequest>* ClientStream(grpc::CallbackServerContext* context,
                                                     TestReply* reply) override {
    return ServeClientStreaming<TestRequest>(context, [this, reply](
                                                          ServerReader<TestRequest>& reader) {
      TestRequest request;
      std::int64_t sum = 0;
      while (reader.Read(&request)) sum += request.value();
      reply->set_value(sum);
      records_.handlers_done.fetch_add(1);
      return grpc::Status::OK;
    });
  }

  grpc::ServerBidiReactor<TestRequest, TestReply>* Bidi(
      grpc::CallbackServerContext* context) override {
    return ServeBidiStreaming<TestRequest, TestReply>(
        context, [this](ServerReaderWriter<TestRequest, TestReply>& stream) {
          TestRequest request;
          TestReply reply;
          while (stream.Read(&request)) {
            reply.set_value(request.value() * 2);
            if (!stream.Write(reply)) break;
          }
          records_.handlers_done.fetch_add(1);
          return grpc::Status::OK;
        });
  }

 private:
  grpc::Status HandleUnary(const TestRequest& request, TestReply* reply) {
    if (request.mode() == "park") {
      // Interruptible: only the call's cancellation or deadline (its execution
      // context's) ends it.
      Event never;
      records_.Started(request.tag());
      records_.parked.fetch_add(1);
      records_.first_park.Set();
      const bool set = never.WaitUntil(steady_clock::time_point::max());
      records_.parked.fetch_sub(1);
      if (!set) {
        records_.park_cancelled.fetch_add(1);
        records_.Ended(request.tag());
      }
      return grpc::Status(grpc::StatusCode::CANCELLED, "parked until cancelled");
    }
    if (request.mode() == "fanout") {
      // `count` backend calls, each parked at the backend, made from fibers that run
      // in this handler's execution context: the call's cancellation reaches them.
      records_.Started(request.tag());
      std::vector<Future<grpc::Status>> calls;
      for (int i = 0; i < request.count(); ++i) {
        Fiber::Attributes inherit;
        inherit.inherit_execution_context = true;
        calls.push_back(Async(inherit, [this, &request, i] {
          TestRequest backend;
          backend.set_mode("park");
          backend.set_tag(request.tag() + "/" + std::to_string(i));
          TestReply backend_reply;
          grpc::ClientContext context;
          return Call(context, [&](auto done) {
            self_->async()->Unary(&context, &backend, &backend_reply, std::move(done));
          });
        }));
      }
      for (auto& call : calls) BlockingGet(std::move(call));
      records_.Ended(request.tag());
      // As a handler should: past its deadline, say so (this answer may reach the
      // client before the client's own deadline timer does).
      if (ExecutionContext::Current()->deadline() <= steady_clock::now()) {
        return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the backend calls ran out of time");
      }
      return grpc::Status(grpc::StatusCode::CANCELLED, "the backend calls ended");
    }
    if (request.mode() == "throw") throw std::runtime_error("thrown on purpose");
    reply->set_value(request.value() + 1);
    return grpc::Status::OK;
  }

  Records& records_;
  std::unique_ptr<TestService::Stub> self_;
};

// A TCP proxy on 127.0.0.1 between a client and the server: Cut() closes every
// connection through it at once, as a client that crashes or loses its network does.
// Thread-safety: Cut() and the destructor from the test's thread.
class CuttableProxy {
 public:
  explicit CuttableProxy(int target_port) : target_port_(target_port) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    CHECK_EQ(listen(listener_, 16), 0);
    socklen_t length = sizeof(address);
    getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { Accept(); });
  }
  ~CuttableProxy() {
    Cut();
    shutdown(listener_, SHUT_RDWR);
    acceptor_.join();
    close(listener_);
    for (auto& pump : pumps_) pump.join();
    for (int fd : fds_) close(fd);
  }
  int port() const { return port_; }
  // Closes both sides of every proxied connection (reset, not a graceful end).
  void Cut() {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : fds_) shutdown(fd, SHUT_RDWR);
    cut_ = true;
  }

 private:
  void Accept() {
    for (;;) {
      const int client = accept(listener_, nullptr, nullptr);
      if (client < 0) return;
      const int server = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      address.sin_port = htons(target_port_);
      CHECK_EQ(connect(server, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
      std::lock_guard<std::mutex> lock(mu_);
      fds_.push_back(client);
      fds_.push_back(server);
      if (cut_) {
        shutdown(client, SHUT_RDWR);
        shutdown(server, SHUT_RDWR);
      }
      pumps_.emplace_back([client, server] { Pump(client, server); });
      pumps_.emplace_back([client, server] { Pump(server, client); });
    }
  }
  static void Pump(int from, int to) {
    char buffer[16384];
    for (;;) {
      const ssize_t n = read(from, buffer, sizeof(buffer));
      if (n <= 0) break;
      if (write(to, buffer, n) != n) break;
    }
    shutdown(to, SHUT_RDWR);
    shutdown(from, SHUT_RDWR);
  }

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;
  std::vector<std::thread> pumps_;
  bool cut_ = false;
};

// A runtime of 4 workers under the test's strategy, a server of TestServiceImpl on an
// ephemeral port and a channel to it.
class GrpcTest : public ::testing::Test {
 protected:
  GrpcTest() : runtime_(4) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    CHECK(server_ != nullptr && port_ != 0);
    channel_ = Channel(port_);
    service_.SetSelf(Channel(port_));
    stub_ = TestService::NewStub(channel_);
  }
  ~GrpcTest() override {
    if (server_ != nullptr) ShutdownServer(*server_, milliseconds(2000));
  }

  // `fixed_window`: without gRPC's BDP probe, so the stream's flow-control window
  // stays at its initial size (the probe grows it with the round trip it measures,
  // which a loaded machine inflates: the slow-reader test saw the writer 934 messages
  // ahead in one CI run and under 150 in others).
  static std::shared_ptr<grpc::Channel> Channel(int port, int index = 0,
                                                bool fixed_window = false) {
    grpc::ChannelArguments arguments;
    arguments.SetInt("spindle.test_channel", index);  // a connection of its own
    if (fixed_window) arguments.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    return grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials(), arguments);
  }

  grpc::Status Unary(TestService::Stub& stub, const TestRequest& request, TestReply* reply,
                     grpc::ClientContext& context) {
    return Call(context, [&](auto done) {
      stub.async()->Unary(&context, &request, reply, std::move(done));
    });
  }

  spindle::testing::ScopedRuntime runtime_;
  Records records_;
  TestServiceImpl service_{records_};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
};

TEST_F(GrpcTest, EveryMethodKindFromAFiberAndFromAThread) {
  auto exercise = [this] {
    {  // unary
      TestRequest request;
      request.set_value(41);
      TestReply reply;
      grpc::ClientContext context;
      ASSERT_TRUE(Unary(*stub_, request, &reply, context).ok());
      EXPECT_EQ(reply.value(), 42);
    }
    {  // server streaming
      TestRequest request;
      request.set_value(100);
      request.set_count(50);
      grpc::ClientContext context;
      ClientReader<TestReply> reader(context, [&](auto* reactor) {
        stub_->async()->ServerStream(&context, &request, reactor);
      });
      TestReply reply;
      int got = 0;
      while (reader.Read(&reply)) {
        EXPECT_EQ(reply.value(), 100 + got);
        ++got;
      }
      EXPECT_EQ(got, 50);
      EXPECT_TRUE(reader.Finish().ok());
    }
    {  // client streaming
      TestReply reply;
      grpc::ClientContext context;
      ClientWriter<TestRequest> writer(context, [&](auto* reactor) {
        stub_->async()->ClientStream(&context, &reply, reactor);
      });
      TestRequest request;
      for (int i = 1; i <= 100; ++i) {
        request.set_value(i);
        ASSERT_TRUE(writer.Write(request));
      }
      ASSERT_TRUE(writer.WritesDone());
      EXPECT_FALSE(writer.Write(request));  // after WritesDone(): refused, not gRPC's abort
      ASSERT_TRUE(writer.Finish().ok());
      EXPECT_EQ(reply.value(), 5050);
      EXPECT_FALSE(writer.WritesDone());
    }
    {  // bidirectional, reading in a second fiber while this one writes
      grpc::ClientContext context;
      ClientReaderWriter<TestRequest, TestReply> stream(context, [&](auto* reactor) {
        stub_->async()->Bidi(&context, reactor);
      });
      std::int64_t sum = 0;
      int got = 0;
      Fiber reader([&] {
        TestReply reply;
        while (stream.Read(&reply)) {
          sum += reply.value();
          ++got;
        }
      });
      TestRequest request;
      for (int i = 1; i <= 20; ++i) {
        request.set_value(i);
        EXPECT_TRUE(stream.Write(request));
      }
      EXPECT_TRUE(stream.WritesDone());
      EXPECT_FALSE(stream.Write(request));
      reader.join();
      EXPECT_TRUE(stream.Finish().ok());
      TestReply after;
      EXPECT_FALSE(stream.Read(&after));  // after Finish(): refused
      EXPECT_EQ(got, 20);
      EXPECT_EQ(sum, 2 * 210);
    }
  };
  RunAsFiber(exercise);
  // From a plain thread: the same calls block the thread.
  exercise();
}

TEST_F(GrpcTest, AThousandConcurrentCallsOfEveryKind) {
  constexpr int kCalls = 1000;
  std::atomic<int> ok{0};
  Latch all_done(kCalls);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<TestService::Stub>> stubs;
  for (int i = 0; i < 4; ++i) {
    channels.push_back(Channel(port_, i + 1));
    stubs.push_back(TestService::NewStub(channels.back()));
  }
  for (int i = 0; i < kCalls; ++i) {
    StartFiberDetached([&, i] {
      TestService::Stub& stub = *stubs[i % stubs.size()];
      grpc::ClientContext context;
      bool good = false;
      switch (i % 4) {
        case 0: {
          TestRequest request;
          request.set_value(i);
          TestReply reply;
          good = Unary(stub, request, &reply, context).ok() && reply.value() == i + 1;
          break;
        }
        case 1: {
          TestRequest request;
          request.set_count(3);
          ClientReader<TestReply> reader(context, [&](auto* reactor) {
            stub.async()->ServerStream(&context, &request, reactor);
          });
          TestReply reply;
          int got = 0;
          while (reader.Read(&reply)) ++got;
          good = reader.Finish().ok() && got == 3;
          break;
        }
        case 2: {
          TestReply reply;
          ClientWriter<TestRequest> writer(context, [&](auto* reactor) {
            stub.async()->ClientStream(&context, &reply, reactor);
          });
          TestRequest request;
          request.set_value(i);
          good = writer.Write(request) && writer.Write(request) && writer.WritesDone() &&
                 writer.Finish().ok() && reply.value() == 2 * i;
          break;
        }
        case 3: {
          ClientReaderWriter<TestRequest, TestReply> stream(context, [&](auto* reactor) {
            stub.async()->Bidi(&context, reactor);
          });
          TestRequest request;
          request.set_value(i);
          TestReply reply;
          good = stream.Write(request) && stream.Read(&reply) && reply.value() == 2 * i &&
                 stream.WritesDone() && !stream.Read(&reply) && stream.Finish().ok();
          break;
        }
      }
      if (good) ok.fetch_add(1);
      all_done.count_down();
    });
  }
  all_done.wait();
  EXPECT_EQ(ok.load(), kCalls);
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.handlers_done.load() == kCalls; }));
}

// Joins a plain thread making a call once `answered` (its call returned): a call left
// unanswered fails the test and is cancelled, instead of hanging it.
void JoinCaller(Event& answered, grpc::ClientContext& context, std::thread& caller) {
  EXPECT_TRUE(answered.WaitFor(std::chrono::seconds(60))) << "the call was never answered";
  context.TryCancel();
  caller.join();
}

TEST_F(GrpcTest, AClientDeadlineEndsTheParkedHandlerAndCancelsItsBackendCalls) {
  constexpr int kBackendCalls = 3;
  {  // The connection up first: the deadline is for the call, not for connecting.
    TestRequest request;
    TestReply reply;
    grpc::ClientContext context;
    ASSERT_TRUE(Unary(*stub_, request, &reply, context).ok());
  }
  // On a loaded machine (a sanitizer lane) a 50 ms deadline may pass before the call,
  // or one of its backend calls, reaches its handler: such an attempt shows nothing
  // about a parked handler, so it is retried (with a new tag) until one got there.
  bool shown = false;
  for (int attempt = 0; attempt < 10 && !shown; ++attempt) {
    const std::string tag = "deadline" + std::to_string(attempt);
    TestRequest request;
    request.set_mode("fanout");
    request.set_count(kBackendCalls);
    request.set_tag(tag);
    TestReply reply;
    grpc::ClientContext context;
    const auto start = steady_clock::now();
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(50));
    const grpc::Status status = Unary(*stub_, request, &reply, context);
    const auto answered = steady_clock::now();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << status.error_message();
    // Did the frontend's handler start? (It is started, if at all, soon after the call
    // arrives; a call that expired on the way may never be handed to it.)
    if (!spindle::testing::WaitFor([&] { return records_.HasStarted(tag); },
                                   std::chrono::seconds(5))) {
      continue;
    }
    // Its wait (for its backend calls) ends, and so does every backend call that got
    // to park at the backend: each counts its cancellation there.
    std::optional<steady_clock::time_point> handler_end;
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return (handler_end = records_.WhenEnded(tag)); }));
    std::pair<int, int> backends;
    EXPECT_TRUE(spindle::testing::WaitFor([&] {
      backends = records_.Count(tag + "/");
      return backends.first == backends.second;
    })) << backends.first << " backend calls parked, " << backends.second << " ended";
    shown = backends.first == kBackendCalls;
    auto ms = [&](steady_clock::time_point t) {
      return std::chrono::duration_cast<milliseconds>(t - start).count();
    };
    // Reported, not asserted (timings are measured, not tested).
    LOG(INFO) << "deadline 50 ms (attempt " << attempt << "): the client was answered after "
              << ms(answered) << " ms, the handler's wait ended after " << ms(*handler_end)
              << " ms; " << backends.first << " of " << kBackendCalls
              << " backend calls had parked, all ended";
    EXPECT_GE(*handler_end - start, milliseconds(45));
  }
  EXPECT_TRUE(shown) << "no attempt got its " << kBackendCalls
                     << " backend calls parked before the deadline";
}

TEST_F(GrpcTest, AClientThatCancelsEndsTheHandlerAndItsBackendCalls) {
  constexpr int kBackendCalls = 2;
  TestRequest request;
  request.set_mode("fanout");
  request.set_count(kBackendCalls);
  request.set_tag("cancel");
  TestReply reply;
  grpc::ClientContext context;
  Event answered;
  grpc::Status status;
  std::thread caller([&] {
    status = Unary(*stub_, request, &reply, context);
    answered.Set();
  });
  // Cancel once both backend calls are parked at the backend.
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.parked.load() == kBackendCalls; }));
  context.TryCancel();
  JoinCaller(answered, context, caller);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return records_.park_cancelled.load() == kBackendCalls; }));
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.WhenEnded("cancel"); }));
}

TEST_F(GrpcTest, AClientThatDisconnectsEndsTheHandlerAndItsBackendCalls) {
  constexpr int kBackendCalls = 2;
  CuttableProxy proxy(port_);
  auto channel = Channel(proxy.port(), 99);
  auto stub = TestService::NewStub(channel);
  TestRequest request;
  request.set_mode("fanout");
  request.set_count(kBackendCalls);
  request.set_tag("disconnect");
  TestReply reply;
  grpc::ClientContext context;
  Event answered;
  grpc::Status status;
  std::thread caller([&] {
    status = Unary(*stub, request, &reply, context);
    answered.Set();
  });
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.parked.load() == kBackendCalls; }));
  proxy.Cut();  // the client's connection is gone; the server learns it from TCP
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return records_.park_cancelled.load() == kBackendCalls; }));
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.WhenEnded("disconnect"); }));
  JoinCaller(answered, context, caller);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

// Resident memory of this process, in KiB.
long ResidentKib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

TEST_F(GrpcTest, ASlowStreamingReaderParksTheWriterAndBoundsMemory) {
  constexpr int kMessages = 2000;
  constexpr int kBytes = 32 * 1024;  // 62.5 MiB in all, were nothing held back
  TestRequest request;
  request.set_count(kMessages);
  request.set_payload_bytes(kBytes);
  grpc::ClientContext context;
  // A connection of its own whose window does not grow with the measured round trip
  // (Channel()): the bound below is then flow control's, whatever the machine's load.
  auto stub = TestService::NewStub(Channel(port_, /*index=*/1, /*fixed_window=*/true));
  const long rss_before = ResidentKib();
  long rss_peak = rss_before;
  int most_ahead = 0;
  int read = 0;
  RunAsFiber([&] {
    ClientReader<TestReply> reader(context, [&](auto* reactor) {
      stub->async()->ServerStream(&context, &request, reactor);
    });
    TestReply reply;
    while (reader.Read(&reply)) {
      ++read;
      most_ahead = std::max(most_ahead, records_.streamed_written.load() - read);
      if (read % 50 == 0) rss_peak = std::max(rss_peak, ResidentKib());
      // The slow reader: a millisecond per message (a workload, not a wait for an event).
      this_fiber::SleepFor(milliseconds(1));
    }
    EXPECT_TRUE(reader.Finish().ok());
  });
  EXPECT_EQ(read, kMessages);
  LOG(INFO) << "slow reader: the writer was at most " << most_ahead << " messages ("
            << most_ahead * kBytes / 1024 << " KiB) ahead of the reader; resident memory grew "
            << rss_peak - rss_before << " KiB (" << kMessages * kBytes / 1024
            << " KiB streamed)";
  // Flow control: the writer stays within gRPC's windows of the reader instead of
  // queueing the stream (which would put every message ahead).
  EXPECT_LT(most_ahead, kMessages / 4);
#if !defined(__SANITIZE_ADDRESS__)
  // (AddressSanitizer keeps freed memory in quarantine: resident memory grows there by
  // what was streamed, whatever the flow control does.)
  EXPECT_LT(rss_peak - rss_before, kMessages * kBytes / 1024 / 4);
#endif
}

TEST_F(GrpcTest, ShutdownDrainsCallsInFlightAndCancelsThoseStillRunningAfterTheDrain) {
  // One call that finishes during the drain (a bidi stream the client completes after
  // the shutdown began), one that would park for ever (cancelled at the drain's end).
  grpc::ClientContext stream_context;
  grpc::ClientContext park_context;
  Event park_answered;
  grpc::Status park_status;
  TestRequest park;
  park.set_mode("park");
  park.set_tag("drained");
  TestReply park_reply;
  std::thread parker([&] {
    park_status = Unary(*stub_, park, &park_reply, park_context);
    park_answered.Set();
  });
  ClientReaderWriter<TestRequest, TestReply> stream(stream_context, [&](auto* reactor) {
    stub_->async()->Bidi(&stream_context, reactor);
  });
  TestRequest request;
  request.set_value(1);
  TestReply reply;
  EXPECT_TRUE(stream.Write(request));
  EXPECT_TRUE(stream.Read(&reply));
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.parked.load() == 1; }));

  std::thread shutdown([&] { ShutdownServer(*server_, milliseconds(1000)); });
  // The drain has begun once a new call is refused.
  EXPECT_TRUE(spindle::testing::WaitFor([&] {
    TestRequest echo;
    TestReply echo_reply;
    grpc::ClientContext context;
    return !Unary(*stub_, echo, &echo_reply, context).ok();
  }));
  // In flight during the drain: the stream still works, and ends normally.
  request.set_value(2);
  EXPECT_TRUE(stream.Write(request));
  EXPECT_TRUE(stream.Read(&reply));
  EXPECT_EQ(reply.value(), 4);
  EXPECT_TRUE(stream.WritesDone());
  EXPECT_FALSE(stream.Read(&reply));
  EXPECT_TRUE(stream.Finish().ok());
  // The parked call is cancelled at the drain's end; its handler's wait ends.
  EXPECT_TRUE(park_answered.WaitFor(std::chrono::seconds(60)));
  EXPECT_EQ(park_status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << park_status.error_message();
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.park_cancelled.load() == 1; }));
  shutdown.join();
  parker.join();
  server_.reset();
}

TEST_F(GrpcTest, CallAsyncFansOutAndIsCancelledWithTheCallersContext) {
  constexpr int kCalls = 3;
  RunAsFiber([&] {
    auto request_context = ExecutionContext::Create();
    ScopedExecutionContext scope(request_context);
    // Two answered calls, and three that park at the server until cancelled.
    std::vector<TestRequest> requests(2 + kCalls);
    std::vector<TestReply> replies(requests.size());
    std::vector<grpc::ClientContext> contexts(requests.size());
    std::vector<Future<grpc::Status>> answered;
    std::vector<Future<grpc::Status>> parked;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].set_value(static_cast<std::int64_t>(i));
      if (i >= 2) {
        requests[i].set_mode("park");
        requests[i].set_tag("async/" + std::to_string(i));
      }
      auto future = CallAsync(contexts[i], [&, i](auto done) {
        stub_->async()->Unary(&contexts[i], &requests[i], &replies[i], std::move(done));
      });
      (i < 2 ? answered : parked).push_back(std::move(future));
    }
    for (const grpc::Status& status : BlockingGet(WhenAll(std::move(answered)))) {
      EXPECT_TRUE(status.ok()) << status.error_message();
    }
    EXPECT_EQ(replies[0].value(), 1);
    EXPECT_EQ(replies[1].value(), 2);
    EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.parked.load() == kCalls; }));
    request_context->Cancel();  // the caller's cancellation reaches the calls in flight
    for (const grpc::Status& status : BlockingGet(WhenAll(std::move(parked)))) {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
    }
  });
  EXPECT_TRUE(spindle::testing::WaitFor([&] {
    return records_.Count("async/") == std::make_pair(kCalls, kCalls);
  }));
}

TEST_F(GrpcTest, ACallPastItsDeadlineBeforeItsFiberRunsIsAnsweredWithoutItsHandler) {
  // Every worker held by a spinning fiber, so the call's fiber waits in the run queue
  // past the call's deadline.
  constexpr int kWorkers = 4;  // the fixture's runtime
  std::atomic<int> spinning{0};
  std::atomic<bool> release{false};
  Latch spinners_done(kWorkers);
  // One at a time, each running before the next is started: a spinner never gives its
  // worker back, so each must find an idle worker of its own (a batch could be handed
  // to one polling worker that then spins on the first).
  for (int i = 0; i < kWorkers; ++i) {
    StartFiberDetached([&] {
      spinning.fetch_add(1);
      while (!release.load()) {
      }
      spinners_done.count_down();
    });
    EXPECT_TRUE(spindle::testing::WaitFor([&] { return spinning.load() == i + 1; },
                                          std::chrono::seconds(20)));
  }
  const ServerStats before = GetServerStats();
  const int handled_before = records_.handlers_done.load();
  // On a loaded machine a call may expire before it reaches the server at all: such an
  // attempt shows nothing, so calls are made until one got there (its fiber queued).
  std::uint64_t reached = 0;
  for (int attempt = 0; attempt < 10 && reached == 0; ++attempt) {
    TestRequest request;
    request.set_value(1);
    TestReply reply;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + milliseconds(100));
    const grpc::Status status = Unary(*stub_, request, &reply, context);  // this thread
    EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    reached = GetServerStats().started - before.started;
  }
  // The server's side of the deadline (a little later than the client's: the call's
  // time in transit) has passed too once gRPC has cancelled the calls there.
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return GetServerStats().cancelled - before.cancelled >= reached; },
      std::chrono::seconds(20)));
  release.store(true);
  spinners_done.wait();
  EXPECT_GE(reached, 1u) << "no call reached the server before its deadline";
  // Every call that reached the server ran its fiber once a worker was free, and was
  // answered without its handler.
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] {
        const ServerStats now = GetServerStats();
        return now.expired_before_start - before.expired_before_start ==
                   now.started - before.started ||
               records_.handlers_done.load() != handled_before;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(records_.handlers_done.load(), handled_before);
}

TEST_F(GrpcTest, AHandlerThatThrowsAnswersUnknownAndTheServerGoesOn) {
  const std::uint64_t before = GetServerStats().handler_exceptions;
  TestRequest request;
  request.set_mode("throw");
  TestReply reply;
  grpc::ClientContext context;
  const grpc::Status status = Unary(*stub_, request, &reply, context);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_NE(status.error_message().find("thrown on purpose"), std::string::npos);
  EXPECT_EQ(GetServerStats().handler_exceptions, before + 1);
  // The next call is served.
  request.set_mode("echo");
  request.set_value(1);
  grpc::ClientContext next;
  EXPECT_TRUE(Unary(*stub_, request, &reply, next).ok());
  EXPECT_EQ(reply.value(), 2);
}

TEST_F(GrpcTest, AHedgedCallTakesTheFirstAnswerAndCancelsTheOther) {
  RunAsFiber([&] {
    StopSource cancel_rest;
    ExecutionContext::Options options;
    options.parent = ExecutionContext::CaptureCurrent();
    options.stop_token = cancel_rest.token();
    ScopedExecutionContext race(ExecutionContext::Create(options));
    // The slow copy parks at the server; the hedge answers at once. Both copies end
    // before the test goes on (the loser once cancelled).
    Latch copies_done(2);
    std::vector<Future<std::int64_t>> copies;
    for (const char* mode : {"park", "echo"}) {
      Fiber::Attributes inherit;
      inherit.inherit_execution_context = true;
      copies.push_back(Async(inherit, [this, mode, &copies_done] {
        TestRequest request;
        request.set_mode(mode);
        request.set_tag("hedged");
        request.set_value(7);
        if (request.mode() == "echo") {
          // The hedge goes out once the first copy is parked at the server (as a
          // hedge is sent when the first copy is late), so the race has a loser to
          // cancel there.
          EXPECT_TRUE(records_.first_park.WaitFor(std::chrono::seconds(60)));
        }
        TestReply reply;
        grpc::ClientContext context;
        const grpc::Status status = Unary(*stub_, request, &reply, context);
        copies_done.count_down();
        return status.ok() ? reply.value() : -1;
      }));
    }
    auto first = WhenAny(std::move(copies), cancel_rest);
    const auto winner = BlockingGet(std::move(first));
    EXPECT_EQ(winner.index, 1u);
    EXPECT_EQ(winner.value, 8);
    copies_done.wait();
  });
  EXPECT_TRUE(spindle::testing::WaitFor([&] { return records_.park_cancelled.load() == 1; }));
}

}  // namespace
}  // namespace spindle::grpc_fiber
