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
#include <mutex>
#include <utility>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "glog/logging.h"

namespace spindle::examples::echo {

namespace {

constexpr std::size_t kInitialBufferBytes = 16 * 1024;
constexpr std::chrono::milliseconds kAcceptRetryDelay{10};

}  // namespace

struct EchoServer::Connection {
  explicit Connection(io::Stream s) : stream(std::move(s)) {}

  io::Stream stream;
  // Intrusive list of live connections; guarded by the server's mu_.
  Connection* prev = nullptr;
  Connection* next = nullptr;
};

EchoServer::EchoServer(const EchoServerOptions& options) : options_(options) {}

EchoServer::~EchoServer() {
  std::lock_guard<Mutex> lock(mu_);
  CHECK_EQ(live_connections_, 0u) << "EchoServer destroyed while connections are live";
  CHECK(listener_ == nullptr) << "EchoServer destroyed while Serve() runs";
}

void EchoServer::Serve(io::Listener& listener) {
  {
    std::lock_guard<Mutex> lock(mu_);
    CHECK(listener_ == nullptr) << "EchoServer::Serve() called twice";
    listener_ = &listener;
    // seq_cst: pairs with Shutdown()'s exchange; one of us closes the listener.
    if (shutting_down_.load(std::memory_order_seq_cst)) listener.Close().IgnoreError();
  }
  while (true) {
    absl::StatusOr<io::Stream> stream = listener.Accept();
    if (!stream.ok()) {
      if (absl::IsFailedPrecondition(stream.status()) ||
          shutting_down_.load(std::memory_order_seq_cst)) {
        break;
      }
      LOG(WARNING) << "echo_server: " << stream.status();
      this_fiber::SleepFor(kAcceptRetryDelay);
      continue;
    }
    connections_accepted_.fetch_add(1, std::memory_order_relaxed);  // a statistic
    auto* connection = new Connection(std::move(*stream));
    Register(connection);
    StartFiberDetached([this, connection] {
      ServeConnection(connection);
      Unregister(connection);
      delete connection;
    });
  }
  Shutdown();  // closes the connections (a no-op if Shutdown() ended the loop)
  {
    std::lock_guard<Mutex> lock(mu_);
    listener_ = nullptr;
    if (live_connections_ == 0) return;
  }
  drained_.Wait();
}

void EchoServer::Shutdown() {
  // seq_cst: see shutting_down_.
  if (shutting_down_.exchange(true, std::memory_order_seq_cst)) return;
  std::lock_guard<Mutex> lock(mu_);
  if (listener_ != nullptr) listener_->Close().IgnoreError();
  for (Connection* c = connections_; c != nullptr; c = c->next) {
    c->stream.Close().IgnoreError();
  }
}

EchoServerStats EchoServer::stats() const {
  EchoServerStats stats;
  // relaxed: statistics.
  stats.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  stats.frames = frames_.load(std::memory_order_relaxed);
  stats.bad_frames = bad_frames_.load(std::memory_order_relaxed);
  std::lock_guard<Mutex> lock(mu_);
  stats.live_connections = live_connections_;
  return stats;
}

void EchoServer::ServeConnection(Connection* connection) {
  io::Stream& stream = connection->stream;
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
    absl::StatusOr<std::size_t> read = stream.Read(buffer.get() + end, capacity - end);
    if (!read.ok() || *read == 0) break;  // closed by the peer or by Shutdown()
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

void EchoServer::Register(Connection* connection) {
  std::lock_guard<Mutex> lock(mu_);
  connection->next = connections_;
  if (connections_ != nullptr) connections_->prev = connection;
  connections_ = connection;
  ++live_connections_;
  // relaxed: under mu_, after Shutdown() (which sets it before taking mu_) has closed
  // what was registered, so a connection it missed sees true here.
  if (shutting_down_.load(std::memory_order_relaxed)) {
    connection->stream.Close().IgnoreError();
  }
}

void EchoServer::Unregister(Connection* connection) {
  std::lock_guard<Mutex> lock(mu_);
  if (connection->prev != nullptr) {
    connection->prev->next = connection->next;
  } else {
    connections_ = connection->next;
  }
  if (connection->next != nullptr) connection->next->prev = connection->prev;
  // relaxed: as in Register(); Serve() checks the count under mu_ after Shutdown().
  if (--live_connections_ == 0 && shutting_down_.load(std::memory_order_relaxed)) {
    drained_.Set();
  }
}

}  // namespace spindle::examples::echo
