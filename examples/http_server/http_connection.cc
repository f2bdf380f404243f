// Copyright 2026 The Spindle Authors.
//
// One HTTP connection's loop. The hot path (a keep-alive GET / under a load generator)
// is: one Read() into the connection's buffer, one http_parser_execute() over all of
// it, three memcpy()s per request into out_ (whose capacity is kept), one WriteAll().
// Nothing on that path allocates: url_, body_ and out_ keep their capacity between
// requests, and the date line is rewritten at most once a second.
//
// Why the parser needs no buffer of ours across reads: http_parser is a push parser
// that keeps its own state between calls, and every piece of a request that we need
// later (the URL, the Expect header, the body) is copied out in its callback.

#include "examples/http_server/http_connection.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>
#include <new>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "examples/client_watch.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"

namespace spindle::examples::http {

namespace {

#define SPINDLE_HELLO_HEAD \
  "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 13\r\n"
// The GET / response up to the Date line, for an HTTP/1.1 keep-alive request, an
// HTTP/1.0 keep-alive request, and a request after which the connection closes.
constexpr absl::string_view kHelloHead = SPINDLE_HELLO_HEAD;
constexpr absl::string_view kHelloHeadKeepAlive10 =
    SPINDLE_HELLO_HEAD "Connection: keep-alive\r\n";
constexpr absl::string_view kHelloHeadClose = SPINDLE_HELLO_HEAD "Connection: close\r\n";
#undef SPINDLE_HELLO_HEAD
constexpr absl::string_view kHelloTail = "\r\nhello, world\n";
constexpr absl::string_view kEndOfHeaders = "\r\n";  // kHelloTail's start, for HEAD
constexpr absl::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// GET /fibers shows at most this many fibers (the rest are counted).
constexpr std::size_t kMaxDumpedFibers = 1000;

// "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
constexpr std::size_t kDateLineLength = 37;

// out_ and body_ give their memory back after a response when they grew past this.
constexpr std::size_t kKeptBufferBytes = 256 * 1024;

// LingeringClose() drops at most this much, for at most this long in all, and stops
// when the peer has been silent this long (as nginx's lingering_time/_timeout).
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kLingerTime{2000};
constexpr std::chrono::milliseconds kLingerSilence{250};

char ToLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; }

// Appends the lowercased `data` to `prefix` (capacity `capacity`), counting the full
// length in `length` even past the capacity.
void AppendLowered(const char* data, std::size_t size, char* prefix, std::size_t capacity,
                   std::size_t& length) {
  for (std::size_t i = 0; i < size && length + i < capacity; ++i) {
    prefix[length + i] = ToLower(data[i]);
  }
  length += size;
}

HttpConnection* Self(http_parser* parser) {
  return static_cast<HttpConnection*>(parser->data);
}

}  // namespace

template <int (*F)(http_parser*)>
int HttpConnection::Guarded(http_parser* parser) {
  try {
    return F(parser);
  } catch (const std::bad_alloc&) {
    Self(parser)->out_of_memory_ = true;
    return -1;  // fails the parse
  }
}

template <int (*F)(http_parser*, const char*, std::size_t)>
int HttpConnection::GuardedData(http_parser* parser, const char* at, std::size_t length) {
  try {
    return F(parser, at, length);
  } catch (const std::bad_alloc&) {
    Self(parser)->out_of_memory_ = true;
    return -1;  // fails the parse
  }
}

const http_parser_settings HttpConnection::kSettings = {
    &Guarded<&HttpConnection::OnMessageBegin>,
    &GuardedData<&HttpConnection::OnUrl>,
    nullptr,  // on_status: responses only
    &GuardedData<&HttpConnection::OnHeaderField>,
    &GuardedData<&HttpConnection::OnHeaderValue>,
    &Guarded<&HttpConnection::OnHeadersComplete>,
    &GuardedData<&HttpConnection::OnBody>,
    &Guarded<&HttpConnection::OnMessageComplete>,
    nullptr,  // on_chunk_header
    nullptr,  // on_chunk_complete
};

HttpConnection::HttpConnection(HttpServer* server, io::ServerConnection& connection)
    : server_(server),
      connection_(connection),
      stream_(connection.stream()),
      buffer_(new char[kReadBufferBytes]),
      read_time_(io::Clock::now()) {
  http_parser_init(&parser_, HTTP_REQUEST);
  parser_.data = this;
  out_.reserve(4096);
  url_.reserve(64);
  std::memcpy(date_line_, "Date: Thu, 01 Jan 1970 00:00:00 GMT\r\n", kDateLineLength);
}

void HttpConnection::Serve() {
  const HttpServerOptions& options = server_->options();
  while (true) {
    // Each phase's deadline was set once when the phase began (see HttpServerOptions);
    // a read never renews it.
    io::Deadline deadline;
    if (!in_message_) {
      if (!connection_.EnterIdle()) return;
      // Set once per wait for a request: reads that begin none (the empty lines a
      // server may skip before a request line) do not renew it.
      if (!idle_deadline_set_) {
        // From now: after the answers' flush, which a slow reader may have made long.
        idle_deadline_ = io::Clock::now() + options.idle_timeout;
        idle_deadline_set_ = true;
      }
      deadline = idle_deadline_;
    } else {
      deadline = headers_done_ ? body_deadline_ : header_deadline_;
    }
    absl::StatusOr<std::size_t> read =
        stream_.Read(buffer_.get(), kReadBufferBytes, deadline);
    // An error, a deadline, a close by the drain, or the peer's end of stream (also in
    // the middle of a request: nobody is left to answer).
    if (!read.ok() || *read == 0) return;
    // Failing: the drain closed the connection first (the request arrived after it
    // began).
    if (!in_message_ && !connection_.LeaveIdle()) return;
    read_time_ = io::Clock::now();
    std::size_t offset = 0;
    while (true) {
      std::size_t parsed = 0;
      const ParseEnd end = Parse(offset, *read, &parsed);
      offset += parsed;
      if (!Flush()) return;
      if (end == ParseEnd::kClose) {
        LingeringClose();
        return;
      }
      if (end == ParseEnd::kAll) break;
      // kFlush: the answers so far are sent (backpressure on a client that pipelines
      // without reading); parse the rest of the read. The next flush's deadline runs
      // from now.
      read_time_ = io::Clock::now();
    }
  }
}

bool HttpConnection::Flush() {
  if (out_.empty()) return true;
  server_->NotePendingOutput(out_.size());
  // From the read whose requests these answers are (what it parsed took microseconds,
  // unless an answer was slow to build: then the client has less, never more, time).
  if (!stream_.WriteAll(out_.data(), out_.size(), read_time_ + server_->options().write_timeout)
           .ok()) {
    return false;
  }
  out_.clear();
  // A large echo leaves large buffers behind; an idle keep-alive connection should not
  // hold them.
  if (out_.capacity() > kKeptBufferBytes) ReleaseLargeBuffers();
  return true;
}

void HttpConnection::ReleaseLargeBuffers() {
  out_ = std::string();
  out_.reserve(4096);
  if (body_.capacity() > kKeptBufferBytes) body_ = std::string();
}

HttpConnection::ParseEnd HttpConnection::Parse(std::size_t begin, std::size_t end,
                                                std::size_t* parsed) {
  RefreshDate();
  *parsed = http_parser_execute(&parser_, &kSettings, buffer_.get() + begin, end - begin);
  // From a callback (Guarded()): out of Serve(), to io::Server, which closes us.
  if (out_of_memory_) throw std::bad_alloc();
  const http_errno error = HTTP_PARSER_ERRNO(&parser_);
  if (error == HPE_PAUSED) {
    if (flush_pause_) {  // OnMessageComplete(): out_ is full; go on after a flush
      flush_pause_ = false;
      http_parser_pause(&parser_, 0);
      // After an upgrade (or CONNECT) what follows is not HTTP: the connection ends.
      return parser_.upgrade ? ParseEnd::kClose : ParseEnd::kFlush;
    }
    return ParseEnd::kClose;  // OnMessageComplete(): the last request
  }
  if (error != HPE_OK) {
    AnswerError(error_status_ != 0             ? error_status_
                : error == HPE_HEADER_OVERFLOW ? 431
                                               : 400);
    return ParseEnd::kClose;
  }
  // An upgrade (or CONNECT) request was answered as an ordinary one; what follows it
  // is not HTTP, so the connection ends here.
  return parser_.upgrade ? ParseEnd::kClose : ParseEnd::kAll;
}

int HttpConnection::OnMessageBegin(http_parser* parser) {
  HttpConnection* self = Self(parser);
  self->in_message_ = true;
  self->header_bytes_ = 0;
  self->body_bytes_ = 0;
  self->head_ = false;
  self->headers_done_ = false;
  self->idle_deadline_set_ = false;  // the next wait for a request starts its own
  self->header_deadline_ = self->read_time_ + self->server_->options().header_timeout;
  self->request_start_ = self->read_time_;
  self->url_.clear();
  self->body_.clear();
  self->route_ = Route::kNotFound;
  self->last_was_field_ = false;
  self->field_is_expect_ = false;
  self->expect_continue_ = false;
  return 0;
}

bool HttpConnection::CountHeaderBytes(std::size_t length) {
  header_bytes_ += length;
  if (header_bytes_ <= server_->options().max_header_bytes) return true;
  error_status_ = 431;
  return false;
}

int HttpConnection::OnUrl(http_parser* parser, const char* at, std::size_t length) {
  HttpConnection* self = Self(parser);
  // Known from here: even a 431 for the headers that follow goes without a body.
  self->head_ = parser->method == HTTP_HEAD;
  if (!self->CountHeaderBytes(length)) return 1;
  self->url_.append(at, length);
  return 0;
}

int HttpConnection::OnHeaderField(http_parser* parser, const char* at,
                                  std::size_t length) {
  HttpConnection* self = Self(parser);
  std::size_t counted = length;
  if (!self->last_was_field_) {  // a new header; the previous value (if any) ended
    self->expect_continue_ |= self->field_is_expect_ && self->value_length_ == 12 &&
                              std::memcmp(self->value_, "100-continue", 12) == 0;
    self->last_was_field_ = true;
    self->field_length_ = 0;
    self->value_length_ = 0;
    counted += 4;  // ": " and CRLF count too
  }
  if (!self->CountHeaderBytes(counted)) return 1;
  AppendLowered(at, length, self->field_, sizeof(self->field_), self->field_length_);
  return 0;
}

int HttpConnection::OnHeaderValue(http_parser* parser, const char* at,
                                  std::size_t length) {
  HttpConnection* self = Self(parser);
  if (self->last_was_field_) {
    self->last_was_field_ = false;
    self->field_is_expect_ =
        self->field_length_ == 6 && std::memcmp(self->field_, "expect", 6) == 0;
  }
  if (!self->CountHeaderBytes(length)) return 1;
  if (self->field_is_expect_) {
    AppendLowered(at, length, self->value_, sizeof(self->value_), self->value_length_);
  }
  return 0;
}

int HttpConnection::OnHeadersComplete(http_parser* parser) {
  HttpConnection* self = Self(parser);
  self->expect_continue_ |= !self->last_was_field_ && self->field_is_expect_ &&
                            self->value_length_ == 12 &&
                            std::memcmp(self->value_, "100-continue", 12) == 0;
  self->RouteRequest();
  self->headers_done_ = true;
  self->body_deadline_ = self->read_time_ + self->server_->options().body_timeout;
  // Any route: a body too large to keep (POST /echo) or to read and drop (the others).
  if ((parser->flags & F_CONTENTLENGTH) != 0 &&
      parser->content_length > self->server_->options().max_body_bytes) {
    self->error_status_ = 413;
    return -1;  // any value but 0, 1 and 2 fails the parse
  }
  if (self->expect_continue_) self->out_.append(kContinue.data(), kContinue.size());
  return 0;
}

int HttpConnection::OnBody(http_parser* parser, const char* at, std::size_t length) {
  HttpConnection* self = Self(parser);
  // Bounded on every route (a chunked body announces no length up front).
  self->body_bytes_ += length;
  // A second more for every min_body_rate bytes: a slow upload that keeps the rate
  // goes on; a trickle runs into the deadline.
  self->body_deadline_ += std::chrono::nanoseconds(
      static_cast<std::int64_t>(length * 1'000'000'000 / self->server_->options().min_body_rate));
  if (self->body_bytes_ > self->server_->options().max_body_bytes) {
    self->error_status_ = 413;
    return 1;
  }
  if (self->route_ == Route::kEcho) self->body_.append(at, length);  // others drop it
  return 0;
}

int HttpConnection::OnMessageComplete(http_parser* parser) {
  HttpConnection* self = Self(parser);
  self->in_message_ = false;
  // A hint: a request that misses the drain is answered keep-alive and the connection
  // closes at its next EnterIdle().
  const bool keep_alive =
      http_should_keep_alive(parser) != 0 && !self->connection_.draining();
  self->AnswerRequest(keep_alive);
  self->server_->CountRequest(/*bad=*/false);
  // Answered: what comes next (even a request line the parser rejects before its
  // OnMessageBegin()) is not this HEAD's.
  self->head_ = false;
  if (!keep_alive || self->close_after_answer_) {
    http_parser_pause(parser, 1);  // parse nothing after it
  } else if (self->out_.size() >= self->server_->options().max_pending_output_bytes) {
    // Enough answers wait: send them before parsing more (a client that pipelines and
    // never reads meets the write deadline instead of growing out_).
    self->flush_pause_ = true;
    http_parser_pause(parser, 1);
  }
  return 0;
}

void HttpConnection::RouteRequest() {
  const absl::string_view target = url_;
  const absl::string_view path = target.substr(0, target.find('?'));
  const auto method = static_cast<http_method>(parser_.method);
  // HEAD is GET without the body (RFC 9110 9.3.2), on every route and every answer
  // (head_, set in OnUrl()).
  const bool get = method == HTTP_GET || head_;
  const bool debug = server_->options().debug_endpoints;
  if (path == "/") {
    route_ = get ? Route::kHello : Route::kGetOnlyWrongMethod;
  } else if (path == "/echo") {
    route_ = method == HTTP_POST ? Route::kEcho : Route::kEchoWrongMethod;
  } else if (path == "/wait") {
    route_ = get ? Route::kWait : Route::kGetOnlyWrongMethod;
  } else if (path == "/metrics" && debug) {
    route_ = get ? Route::kMetrics : Route::kGetOnlyWrongMethod;
  } else if (path == "/fibers" && debug) {
    route_ = get ? Route::kFibers : Route::kGetOnlyWrongMethod;
  } else if (path == "/healthz" && server_->options().health_endpoint) {
    route_ = get ? Route::kHealthz : Route::kGetOnlyWrongMethod;
  } else {
    route_ = Route::kNotFound;
  }
}

void HttpConnection::AnswerRequest(bool keep_alive) {
  switch (route_) {
    case Route::kHello: {
      const absl::string_view head = !keep_alive               ? kHelloHeadClose
                                     : parser_.http_minor == 0 ? kHelloHeadKeepAlive10
                                                               : kHelloHead;
      out_.append(head.data(), head.size());
      out_.append(date_line_, kDateLineLength);
      const absl::string_view tail = head_ ? kEndOfHeaders : kHelloTail;
      out_.append(tail.data(), tail.size());
      return;
    }
    case Route::kEcho:
      AppendResponse("HTTP/1.1 200 OK\r\n", "application/octet-stream", body_,
                     keep_alive);
      return;
    case Route::kHealthz:
      // Answered by whichever pool runs this server's connections (--admin_pool): it
      // shows that pool's workers answer, whatever the others are doing.
      AppendResponse("HTTP/1.1 200 OK\r\n", "text/plain", "ok\n", keep_alive);
      return;
    case Route::kMetrics:
      // The runtime's scheduler figures, then this server's own, for a Prometheus
      // scrape.
      AppendResponse("HTTP/1.1 200 OK\r\n", "text/plain; version=0.0.4",
                     FormatPrometheus(GetRuntimeMetrics()) +
                         (server_->options().metrics_of != nullptr
                              ? server_->options().metrics_of->PrometheusText()
                              : server_->PrometheusText()),
                     keep_alive);
      return;
    case Route::kFibers: {
      // Bounded (size, and time under the stack registry's lock) and yielding between
      // fibers, so one request cannot hold a worker or grow the answer without end.
      std::ostringstream dump;
      DumpFibersOptions dump_options;
      dump_options.max_fibers = kMaxDumpedFibers;
      spindle::DumpFibers(dump, dump_options);
      AppendResponse("HTTP/1.1 200 OK\r\n", "text/plain", dump.str(), keep_alive);
      return;
    }
    case Route::kWait:
      AnswerWait(keep_alive);
      return;
    case Route::kNotFound:
      AppendResponse("HTTP/1.1 404 Not Found\r\n", "text/plain", "not found\n",
                     keep_alive);
      return;
    case Route::kGetOnlyWrongMethod:
      AppendResponse("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n",
                     "text/plain", "method not allowed\n", keep_alive);
      return;
    case Route::kEchoWrongMethod:
      AppendResponse("HTTP/1.1 405 Method Not Allowed\r\nAllow: POST\r\n", "text/plain",
                     "method not allowed\n", keep_alive);
      return;
  }
}

// GET /wait?ms=N, a stand-in for a handler that calls a slow backend. The handler runs
// in a fiber of its own, in an execution context with the request's deadline, while
// this fiber watches the socket (RunWatchingClient, examples/client_watch.h): the
// client's end of stream (or the drain closing the connection) cancels the request,
// and nobody is answered.
void HttpConnection::AnswerWait(bool keep_alive) {
  const HttpServerOptions& options = server_->options();
  const absl::string_view target = url_;
  const std::size_t query = target.find("?ms=");
  std::int64_t ms = -1;
  if (query == absl::string_view::npos ||
      !absl::SimpleAtoi(target.substr(query + 4), &ms) || ms < 0 || ms > kMaxTimeoutMs) {
    AppendResponse("HTTP/1.1 400 Bad Request\r\n", "text/plain",
                   absl::StrCat("expected /wait?ms=N with N in [0, ", kMaxTimeoutMs, "]\n"),
                   keep_alive);
    return;
  }
  ExecutionContext::Options request_options;
  request_options.deadline = request_start_ + options.request_timeout;
  const std::shared_ptr<ExecutionContext> request = ExecutionContext::Create(request_options);
  bool slept = false;
  const bool client_gone = RunWatchingClient(stream_, request, [&] {
    slept = this_fiber::SleepFor(std::chrono::milliseconds(ms));  // the "backend call"
  });
  if (client_gone) {
    server_->CountCancelled();
    close_after_answer_ = true;  // nobody to answer: the connection ends
    return;
  }
  if (!slept) {
    server_->CountTimedOut();
    AppendResponse("HTTP/1.1 504 Gateway Timeout\r\n", "text/plain",
                   "request deadline exceeded\n", keep_alive);
    return;
  }
  AppendResponse("HTTP/1.1 200 OK\r\n", "text/plain", absl::StrCat("waited ", ms, " ms\n"),
                 keep_alive);
}

void HttpConnection::AnswerError(int status) {
  in_message_ = false;
  server_->CountRequest(/*bad=*/true);
  switch (status) {
    case 413:
      AppendResponse("HTTP/1.1 413 Payload Too Large\r\n", "text/plain",
                     "payload too large\n", /*keep_alive=*/false);
      return;
    case 431:
      AppendResponse("HTTP/1.1 431 Request Header Fields Too Large\r\n", "text/plain",
                     "request header fields too large\n", /*keep_alive=*/false);
      return;
    default:
      AppendResponse("HTTP/1.1 400 Bad Request\r\n", "text/plain", "bad request\n",
                     /*keep_alive=*/false);
      return;
  }
}

void HttpConnection::AppendResponse(absl::string_view status_line,
                                    absl::string_view content_type,
                                    absl::string_view body, bool keep_alive) {
  char length[24];
  const auto [end, error] = std::to_chars(length, length + sizeof(length), body.size());
  static_cast<void>(error);  // 24 digits hold any size_t
  out_.append(status_line.data(), status_line.size());
  out_.append("Content-Type: ");
  out_.append(content_type.data(), content_type.size());
  out_.append("\r\nContent-Length: ");
  out_.append(length, end);
  out_.append("\r\n");
  AppendConnectionHeader(keep_alive);
  out_.append(date_line_, kDateLineLength);
  out_.append("\r\n");
  if (!head_) out_.append(body.data(), body.size());  // HEAD: the GET's length, no body
}

void HttpConnection::AppendConnectionHeader(bool keep_alive) {
  if (!keep_alive) {
    out_.append("Connection: close\r\n");
  } else if (parser_.http_minor == 0) {
    out_.append("Connection: keep-alive\r\n");
  }
}

void HttpConnection::RefreshDate() {
  const std::time_t now = std::time(nullptr);
  if (now == date_second_) return;
  date_second_ = now;
  std::tm fields;
  gmtime_r(&now, &fields);
  // The C library's "C" locale: English day and month names, as HTTP wants.
  std::strftime(date_line_, sizeof(date_line_), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n",
                &fields);
}

void HttpConnection::LingeringClose() {
  stream_.ShutdownWrite().IgnoreError();
  const io::Deadline end =
      io::Clock::now() +
      std::min<io::Clock::duration>(server_->options().idle_timeout, kLingerTime);
  std::size_t dropped = 0;
  while (dropped < kLingerBytes) {
    absl::StatusOr<std::size_t> read =
        stream_.Read(buffer_.get(), kReadBufferBytes,
                     std::min(end, io::Clock::now() + kLingerSilence));
    if (!read.ok() || *read == 0) break;
    dropped += *read;
  }
}

}  // namespace spindle::examples::http
