// Copyright 2026 The Spindle Authors.

#include "examples/echo_rpc/echo_client.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "examples/echo_rpc/echo_protocol.h"
#include "fiber/fiber.h"
#include "glog/logging.h"
#include "io/stream.h"
#include "sync/semaphore.h"

namespace spindle::examples::echo {

namespace {

// A writer sends at most this many requests per WriteAll().
constexpr std::size_t kMaxBatch = 64;
constexpr std::size_t kReadBufferBytes = 64 * 1024;

std::uint64_t NowNanoseconds() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        io::Clock::now().time_since_epoch())
                                        .count());
}

// The pattern byte at payload offset `i` (>= 16) of request `sequence` on connection
// `connection`.
char PatternByte(std::uint64_t connection, std::uint64_t sequence, std::size_t i) {
  return static_cast<char>(sequence * 31 + connection * 7 + i);
}

absl::Status CheckRange(const char* flag, std::int64_t value, std::int64_t min,
                        std::int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " is out of range: expected an integer in [",
                   min, ", ", max, "]"));
}

// One load connection: its stream, its share of the requests in flight, and what its
// writer and reader fibers count (each field has one writer; they are read after
// both fibers are joined).
struct LoadConnection {
  LoadConnection(std::uint64_t index, std::size_t quota)
      : index(index), quota(quota), permits(static_cast<std::ptrdiff_t>(quota)) {}

  const std::uint64_t index;
  const std::size_t quota;      // its share of the requests in flight
  io::Stream stream;
  CountingSemaphore<> permits;  // free request slots
  std::uint64_t sent = 0;       // writer
  std::uint64_t received = 0;   // reader
  std::uint64_t wrong = 0;      // reader: answers that differ from their request
  LatencyHistogram latency;     // reader
};

void WriteRequests(LoadConnection& c, std::size_t payload, io::Deadline stop,
                   io::Deadline deadline) {
  const std::size_t frame = kFrameHeaderBytes + payload;
  std::string batch;
  // The first window always goes out, however late this writer starts (a loaded
  // machine may run it after `stop`); after it, only until `stop`.
  while (c.sent < c.quota || io::Clock::now() < stop) {
    const bool first_window = c.sent < c.quota;
    if (!(first_window ? c.permits.try_acquire() : c.permits.try_acquire_until(stop))) break;
    std::size_t count = 1;
    while (count < kMaxBatch && c.permits.try_acquire()) ++count;
    batch.resize(count * frame);
    const std::uint64_t now = NowNanoseconds();
    for (std::size_t k = 0; k < count; ++k) {
      char* out = batch.data() + k * frame;
      const std::uint64_t sequence = c.sent + k;
      EncodeFrameHeader(static_cast<std::uint32_t>(payload), out);
      out += kFrameHeaderBytes;
      std::memcpy(out, &sequence, 8);
      std::memcpy(out + 8, &now, 8);
      for (std::size_t i = kMinPayloadBytes; i < payload; ++i) {
        out[i] = PatternByte(c.index, sequence, i);
      }
    }
    c.sent += count;  // counted even if the write fails: then they go unanswered
    if (!c.stream.WriteAll(batch.data(), batch.size(), deadline).ok()) break;
  }
  c.stream.ShutdownWrite().IgnoreError();
}

// Checks one answer (a whole frame at `frame`); records its latency when right.
void CheckAnswer(LoadConnection& c, std::size_t payload, const char* frame,
                 std::uint64_t now) {
  const char* data = frame + kFrameHeaderBytes;
  std::uint64_t sequence = 0;
  std::uint64_t sent_at = 0;
  std::memcpy(&sequence, data, 8);
  std::memcpy(&sent_at, data + 8, 8);
  bool right = sequence == c.received;
  for (std::size_t i = kMinPayloadBytes; right && i < payload; ++i) {
    right = data[i] == PatternByte(c.index, sequence, i);
  }
  ++c.received;
  if (!right) {
    ++c.wrong;
    return;
  }
  c.latency.Record(now > sent_at ? now - sent_at : 0);
}

void ReadAnswers(LoadConnection& c, std::size_t payload, io::Deadline deadline) {
  const std::size_t frame = kFrameHeaderBytes + payload;
  const std::size_t capacity = std::max(kReadBufferBytes, frame);
  std::unique_ptr<char[]> buffer(new char[capacity]);
  std::size_t filled = 0;  // bytes of a partial frame at the front
  while (true) {
    absl::StatusOr<std::size_t> read =
        c.stream.Read(buffer.get() + filled, capacity - filled, deadline);
    if (!read.ok() || *read == 0) return;
    filled += *read;
    const std::uint64_t now = NowNanoseconds();
    std::size_t offset = 0;
    for (; filled - offset >= frame; offset += frame) {
      if (DecodeFrameHeader(buffer.get() + offset) != payload) {
        ++c.wrong;  // the stream is out of step; nothing after this can be trusted
        return;
      }
      CheckAnswer(c, payload, buffer.get() + offset, now);
    }
    c.permits.release(static_cast<std::ptrdiff_t>(offset / frame));
    std::memmove(buffer.get(), buffer.get() + offset, filled - offset);
    filled -= offset;
  }
}

}  // namespace

absl::Status ValidateEchoLoadOptions(const EchoLoadOptions& options) {
  absl::Status status;
  if (options.connect.empty()) {
    status = absl::InvalidArgumentError("--connect is empty: expected HOST:PORT");
  }
  status.Update(CheckRange("connections", static_cast<std::int64_t>(options.connections),
                           1, 100'000));
  status.Update(CheckRange("inflight", static_cast<std::int64_t>(options.inflight),
                           static_cast<std::int64_t>(options.connections), 10'000'000));
  status.Update(CheckRange("duration_ms", options.duration.count(), 1, 86'400'000));
  status.Update(CheckRange("payload", static_cast<std::int64_t>(options.payload),
                           kMinPayloadBytes, kDefaultMaxPayloadBytes));
  status.Update(CheckRange("timeout_ms", options.timeout.count(), 1, 3'600'000));
  return status;
}

EchoLoadResult RunEchoLoad(const EchoLoadOptions& options) {
  const absl::Status valid = ValidateEchoLoadOptions(options);
  CHECK(valid.ok()) << "RunEchoLoad: " << valid.message();
  EchoLoadResult result;

  std::vector<std::unique_ptr<LoadConnection>> connections;
  std::vector<Fiber> fibers;
  const io::Deadline connect_deadline = io::Clock::now() + options.timeout;
  for (std::size_t i = 0; i < options.connections; ++i) {
    const std::size_t quota = options.inflight / options.connections +
                              (i < options.inflight % options.connections ? 1 : 0);
    connections.push_back(std::make_unique<LoadConnection>(i, quota));
    fibers.emplace_back([c = connections.back().get(), &options, connect_deadline] {
      absl::StatusOr<io::Stream> stream =
          io::Stream::Connect(options.connect, connect_deadline);
      if (stream.ok()) c->stream = std::move(*stream);
    });
  }
  for (Fiber& fiber : fibers) fiber.join();
  fibers.clear();

  const io::Clock::time_point start = io::Clock::now();
  const io::Deadline stop = start + options.duration;
  const io::Deadline deadline = stop + options.timeout;
  for (auto& connection : connections) {
    LoadConnection* c = connection.get();
    if (!c->stream.is_open()) {
      ++result.errors;
      continue;
    }
    fibers.emplace_back([c, &options, stop, deadline] {
      WriteRequests(*c, options.payload, stop, deadline);
    });
    fibers.emplace_back(
        [c, &options, deadline] { ReadAnswers(*c, options.payload, deadline); });
  }
  for (Fiber& fiber : fibers) fiber.join();
  result.seconds = std::chrono::duration<double>(io::Clock::now() - start).count();

  for (const auto& c : connections) {
    result.requests += c->received - c->wrong;
    result.errors += c->wrong + (c->sent - c->received);
    result.latency.Merge(c->latency);
  }
  return result;
}

}  // namespace spindle::examples::echo
