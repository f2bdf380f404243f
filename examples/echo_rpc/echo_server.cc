// Copyright 2026 The Spindle Authors.
//
// One connection's loop keeps a single buffer with the bytes not yet echoed in
// [begin, end). Each Read() appends at end; the complete frames from begin are sent
// back with one WriteAll() and begin moves past them. A partial frame stays: when it
// reaches the buffer's end it is moved to the front, and when it is larger than the
// whole buffer the buffer grows to hold it (and keeps that size).

#include "examples/echo_rpc/echo_server.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "glog/logging.h"

namespace spindle::examples::echo {

namespace {

constexpr std::size_t kInitialBufferBytes = 16 * 1024;

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
  if (options.drain_timeout.count() < 1 ||
      options.drain_timeout.count() > io::kMaxDrainTimeoutMs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--drain_timeout_ms=", options.drain_timeout.count(),
        " is out of range: expected an integer in [1, ", io::kMaxDrainTimeoutMs, "]"));
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
  return stats;
}

void EchoServer::ServeConnection(io::ServerConnection& connection) {
  io::Stream& stream = connection.stream();
  std::size_t capacity = kInitialBufferBytes;
  std::unique_ptr<char[]> buffer(new char[capacity]);
  std::size_t begin = 0;  // first byte not yet echoed
  std::size_t end = 0;    // one past the last byte read
  // Bytes from begin that make the next frame: a header, then the header's frame.
  std::size_t needed = kFrameHeaderBytes;
  while (true) {
    if (begin + needed > capacity) {  // move the partial frame to the front
      std::memmove(buffer.get(), buffer.get() + begin, end - begin);
      end -= begin;
      begin = 0;
      if (needed > capacity) {  // grow to hold the whole frame
        std::unique_ptr<char[]> larger(new char[needed]);
        std::memcpy(larger.get(), buffer.get(), end);
        buffer = std::move(larger);
        capacity = needed;
      }
    }
    // Between frames (nothing of one read): a shutdown may close us now.
    const bool idle = begin == end;
    if (idle && !connection.EnterIdle()) break;
    absl::StatusOr<std::size_t> read = stream.Read(buffer.get() + end, capacity - end);
    if (!read.ok() || *read == 0) break;  // closed by the peer or by Shutdown()
    if (idle && !connection.LeaveIdle()) break;  // the drain closed us first
    end += *read;
    std::size_t frames_end = begin;
    std::uint64_t frames = 0;
    while (true) {
      if (end - frames_end < kFrameHeaderBytes) {
        needed = kFrameHeaderBytes;
        break;
      }
      const std::size_t payload = DecodeFrameHeader(buffer.get() + frames_end);
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
      if (!stream.WriteAll(buffer.get() + begin, frames_end - begin).ok()) break;
      frames_.fetch_add(frames, std::memory_order_relaxed);  // a statistic
      begin = frames_end;
      if (begin == end) begin = end = 0;
    }
  }
}

}  // namespace spindle::examples::echo
