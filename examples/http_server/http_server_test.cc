// Copyright 2026 The Spindle Authors.
//
// The HTTP server in-process on a 2-worker runtime, driven by io::Stream clients from
// the test's own thread (Stream works from plain threads too). Every wait has a
// deadline; nothing sleeps. The client parses responses with http_parser in response
// mode, so the test does not trust a hand-written parser either.

#include "examples/http_server/http_server.h"

#include <http_parser.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "examples/testing/failing_new.h"
#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/address.h"
#include "io/stream.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/metrics.h"
#include "sync/event.h"

namespace spindle::examples::http {
namespace {

using namespace std::chrono_literals;

constexpr auto kTimeout = 20s;  // any single step; a hang fails instead of blocking

io::Deadline Soon() { return io::Clock::now() + kTimeout; }

struct Response {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  bool keep_alive = true;

  std::string Header(absl::string_view name) const {
    for (const auto& [key, value] : headers) {
      if (key == name) return value;
    }
    return "";
  }
};

// A test client: one connection and a response parser over it.
class Client {
 public:
  explicit Client(const io::Address& address) {
    absl::StatusOr<io::Stream> stream = io::Stream::Connect(address, Soon());
    EXPECT_TRUE(stream.ok()) << stream.status();
    if (stream.ok()) stream_ = std::move(*stream);
    http_parser_init(&parser_, HTTP_RESPONSE);
    parser_.data = this;
    http_parser_settings_init(&settings_);
    settings_.on_message_begin = [](http_parser* p) {
      static_cast<Client*>(p->data)->current_ = Response();
      return 0;
    };
    settings_.on_header_field = [](http_parser* p, const char* at, std::size_t n) {
      Response& r = static_cast<Client*>(p->data)->current_;
      if (r.headers.empty() || !r.headers.back().second.empty()) r.headers.emplace_back();
      r.headers.back().first += absl::AsciiStrToLower(absl::string_view(at, n));
      return 0;
    };
    settings_.on_header_value = [](http_parser* p, const char* at, std::size_t n) {
      static_cast<Client*>(p->data)->current_.headers.back().second.append(at, n);
      return 0;
    };
    settings_.on_headers_complete = [](http_parser* p) {
      // 1: no body follows (the answer to a HEAD), as http_parser's contract says.
      Client* self = static_cast<Client*>(p->data);
      return !self->heads_.empty() && self->heads_.front() ? 1 : 0;
    };
    settings_.on_body = [](http_parser* p, const char* at, std::size_t n) {
      static_cast<Client*>(p->data)->current_.body.append(at, n);
      return 0;
    };
    settings_.on_message_complete = [](http_parser* p) {
      Client* self = static_cast<Client*>(p->data);
      self->current_.status = static_cast<int>(p->status_code);
      self->current_.keep_alive = http_should_keep_alive(p) != 0;
      self->done_.push_back(std::move(self->current_));
      if (!self->heads_.empty()) self->heads_.pop_front();
      return 0;
    };
  }

  io::Stream& stream() { return stream_; }

  // Says, request by request in order, whether the next responses answer a HEAD (no
  // body follows their headers); requests not described answer a GET or POST.
  void ExpectResponsesTo(std::initializer_list<bool> heads) {
    heads_.insert(heads_.end(), heads.begin(), heads.end());
  }

  void Send(absl::string_view data) {
    const absl::Status status = stream_.WriteAll(data.data(), data.size(), Soon());
    EXPECT_TRUE(status.ok()) << status;
  }

  // Sends one byte per write.
  void SendBytewise(absl::string_view data) {
    for (char c : data) Send(absl::string_view(&c, 1));
  }

  // The next complete response, or an error (end of stream, timeout, parse error).
  absl::StatusOr<Response> Next() {
    while (done_.empty()) {
      char buffer[4096];
      absl::StatusOr<std::size_t> read = stream_.Read(buffer, sizeof(buffer), Soon());
      if (!read.ok()) return read.status();
      if (*read == 0) return absl::OutOfRangeError("end of stream before a response");
      const std::size_t parsed = http_parser_execute(&parser_, &settings_, buffer, *read);
      if (parsed != *read || HTTP_PARSER_ERRNO(&parser_) != HPE_OK) {
        return absl::InternalError(
            absl::StrCat("bad response: ", http_errno_name(HTTP_PARSER_ERRNO(&parser_)),
                         " in '", absl::string_view(buffer, *read), "'"));
      }
    }
    Response response = std::move(done_.front());
    done_.pop_front();
    return response;
  }

  // Reads until the server closes; returns what arrived (after any parsed responses).
  // Fails the test on a timeout: the server must close the connection.
  std::string ReadUntilEof() {
    std::string received;
    while (true) {
      char buffer[4096];
      absl::StatusOr<std::size_t> read = stream_.Read(buffer, sizeof(buffer), Soon());
      if (!read.ok()) {
        // A reset also ends the connection; a deadline does not.
        EXPECT_FALSE(absl::IsDeadlineExceeded(read.status())) << read.status();
        return received;
      }
      if (*read == 0) return received;
      received.append(buffer, *read);
    }
  }

 private:
  io::Stream stream_;
  http_parser parser_;
  http_parser_settings settings_;
  Response current_;
  std::deque<Response> done_;
  std::deque<bool> heads_;
};

// The server on a loopback port, serving from a fiber for the object's lifetime.
class TestServer {
 public:
  explicit TestServer(const HttpServerOptions& options) : server_(options) {
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
    EXPECT_TRUE(served_.WaitUntil(Soon())) << "Serve() did not return after Shutdown()";
    serving_.join();
  }

  const io::Address& address() const { return address_; }
  HttpServer& server() { return server_; }
  bool WaitServed() { return served_.WaitUntil(Soon()); }

 private:
  HttpServer server_;
  io::Listener listener_;
  io::Address address_;
  Event served_;
  Fiber serving_;
};

HttpServerOptions TestOptions() {
  HttpServerOptions options;
  options.max_header_bytes = 1024;
  options.max_body_bytes = 64 * 1024;
  options.idle_timeout = 10s;
  options.drain_timeout = 10s;
  options.debug_endpoints = true;  // /metrics and /fibers; off by default (its own test)
  // Far beyond any wait of a test: a GET /wait that ends early was cancelled.
  options.request_timeout = std::chrono::hours(1);
  return options;
}

class HttpServerTest : public ::testing::Test {
 protected:
  HttpServerTest() : runtime_(2), server_(TestOptions()) {}

  // A new connection gets GET / answered: the server survived whatever came before.
  void ExpectServesFreshClient() {
    Client client(server_.address());
    client.Send("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "hello, world\n");
  }

  // The connection answers `request` with `status` and closes.
  void ExpectErrorAndClose(absl::string_view request, int status) {
    Client client(server_.address());
    client.Send(request);
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, status);
    EXPECT_EQ(response->Header("connection"), "close");
    EXPECT_EQ(client.ReadUntilEof(), "");
    ExpectServesFreshClient();
  }

  testing::ScopedRuntime runtime_;
  TestServer server_;
};

TEST_F(HttpServerTest, GetHello) {
  Client client(server_.address());
  client.Send("GET / HTTP/1.1\r\nHost: test\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello, world\n");
  EXPECT_EQ(response->Header("content-length"), "13");
  EXPECT_EQ(response->Header("content-type"), "text/plain");
  EXPECT_EQ(response->Header("date").size(), 29u);
  EXPECT_TRUE(response->keep_alive);
  // The connection stays open for the next request.
  client.Send("GET /?query=1 HTTP/1.1\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "hello, world\n");
}

TEST_F(HttpServerTest, GetFibersDumpsEveryFiber) {
  Client client(server_.address());
  absl::StatusOr<Response> response;
  std::string dump;
  // The connection's own fiber takes the dump; the accept loop waits for connections,
  // once it has handed ours over (it may still be running at the first request).
  for (int attempt = 0; attempt < 1000; ++attempt) {
    client.Send("GET /fibers HTTP/1.1\r\n\r\n");
    response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    dump = response->body;
    if (dump.find("waiting on socket") != std::string::npos) break;
  }
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->Header("content-type"), "text/plain");
  EXPECT_NE(dump.find("--- fiber dump: "), std::string::npos) << dump;
  EXPECT_NE(dump.find("(this fiber, taking the dump)"), std::string::npos) << dump;
  EXPECT_NE(dump.find("waiting on socket"), std::string::npos) << dump;
  EXPECT_NE(dump.find("--- end of fiber dump ---"), std::string::npos) << dump;
  client.Send("POST /fibers HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 405);
}

// GET /wait?ms=N answers after N ms; a malformed or out-of-range N is 400; the route
// takes GET and HEAD only.
TEST_F(HttpServerTest, WaitAnswersAfterItsTime) {
  Client client(server_.address());
  client.Send("GET /wait?ms=5 HTTP/1.1\r\nHost: test\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "waited 5 ms\n");
  for (const char* bad : {"/wait", "/wait?ms=-1", "/wait?ms=x", "/wait?ms=3600001"}) {
    client.Send(absl::StrCat("GET ", bad, " HTTP/1.1\r\nHost: test\r\n\r\n"));
    response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 400) << bad;
    EXPECT_NE(response->body.find("[0, 3600000]"), std::string::npos) << response->body;
  }
  client.Send("POST /wait?ms=1 HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(server_.server().stats().requests_cancelled, 0u);
}

// The request's deadline (request_timeout from its first byte) ends the handler's wait
// long before its hour: 504, and the connection goes on.
TEST(HttpServerDeadlineTest, AWaitPastTheRequestDeadlineIsAnswered504) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.request_timeout = 20ms;
  TestServer server(options);
  Client client(server.address());
  client.Send("GET /wait?ms=3600000 HTTP/1.1\r\nHost: test\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 504);
  EXPECT_EQ(response->body, "request deadline exceeded\n");
  EXPECT_TRUE(response->keep_alive);
  client.Send("GET /wait?ms=0 HTTP/1.1\r\nHost: test\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(server.server().stats().requests_timed_out, 1u);
}

// A client that sends GET /wait?ms=3600000 and goes away: its handler is cancelled (it
// does not wait an hour), counted, and its connection closes; a client that half-closes
// (shuts its sending side) is gone too. Other clients are served meanwhile.
TEST_F(HttpServerTest, AClientThatGoesAwayCancelsItsHandler) {
  for (bool half_close : {false, true}) {
    SCOPED_TRACE(half_close ? "half-close" : "close");
    const std::uint64_t before = server_.server().stats().requests_cancelled;
    {
      Client client(server_.address());
      client.Send("GET /wait?ms=3600000 HTTP/1.1\r\nHost: test\r\n\r\n");
      ExpectServesFreshClient();  // the handler waits meanwhile
      if (half_close) {
        ASSERT_TRUE(client.stream().ShutdownWrite().ok());
        EXPECT_EQ(client.ReadUntilEof(), "");  // closed by the server, unanswered
      }
    }
    ASSERT_TRUE(testing::WaitFor(
        [&] { return server_.server().stats().requests_cancelled == before + 1; }))
        << "the handler was not cancelled";
    ASSERT_TRUE(
        testing::WaitFor([&] { return server_.server().stats().live_connections == 0; }));
  }
  ExpectServesFreshClient();
}

TEST_F(HttpServerTest, PostEchoWithContentLengthAndChunked) {
  Client client(server_.address());
  client.Send("POST /echo HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello echo!");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello echo!");
  client.Send(
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "Wikipedia");
  // A body larger than one read buffer (and under TestOptions()'s 64 KiB limit).
  std::string big(60 * 1000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  client.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Length: ", big.size(),
                           "\r\n\r\n", big));
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->body.size(), big.size());
  EXPECT_TRUE(response->body == big)
      << "echoed body differs from byte "
      << std::mismatch(big.begin(), big.end(), response->body.begin()).first -
             big.begin();
}

TEST_F(HttpServerTest, ExpectContinue) {
  Client client(server_.address());
  client.Send("POST /echo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 100);
  client.Send("abc");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "abc");
}

TEST_F(HttpServerTest, PipelinedRequestsAnsweredInOrder) {
  Client client(server_.address());
  client.Send(
      "GET / HTTP/1.1\r\n\r\n"
      "POST /echo HTTP/1.1\r\nContent-Length: 3\r\n\r\ntwo"
      "GET /three HTTP/1.1\r\n\r\n");
  const int statuses[] = {200, 200, 404};
  const char* bodies[] = {"hello, world\n", "two", "not found\n"};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << i << ": " << response.status();
    EXPECT_EQ(response->status, statuses[i]) << i;
    EXPECT_EQ(response->body, bodies[i]) << i;
  }
}

TEST_F(HttpServerTest, RequestInOneByteWrites) {
  Client client(server_.address());
  client.SendBytewise("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nbytes");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "bytes");
  client.SendBytewise("GET / HTTP/1.1\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "hello, world\n");
}

TEST_F(HttpServerTest, MetricsInPrometheusText) {
  Client client(server_.address());
  client.Send("GET / HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(client.Next().ok());
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->Header("content-type"), "text/plain; version=0.0.4");
  const std::string& body = response->body;
  EXPECT_NE(body.find("# TYPE spindle_fibers_started_total counter\n"), std::string::npos);
  EXPECT_NE(body.find("spindle_fiber_runs_total{group=\"0\"} "), std::string::npos);
  EXPECT_NE(body.find("# TYPE spindle_ready_latency_seconds histogram\n"),
            std::string::npos);
  EXPECT_NE(body.find("spindle_ready_latency_seconds_bucket{group=\"0\",le=\"+Inf\"} "),
            std::string::npos);
  // The reactor's figures are there (whether it saw events depends on whether any read
  // found its socket empty: a fresh-clone CI run saw none).
  EXPECT_NE(body.find("spindle_reactor_events_total{group=\"0\"} "), std::string::npos);
  // The server's own figures, counted before this request was answered.
  EXPECT_NE(body.find("spindle_http_requests_total 1\n"), std::string::npos) << body;
  EXPECT_NE(body.find("spindle_http_connections_open 1\n"), std::string::npos);
  client.Send("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->Header("allow"), "GET, HEAD");
}

TEST_F(HttpServerTest, UnknownPathAndWrongMethodKeepTheConnection) {
  Client client(server_.address());
  client.Send("GET /nowhere HTTP/1.1\r\n\r\nPUT / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 404);
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->Header("allow"), "GET, HEAD");
  client.Send("GET / HTTP/1.1\r\n\r\n");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
}

TEST_F(HttpServerTest, TruncatedRequestLineThenClose) {
  Client client(server_.address());
  client.Send("GET / HT");
  ASSERT_TRUE(client.stream().ShutdownWrite().ok());
  EXPECT_EQ(client.ReadUntilEof(), "");
  ExpectServesFreshClient();
}

TEST_F(HttpServerTest, BadMethod) { ExpectErrorAndClose("FOO / HTTP/1.1\r\n\r\n", 400); }

TEST_F(HttpServerTest, BadRequestLine) {
  ExpectErrorAndClose("GET / HTTP/1.1 junk\r\n\r\n", 400);
}

TEST_F(HttpServerTest, OversizedHeaders) {
  ExpectErrorAndClose(
      absl::StrCat("GET / HTTP/1.1\r\nX-Big: ", std::string(4000, 'a'), "\r\n\r\n"), 431);
}

TEST_F(HttpServerTest, ManySmallHeadersOverTheLimit) {
  std::string request = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 300; ++i) request += "a:b\r\n";
  ExpectErrorAndClose(request + "\r\n", 431);
}

TEST_F(HttpServerTest, OversizedUrl) {
  ExpectErrorAndClose(absl::StrCat("GET /", std::string(2000, 'u'), " HTTP/1.1\r\n\r\n"),
                      431);
}

TEST_F(HttpServerTest, BadChunkedEncoding) {
  ExpectErrorAndClose(
      "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
      400);
}

TEST_F(HttpServerTest, BodyTooLarge) {
  ExpectErrorAndClose("POST /echo HTTP/1.1\r\nContent-Length: 1000000\r\n\r\n", 413);
  ExpectErrorAndClose(
      absl::StrCat("POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                   "10000\r\n", std::string(0x10000, 'c'), "\r\n", "10000\r\n",
                   std::string(0x10000, 'c'), "\r\n0\r\n\r\n"),
      413);
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  Client client(server_.address());
  // The second request must not be answered: the first one closes the connection.
  client.Send("GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n");
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello, world\n");
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_EQ(client.ReadUntilEof(), "");
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  {
    Client client(server_.address());
    client.Send("GET / HTTP/1.0\r\n\r\n");
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->body, "hello, world\n");
    EXPECT_EQ(client.ReadUntilEof(), "");
  }
  Client client(server_.address());
  for (int i = 0; i < 2; ++i) {
    client.Send("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->Header("connection"), "keep-alive");
    EXPECT_EQ(response->body, "hello, world\n");
  }
}

// HEAD is GET without the body on every route (RFC 9110 9.3.2): a keep-alive client
// that reads the next response after a HEAD finds it, not a stray body. The HEAD
// answers come pipelined before a GET whose answer must parse.
TEST_F(HttpServerTest, HeadIsGetWithoutTheBodyOnEveryRoute) {
  Client client(server_.address());
  client.ExpectResponsesTo({true, true, true, true, true, false});
  client.Send(
      "HEAD / HTTP/1.1\r\n\r\n"
      "HEAD /nowhere HTTP/1.1\r\n\r\n"
      "HEAD /echo HTTP/1.1\r\n\r\n"
      "HEAD /metrics HTTP/1.1\r\n\r\n"
      "HEAD /fibers HTTP/1.1\r\n\r\n"
      "GET / HTTP/1.1\r\n\r\n");
  const int statuses[] = {200, 404, 405, 200, 200};
  for (int expected : statuses) {
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, expected);
    EXPECT_EQ(response->body, "");
    EXPECT_TRUE(response->keep_alive);
    // The GET's length, not 0: HEAD says what GET would send.
    EXPECT_NE(response->Header("content-length"), "0");
    EXPECT_NE(response->Header("content-length"), "");
    if (expected == 405) {
      EXPECT_EQ(response->Header("allow"), "POST");
    }
  }
  absl::StatusOr<Response> get = client.Next();
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "hello, world\n");
  // The HEAD of / says the GET's length.
  client.ExpectResponsesTo({true});
  client.Send("HEAD / HTTP/1.1\r\n\r\n");
  absl::StatusOr<Response> head = client.Next();
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->Header("content-length"), "13");
}

// A request the parser rejects before it begins (a bad method) after a HEAD gets its
// 400 with the body: the HEAD's "no body" ended with the HEAD's answer.
TEST_F(HttpServerTest, ABadRequestAfterAHeadIsAnsweredWithItsBody) {
  Client client(server_.address());
  client.ExpectResponsesTo({true, false});
  client.Send("HEAD / HTTP/1.1\r\n\r\nXYZ\x01 / HTTP/1.1\r\n\r\n");
  absl::StatusOr<Response> head = client.Next();
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->status, 200);
  absl::StatusOr<Response> bad = client.Next();
  ASSERT_TRUE(bad.ok()) << bad.status();
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(bad->body, "bad request\n");
}

// An upgrade request ends the connection (what follows it is not HTTP), also when its
// answer is the one that fills the output cap and pauses the parser for a flush.
TEST(HttpServerBackpressureTest, AnUpgradeThatFillsTheOutputCapStillEndsTheConnection) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.max_pending_output_bytes = 1024;
  TestServer server(options);
  // Measure one GET / answer, to put the upgrade's answer across the cap.
  std::size_t answer_bytes = 0;
  {
    Client probe(server.address());
    probe.Send("GET / HTTP/1.1\r\n\r\n");
    absl::StatusOr<Response> response = probe.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    std::size_t headers = 0;
    for (const auto& [name, value] : response->headers) headers += name.size() + value.size() + 4;
    answer_bytes = std::string("HTTP/1.1 200 OK\r\n").size() + headers + 2 + response->body.size();
  }
  const std::size_t before = 1024 / answer_bytes;  // answers below the cap
  std::string requests;
  for (std::size_t i = 0; i < before; ++i) requests += "GET / HTTP/1.1\r\n\r\n";
  requests += "GET / HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: other\r\n\r\n";
  requests += "XYZ NOT HTTP\r\n\r\n";  // a 400 if it were parsed as HTTP
  Client client(server.address());
  client.Send(requests);
  for (std::size_t i = 0; i <= before; ++i) {
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << i << ": " << response.status();
    EXPECT_EQ(response->status, 200) << i;
  }
  EXPECT_EQ(client.ReadUntilEof(), "");  // closed after the upgrade's answer, no 400
}

// A body on a route that takes none is read and dropped, within max_body_bytes: one
// over it (announced, or chunked without a length) is 413 and the connection closes.
TEST_F(HttpServerTest, ABodyOnARouteThatTakesNoneIsBoundedAndDropped) {
  {
    Client client(server_.address());
    client.Send("GET / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n");
    for (int i = 0; i < 2; ++i) {
      absl::StatusOr<Response> response = client.Next();
      ASSERT_TRUE(response.ok()) << response.status();
      EXPECT_EQ(response->status, 200);
      EXPECT_EQ(response->body, "hello, world\n");
    }
  }
  ExpectErrorAndClose(
      absl::StrCat("GET / HTTP/1.1\r\nContent-Length: ", 64 * 1024 + 1, "\r\n\r\n"), 413);
  std::string chunks;
  for (int i = 0; i < 20; ++i) chunks += absl::StrCat("1000\r\n", std::string(4096, 'b'), "\r\n");
  ExpectErrorAndClose(
      absl::StrCat("GET /nowhere HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", chunks,
                   "0\r\n\r\n"),
      413);
}

// /metrics and /fibers reveal code addresses and cost a walk of every fiber: off unless
// the server's options turn them on.
TEST(HttpServerDebugEndpointsTest, OffByDefault) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.debug_endpoints = HttpServerOptions().debug_endpoints;
  ASSERT_FALSE(options.debug_endpoints);
  TestServer server(options);
  Client client(server.address());
  client.Send("GET /fibers HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<Response> response = client.Next();
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->status, 404);
    EXPECT_EQ(response->body.find("spindle_"), std::string::npos) << response->body;
  }
}

// An admin listener (the example's --admin_listen) answers GET /healthz from its own
// pool, and its GET /metrics reports the runtime's pools and the main server's figures;
// the main server, without the health endpoint, answers 404 there.
TEST(HttpServerAdminPoolTest, HealthzAndMetricsFromTheAdminPool) {
  gflags::FlagSaver flags;
  gflags::SetCommandLineOption("fiber_pools", "default:auto,admin:1");
  testing::ScopedRuntime runtime(3);
  HttpServerOptions main_options = TestOptions();
  main_options.debug_endpoints = false;
  TestServer main_server(main_options);
  HttpServerOptions admin_options = TestOptions();
  admin_options.health_endpoint = true;
  admin_options.pool = "admin";
  admin_options.metrics_of = &main_server.server();
  TestServer admin(admin_options);

  Client main_client(main_server.address());
  main_client.Send("GET / HTTP/1.1\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n");
  absl::StatusOr<Response> response = main_client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  response = main_client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 404);

  Client admin_client(admin.address());
  admin_client.Send("GET /healthz HTTP/1.1\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n");
  response = admin_client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "ok\n");
  response = admin_client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  // The main server's requests (2 so far), not the admin's own.
  EXPECT_NE(response->body.find("spindle_http_requests_total 2"), std::string::npos)
      << response->body;
  EXPECT_NE(response->body.find("spindle_pool_live_fibers{pool=\"admin\"}"),
            std::string::npos);
  // The admin connection's handler ran in the admin pool.
  const RuntimeMetrics metrics = GetRuntimeMetrics();
  ASSERT_EQ(metrics.pools.size(), 2u);
  EXPECT_EQ(metrics.pools[1].name, "admin");
  EXPECT_GE(metrics.pools[1].fibers_started, 1u);
}

// Sends `prefix`, then `trickle` one byte at a time, waiting up to `pace` between bytes
// for the server to close the connection (the wait paces the trickle). Returns how many
// trickle bytes went out before the server closed; trickle.size() if it never did.
std::size_t TrickleUntilClosed(Client& client, absl::string_view prefix,
                               absl::string_view trickle, std::chrono::milliseconds pace) {
  client.Send(prefix);
  for (std::size_t i = 0; i < trickle.size(); ++i) {
    if (!client.stream().WriteAll(&trickle[i], 1, Soon()).ok()) return i;
    char byte;
    absl::StatusOr<std::size_t> read =
        client.stream().Read(&byte, 1, io::Clock::now() + pace);
    if (read.ok() || !absl::IsDeadlineExceeded(read.status())) return i + 1;  // closed
  }
  return trickle.size();
}

// A header sent a byte at a time (slowloris) meets the header deadline, set once at the
// request's first byte: each byte used to renew a fresh idle deadline, so 20
// connections at 1 byte/s stayed open indefinitely.
TEST(HttpServerDeadlineTest, SlowHeadersAreClosedAtTheHeaderDeadline) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.idle_timeout = 20s;  // far: not what closes it
  options.header_timeout = 300ms;
  options.max_header_bytes = 65536;
  TestServer server(options);
  Client client(server.address());
  // 400 bytes at one per 50 ms would take 20 s.
  const std::size_t sent = TrickleUntilClosed(
      client, "GET / HTTP/1.1\r\nX-Slow: ", std::string(400, 'a'), 50ms);
  EXPECT_LT(sent, 400u) << "a trickled header kept the connection open";
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return server.server().stats().live_connections == 0; }));
}

// Empty lines before a request line may be skipped (RFC 9112 2.2), but they begin no
// request: a client that sends one now and then is still idle, and the idle deadline
// set when it began waiting closes it.
TEST(HttpServerDeadlineTest, EmptyLinesDoNotRenewTheIdleDeadline) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.idle_timeout = 300ms;
  options.header_timeout = 20s;  // far: not what closes it
  TestServer server(options);
  Client client(server.address());
  client.Send("GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(client.Next().ok());
  std::string empty_lines;
  for (int i = 0; i < 400; ++i) empty_lines += "\r\n";
  // CRLF a byte at a time every 50 ms: 800 bytes would take 40 s.
  const std::size_t sent = TrickleUntilClosed(client, "", empty_lines + empty_lines, 50ms);
  EXPECT_LT(sent, 800u) << "empty lines kept an idle connection open";
}

// A body below min_body_rate meets its deadline; the rate, not the size, decides.
TEST(HttpServerDeadlineTest, ABodyBelowTheMinimumRateIsClosed) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.idle_timeout = 20s;
  options.body_timeout = 300ms;
  options.min_body_rate = 1000;  // a byte per 50 ms is 20 bytes/s
  TestServer server(options);
  Client client(server.address());
  const std::size_t sent = TrickleUntilClosed(
      client, "POST /echo HTTP/1.1\r\nContent-Length: 400\r\n\r\n", std::string(400, 'b'),
      50ms);
  EXPECT_LT(sent, 400u) << "a trickled body kept the connection open";
  // A body at a good rate goes through (64 KiB at once).
  Client fast(server.address());
  const std::string body(64 * 1024, 'c');
  fast.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Length: ", body.size(), "\r\n\r\n",
                         body));
  absl::StatusOr<Response> response = fast.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->body == body);
}

// A client that pipelines requests and never reads: the server stops parsing once
// max_pending_output_bytes of answers wait, and the write deadline closes it. Answers
// used to pile up without a bound (151 pipelined GET /fibers grew the server by 162 MiB).
TEST(HttpServerBackpressureTest, APipelinerThatNeverReadsHoldsBoundedOutputAndIsClosed) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.max_pending_output_bytes = 4096;
  options.write_timeout = 300ms;
  options.idle_timeout = 20s;
  TestServer server(options);
  Client client(server.address());
  std::string requests;
  for (int i = 0; i < 1000; ++i) requests += "GET / HTTP/1.1\r\n\r\n";
  // Sent until the server stops taking them (its answers fill the socket buffers and
  // it stops reading) or closes; never read.
  for (int i = 0; i < 400; ++i) {
    if (!client.stream().WriteAll(requests.data(), requests.size(),
                                  io::Clock::now() + 200ms).ok()) {
      break;
    }
  }
  EXPECT_TRUE(spindle::testing::WaitFor(
      [&] { return server.server().stats().live_connections == 0; }))
      << "the write deadline did not close a connection that does not read";
  const HttpServerStats stats = server.server().stats();
  // The cap plus one answer (a GET / answer is about 100 bytes).
  EXPECT_LE(stats.peak_pending_output_bytes, 4096u + 512u);
  EXPECT_GT(stats.requests, 100u);  // it served until the client stopped reading
}

// An answer or a body that cannot be allocated (operator new fails past 1 MiB here)
// closes its own connection, unanswered; the server and its other connections go on.
// The failure comes inside an http_parser callback: it must not unwind through C.
TEST(HttpServerMemoryTest, AnAllocationFailureClosesOneConnectionNotTheProcess) {
  if (!failing_new::kCanFailAllocations) {
    GTEST_SKIP() << "sanitizer builds keep their own operator new";
  }
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.max_body_bytes = 4 << 20;
  TestServer server(options);
  Client client(server.address());
  const std::string body(3 << 20, 'q');
  const std::string request =
      absl::StrCat("POST /echo HTTP/1.1\r\nContent-Length: ", body.size(), "\r\n\r\n", body);
  failing_new::FailAllocationsAbove(1 << 20);
  Fiber writer([&] {
    (void)client.stream().WriteAll(request.data(), request.size(), Soon());
  });
  EXPECT_EQ(client.ReadUntilEof(), "");  // closed, unanswered
  writer.join();
  failing_new::FailAllocationsAbove(0);
  Client fresh(server.address());
  fresh.Send("GET / HTTP/1.1\r\n\r\n");
  absl::StatusOr<Response> response = fresh.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
}

TEST(HttpServerLargeBodyTest, LargeEchoThenKeepAlive) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.max_body_bytes = 1 << 20;
  TestServer server(options);
  Client client(server.address());
  // Over the 256 KiB a connection keeps after a response: its buffers shrink again.
  std::string big(300 * 1000, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i % 251);
  client.Send(absl::StrCat("POST /echo HTTP/1.1\r\nContent-Length: ", big.size(),
                           "\r\n\r\n", big));
  absl::StatusOr<Response> response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_TRUE(response->body == big) << "echoed body differs";
  client.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\n\r\nsmall");
  response = client.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->body, "small");
}

TEST(HttpServerIdleTest, IdleConnectionIsClosed) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.idle_timeout = 50ms;
  TestServer server(options);
  Client idle(server.address());
  EXPECT_EQ(idle.ReadUntilEof(), "");  // within kTimeout, else the test fails
  Client after_request(server.address());
  after_request.Send("GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(after_request.Next().ok());
  EXPECT_EQ(after_request.ReadUntilEof(), "");
}

TEST(HttpServerDrainTest, ShutdownFinishesRequestsInFlight) {
  testing::ScopedRuntime runtime(2);
  TestServer server(TestOptions());
  Client idle(server.address());
  idle.Send("GET / HTTP/1.1\r\n\r\n");
  ASSERT_TRUE(idle.Next().ok());
  // The 100 Continue proves the server has parsed these headers: the request is in
  // flight when the shutdown starts.
  Client busy(server.address());
  busy.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  absl::StatusOr<Response> response = busy.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->status, 100);

  server.server().Shutdown();
  EXPECT_EQ(idle.ReadUntilEof(), "");
  busy.Send("drain");
  response = busy.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "drain");
  EXPECT_EQ(response->Header("connection"), "close");
  EXPECT_EQ(busy.ReadUntilEof(), "");
  EXPECT_TRUE(server.WaitServed());
  EXPECT_FALSE(io::Stream::Connect(server.address(), Soon()).ok());
  const HttpServerStats stats = server.server().stats();
  EXPECT_EQ(stats.live_connections, 0u);
  EXPECT_EQ(stats.requests, 2u);  // a 100 Continue is not an answer
}

TEST(HttpServerDrainTest, DrainTimeoutClosesStragglers) {
  testing::ScopedRuntime runtime(2);
  HttpServerOptions options = TestOptions();
  options.drain_timeout = 50ms;
  TestServer server(options);
  Client busy(server.address());
  busy.Send("POST /echo HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  absl::StatusOr<Response> response = busy.Next();
  ASSERT_TRUE(response.ok()) << response.status();
  server.server().Shutdown();
  EXPECT_TRUE(server.WaitServed());  // the body never comes; the deadline ends it
  EXPECT_EQ(busy.ReadUntilEof(), "");
}

TEST(HttpServerOptionsTest, ValidationNamesFlagValueAndRange) {
  HttpServerOptions options;
  EXPECT_TRUE(ValidateHttpServerOptions(options).ok());
  options.max_header_bytes = 10;
  EXPECT_EQ(ValidateHttpServerOptions(options).message(),
            "--max_header_bytes=10 is out of range: expected an integer in [256, 65536]");
  options = HttpServerOptions();
  options.idle_timeout = 0ms;
  EXPECT_EQ(ValidateHttpServerOptions(options).message(),
            "--idle_timeout_ms=0 is out of range: expected an integer in [1, 3600000]");
}

}  // namespace
}  // namespace spindle::examples::http
