// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_CONNECTION_H_
#define SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_CONNECTION_H_

#include <http_parser.h>

#include <atomic>
#include <cstddef>
#include <ctime>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "examples/http_server/http_server.h"
#include "io/server.h"
#include "io/stream.h"

namespace spindle::examples::http {

// One accepted connection and the fiber loop that serves it: read into one reused
// 16 KiB buffer, feed everything read to http_parser (so pipelined requests are all
// parsed), append each response to one reused output buffer, and send all responses
// of one read with a single WriteAll(). The GET / response is precomputed: answering
// it copies three constant pieces and allocates nothing.
//
// It tells the io::Server when it waits for a new request (EnterIdle) and when one
// begins (LeaveIdle), so a shutdown closes it at once only between requests.
//
// Thread-safety: one fiber, the io::Server's handler for the connection; it lives on
// that fiber's stack.
class HttpConnection {
 public:
  static constexpr std::size_t kReadBufferBytes = 16 * 1024;

  HttpConnection(HttpServer* server, io::ServerConnection& connection);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Serves requests until the peer closes, an error, a deadline, a request that ends
  // the connection, or the server's shutdown. Parks the calling fiber. Throws
  // std::bad_alloc when an answer or a buffer cannot be allocated (io::Server then
  // closes this connection only).
  void Serve();

 private:
  enum class Route {
    kHello,
    kEcho,
    kMetrics,
    kFibers,
    kHealthz,
    kWait,
    kNotFound,
    kEchoWrongMethod,    // 405 "Allow: POST"
    kGetOnlyWrongMethod,  // /, /wait, /metrics, /fibers, /healthz: 405 "Allow: GET, HEAD"
  };

  // The parser's callbacks (http_parser_settings); `parser->data` is the connection.
  static int OnMessageBegin(http_parser* parser);
  static int OnUrl(http_parser* parser, const char* at, std::size_t length);
  static int OnHeaderField(http_parser* parser, const char* at, std::size_t length);
  static int OnHeaderValue(http_parser* parser, const char* at, std::size_t length);
  static int OnHeadersComplete(http_parser* parser);
  static int OnBody(http_parser* parser, const char* at, std::size_t length);
  static int OnMessageComplete(http_parser* parser);
  static const http_parser_settings kSettings;
  // kSettings' entries: the callback `F`, with an allocation failure inside it turned
  // into a failed parse (out_of_memory_) instead of an exception through http_parser's
  // C frames; Parse() rethrows it (io::Server closes the connection).
  template <int (*F)(http_parser*)>
  static int Guarded(http_parser* parser);
  template <int (*F)(http_parser*, const char*, std::size_t)>
  static int GuardedData(http_parser* parser, const char* at, std::size_t length);

  // How a Parse() ended: everything given was parsed; or it stopped after an answer
  // that took out_ past max_pending_output_bytes (flush, then parse the rest); or the
  // connection must close once out_ is sent.
  enum class ParseEnd { kAll, kFlush, kClose };
  // Parses buffer_[begin, end), appending answers to out_; `*parsed`: bytes consumed.
  ParseEnd Parse(std::size_t begin, std::size_t end, std::size_t* parsed);
  // Sends out_ within write_timeout; false on an error or the deadline.
  bool Flush();
  bool CountHeaderBytes(std::size_t length);
  void RouteRequest();
  void AnswerRequest(bool keep_alive);
  void AnswerWait(bool keep_alive);
  void AnswerError(int status);
  void AppendResponse(absl::string_view status_line, absl::string_view content_type,
                      absl::string_view body, bool keep_alive);
  void AppendConnectionHeader(bool keep_alive);
  void RefreshDate();
  void ReleaseLargeBuffers();
  // Sends end of stream, then reads and drops what the peer still sends (up to a
  // limit and a deadline) so that its unread request bytes do not turn our close into
  // a reset that destroys the response in flight.
  void LingeringClose();

  HttpServer* const server_;
  io::ServerConnection& connection_;
  io::Stream& stream_;  // connection_'s

  http_parser parser_;
  std::unique_ptr<char[]> buffer_;  // kReadBufferBytes
  std::string out_;                 // responses of one read; capacity reused
  std::string url_;                 // the request target; capacity reused
  std::string body_;                // POST /echo body; capacity reused
  Route route_ = Route::kNotFound;
  int error_status_ = 0;  // set by a callback that fails the parse (413, 431)
  std::size_t header_bytes_ = 0;
  std::size_t body_bytes_ = 0;  // of the current request, kept or dropped
  bool head_ = false;           // the current request is a HEAD: answers carry no body
  // The current request's phase deadlines (HttpServerOptions): set when its first
  // byte is parsed and when its headers end; the body's grows with what arrives.
  bool headers_done_ = false;
  bool idle_deadline_set_ = false;
  io::Deadline idle_deadline_ = io::kNoDeadline;
  io::Deadline header_deadline_ = io::kNoDeadline;
  io::Deadline body_deadline_ = io::kNoDeadline;
  io::Deadline read_time_;  // when the last read returned: "now" for the callbacks
  io::Deadline request_start_;  // when the current request's first byte was read
  // The request's handler was cancelled (its client went away): answer nothing more.
  bool close_after_answer_ = false;
  bool flush_pause_ = false;  // OnMessageComplete() paused the parser to flush
  bool out_of_memory_ = false;  // a callback's allocation failed (see Guarded())
  bool in_message_ = false;
  bool last_was_field_ = false;
  // "Expect: 100-continue" detection over the current header: lowercased name/value
  // prefixes (a header name longer than the buffer cannot be "expect").
  char field_[8] = {};
  std::size_t field_length_ = 0;
  char value_[16] = {};
  std::size_t value_length_ = 0;
  bool field_is_expect_ = false;
  bool expect_continue_ = false;

  // "Date: <IMF-fixdate>\r\n", refreshed once a second by the reads that need it.
  std::time_t date_second_ = 0;
  char date_line_[40] = {};
};

}  // namespace spindle::examples::http

#endif  // SPINDLE_EXAMPLES_HTTP_SERVER_HTTP_CONNECTION_H_
