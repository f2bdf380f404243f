// Copyright 2026 The Spindle Authors.
//
// One connection's loop keeps a single buffer with the bytes not yet echoed in
// [begin, end). Each Read() appends at end; the complete frames from begin are sent
// back with one WriteAll() and begin moves past them. A partial frame stays: when it
// reaches the buffer's end it is moved to the front, and when it fills the whole
// buffer the buffer doubles (up to the frame's size), so memory follows the bytes that
// arrived, not the length a header announces. Once everything read is echoed, a
// buffer that grew goes back to its first size.

#include "examples/echo_rpc/echo_server.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "examples/client_watch.h"
#include "fiber/execution_context.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"

namespace spindle::examples::echo {

namespace {

constexpr std::size_t kInitialBufferBytes = 16 * 1024;
constexpr std::size_t kMaxMinFrameRate = std::size_t{1} << 30;
constexpr std::int64_t kMaxTimeoutMs = 3'600'000;  // every timeout flag's upper bound

io::ServerOptions IoOptions(const EchoServerOptions& options) {
  const absl::Status status = ValidateEchoServerOptions(options);
  CHECK(status.ok()) << "EchoServer: " << status.message();
  io::ServerOptions io_options;
  io_options.max_connections = options.max_connections;
  io_options.drain_timeout = options.drain_timeout;
  return io_options;
}

}  // namespace

absl::Status ValidateEchoServerOptions(const EchoServerOptions& options) {
  if (options.max_payload_bytes > kDefaultMaxPayloadBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_payload_bytes=", options.max_payload_bytes,
        " is out of range: expected an integer in [0, ", kDefaultMaxPayloadBytes, "]"));
  }
  if (options.max_connections < 1 || options.max_connections > io::kMaxServerConnections) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max_connections=", options.max_connections,
        " is out of range: expected an integer in [1, ", io::kMaxServerConnections, "]"));
  }
  const std::pair<const char*, std::chrono::milliseconds> timeouts[] = {
      {"drain_timeout_ms", options.drain_timeout},
      {"idle_timeout_ms", options.idle_timeout},
      {"frame_timeout_ms", options.frame_timeout},
      {"write_timeout_ms", options.write_timeout},
      {"request_timeout_ms", options.request_timeout},
  };
  for (const auto& [flag, timeout] : timeouts) {
    if (timeout.count() < 1 || timeout.count() > kMaxTimeoutMs) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--", flag, "=", timeout.count(), " is out of range: expected an integer in [1, ",
          kMaxTimeoutMs, "]"));
    }
  }
  if (options.reply_delay.count() < 0 || options.reply_delay.count() > kMaxTimeoutMs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--reply_delay_ms=", options.reply_delay.count(),
        " is out of range: expected an integer in [0, ", kMaxTimeoutMs, "]"));
  }
  if (options.min_frame_rate < 1 || options.min_frame_rate > kMaxMinFrameRate) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--min_frame_rate=", options.min_frame_rate,
        " is out of range: expected an integer in [1, ", kMaxMinFrameRate, "]"));
  }
  return absl::OkStatus();
}

EchoServer::EchoServer(const EchoServerOptions& options)
    : options_(options),
      server_(IoOptions(options),
              [this](io::ServerConnection& connection) { ServeConnection(connection); }) {}

EchoServer::~EchoServer() = default;

void EchoServer::Serve(io::Listener& listener) { server_.Serve(listener); }

void EchoServer::Shutdown() { server_.Shutdown(); }

EchoServerStats EchoServer::stats() const {
  const io::ServerStats io_stats = server_.stats();
  EchoServerStats stats;
  stats.connections_accepted = io_stats.accepted;
  stats.live_connections = io_stats.open;
  // relaxed: statistics.
  stats.frames = frames_.load(std::memory_order_relaxed);
  stats.bad_frames = bad_frames_.load(std::memory_order_relaxed);
  stats.requests_cancelled = requests_cancelled_.load(std::memory_order_relaxed);
  stats.requests_timed_out = requests_timed_out_.load(std::memory_order_relaxed);
  stats.buffer_bytes = buffer_bytes_.load(std::memory_order_relaxed);
  stats.peak_buffer_bytes = peak_buffer_bytes_.load(std::memory_order_relaxed);
  return stats;
}

namespace {

// A connection's buffer, counted in the server's buffer gauges.
class CountedBuffer {
 public:
  CountedBuffer(std::atomic<std::uint64_t>& total, std::atomic<std::uint64_t>& peak)
      : total_(total), peak_(peak) {
    Resize(kInitialBufferBytes, 0);
  }
  ~CountedBuffer() { total_.fetch_sub(capacity_, std::memory_order_relaxed); }
  CountedBuffer(const CountedBuffer&) = delete;
  CountedBuffer& operator=(const CountedBuffer&) = delete;

  char* data() { return data_.get(); }
  std::size_t capacity() const { return capacity_; }
  // A buffer of `capacity` bytes holding the first `keep` bytes of this one. Throws
  // std::bad_alloc (this one unchanged).
  void Resize(std::size_t capacity, std::size_t keep) {
    std::unique_ptr<char[]> resized(new char[capacity]);
    if (keep > 0) std::memcpy(resized.get(), data_.get(), keep);
    data_ = std::move(resized);
    // relaxed: statistics.
    total_.fetch_add(capacity, std::memory_order_relaxed);
    total_.fetch_sub(capacity_, std::memory_order_relaxed);
    capacity_ = capacity;
    std::uint64_t peak = peak_.load(std::memory_order_relaxed);
    while (capacity > peak &&
           !peak_.compare_exchange_weak(peak, capacity, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<std::uint64_t>& total_;
  std::atomic<std::uint64_t>& peak_;
  std::unique_ptr<char[]> data_;
  std::size_t capacity_ = 0;
};

}  // namespace

bool EchoServer::AwaitReply(io::Stream& stream, io::Deadline request_start) {
  ExecutionContext::Options request_options;
  request_options.deadline = request_start + options_.request_timeout;
  const std::shared_ptr<ExecutionContext> request = ExecutionContext::Create(request_options);
  bool waited = false;
  const bool client_gone = RunWatchingClient(stream, request, [&] {
    waited = this_fiber::SleepFor(options_.reply_delay);  // the "backend call"
  });
  // relaxed: statistics.
  if (client_gone) {
    requests_cancelled_.fetch_add(1, std::memory_order_relaxed);
    return false;  // nobody to answer
  }
  if (!waited) {
    requests_timed_out_.fetch_add(1, std::memory_order_relaxed);
    return false;  // past the request's deadline: closed (no error frame)
  }
  return true;
}

// A std::bad_alloc (a buffer for a large frame) ends this connection only: io::Server
// catches it around the handler.
void EchoServer::ServeConnection(io::ServerConnection& connection) {
  io::Stream& stream = connection.stream();
  CountedBuffer buffer(buffer_bytes_, peak_buffer_bytes_);
  std::size_t begin = 0;  // first byte not yet echoed
  std::size_t end = 0;    // one past the last byte read
  // Bytes from begin that make the next frame: a header, then the header's frame.
  std::size_t needed = kFrameHeaderBytes;
  // The frame in progress must be complete by then (set at its first byte, extended
  // by the bytes that arrive).
  io::Deadline frame_deadline = io::kNoDeadline;
  // The first byte of the request being read (the frames from begin), for its
  // handler's deadline (reply_delay).
  io::Deadline request_start = io::Clock::now();
  const auto per_byte = std::chrono::nanoseconds(1'000'000'000 / options_.min_frame_rate);
  while (true) {
    if (begin + needed > buffer.capacity()) {  // move the partial frame to the front
      std::memmove(buffer.data(), buffer.data() + begin, end - begin);
      end -= begin;
      begin = 0;
      // Full of the frame: grow with what arrived, never ahead of it.
      if (end == buffer.capacity()) {
        buffer.Resize(std::min(needed, 2 * buffer.capacity()), end);
      }
    }
    // Between frames (nothing of one read): a shutdown may close us now.
    const bool idle = begin == end;
    io::Deadline deadline = frame_deadline;
    if (idle) {
      if (!connection.EnterIdle()) break;
      deadline = io::Clock::now() + options_.idle_timeout;
    }
    absl::StatusOr<std::size_t> read =
        stream.Read(buffer.data() + end, buffer.capacity() - end, deadline);
    // Closed by the peer or by Shutdown(), an error, or a deadline.
    if (!read.ok() || *read == 0) break;
    if (idle) {
      if (!connection.LeaveIdle()) break;  // the drain closed us first
      request_start = io::Clock::now();
      frame_deadline = request_start + options_.frame_timeout;
    }
    frame_deadline += per_byte * *read;
    end += *read;
    std::size_t frames_end = begin;
    std::uint64_t frames = 0;
    while (true) {
      if (end - frames_end < kFrameHeaderBytes) {
        needed = kFrameHeaderBytes;
        break;
      }
      const std::size_t payload = DecodeFrameHeader(buffer.data() + frames_end);
      if (payload > options_.max_payload_bytes) {
        bad_frames_.fetch_add(1, std::memory_order_relaxed);  // a statistic
        LOG_EVERY_N(WARNING, 1000)
            << "echo_server: " << stream.peer().ToString() << " announced a " << payload
            << "-byte payload, over --max_payload_bytes=" << options_.max_payload_bytes
            << "; closing";
        return;
      }
      if (end - frames_end < kFrameHeaderBytes + payload) {
        needed = kFrameHeaderBytes + payload;
        break;
      }
      frames_end += kFrameHeaderBytes + payload;
      ++frames;
    }
    if (frames_end > begin) {
      if (options_.reply_delay.count() > 0 && !AwaitReply(stream, request_start)) break;
      if (!stream.WriteAll(buffer.data() + begin, frames_end - begin,
                           io::Clock::now() + options_.write_timeout)
               .ok()) {
        break;
      }
      frames_.fetch_add(frames, std::memory_order_relaxed);  // a statistic
      begin = frames_end;
      if (begin == end) {
        begin = end = 0;
        // Everything echoed: a buffer a large frame grew goes back to its first size.
        if (buffer.capacity() > kInitialBufferBytes) buffer.Resize(kInitialBufferBytes, 0);
      } else {
        // The next frame began in this read: its deadlines run from now.
        request_start = io::Clock::now();
        frame_deadline = request_start + options_.frame_timeout + per_byte * (end - begin);
      }
    }
  }
}

}  // namespace spindle::examples::echo
