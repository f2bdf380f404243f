// Copyright 2026 The Spindle Authors.
//
// What the fan-out example's binaries (backend, the frontends, load) share: flag range
// checks, the --backends list, a pool of backend channels, the query -> K backend calls
// mapping and its checksum, the query deadline, a latency histogram, status-code names.
// (The servers take SIGTERM/SIGINT with Spindle's io::ShutdownSignals and
// grpc_fiber::ServeUntilSignal, which need no running runtime.)
//
// The mapping: backend call i (0 <= i < K) of query q carries WorkRequest.id =
// q.id * 1024 + i and must answer value = id + 1, so the query's sum is
// K * q.id * 1024 + K * (K + 1) / 2.

#ifndef SPINDLE_EXAMPLES_GRPC_FANOUT_FANOUT_COMMON_H_
#define SPINDLE_EXAMPLES_GRPC_FANOUT_FANOUT_COMMON_H_

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"

namespace spindle::fanout {

// Largest K of a query; also the multiplier in WorkRequest.id.
inline constexpr std::uint32_t kMaxFanout = 1024;
// Largest QueryRequest.id whose backend ids and sum (< 1024 * 1024 * 2^43) fit in 64 bits.
inline constexpr std::uint64_t kMaxQueryId = (std::uint64_t{1} << 43) - 1;

// --- Flags -------------------------------------------------------------------------------

// Prints "PROGRAM: MESSAGE" on stderr and exits 2.
[[noreturn]] void FailUsage(const std::string& message);

// Exits 2 with a message naming the flag, its value and the range unless
// min <= value <= max.
void CheckFlagRange(const char* name, std::int64_t value, std::int64_t min, std::int64_t max);

// Splits "host:port,host:port" (IPv6 as "[addr]:port") into gRPC targets. Every entry
// needs a non-empty host and a port in [1, 65535]; an empty list or entry is an error.
// Returns false and sets *error on a bad list.
bool ParseBackends(const std::string& spec, std::vector<std::string>* targets, std::string* error);

// --- Backend channels --------------------------------------------------------------------

// `channels_per_backend` channels to each backend, each with a distinct
// "spindle.channel_index" channel argument so that no two share an HTTP/2 connection, and
// a stub per channel handed out round-robin.
// Thread-safe: NextStub() may be called from any thread (a relaxed atomic counter), and
// gRPC stubs are thread-safe. Destroy it on a thread that is not a gRPC callback thread.
class BackendPool {
 public:
  BackendPool(const std::vector<std::string>& targets, int channels_per_backend);
  BackendPool(const BackendPool&) = delete;
  BackendPool& operator=(const BackendPool&) = delete;

  Backend::Stub* NextStub();
  std::size_t size() const { return stubs_.size(); }

  // Starts every channel connecting and waits until all are READY or `deadline` passes.
  // Returns how many are READY.
  int WaitForConnected(std::chrono::system_clock::time_point deadline);

 private:
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<Backend::Stub>> stubs_;
  std::atomic<std::uint64_t> next_{0};
};

// --- Queries -----------------------------------------------------------------------------

// Backend call `index`'s WorkRequest.id for query `query_id`.
inline std::uint64_t WorkId(std::uint64_t query_id, std::uint32_t index) {
  return query_id * kMaxFanout + index;
}

// The sum a correct QueryReply carries for `fanout` backend calls.
std::uint64_t ExpectedSum(std::uint64_t query_id, std::uint32_t fanout);

// Fills `work` with the K WorkRequests of `query` (K = query.fanout(), or
// `default_fanout` when that is 0). INVALID_ARGUMENT when K > kMaxFanout or the id is
// above kMaxQueryId.
grpc::Status BuildWorkRequests(const QueryRequest& query, std::uint32_t default_fanout,
                               std::vector<WorkRequest>* work);

// Checks that backend reply i (i < fanout, given by `reply_at`) has value WorkId + 1 and
// fills `out` with {id, sum, backend_calls}. INTERNAL on a wrong value.
grpc::Status SumReplies(std::uint64_t query_id, std::uint32_t fanout,
                        const std::function<const WorkReply&(std::uint32_t)>& reply_at,
                        QueryReply* out);

// The deadline every backend call of a query gets: the earlier of the incoming call's
// deadline (time_point::max() when it has none) and now + deadline_ms.
std::chrono::system_clock::time_point QueryDeadline(std::chrono::system_clock::time_point incoming,
                                                    std::int64_t deadline_ms);

// "OK", "CANCELLED", ..., "UNAUTHENTICATED"; "CODE_<n>" for an unknown code.
const char* StatusCodeName(grpc::StatusCode code);

// --- Latency histogram ----------------------------------------------------------------

// A log-linear histogram of non-negative integers (nanoseconds here): values below 256
// are exact; above, each power of two is split into 128 equal buckets, so a reported
// quantile (the middle of its bucket) is within 0.4% of the true value, well inside 1%.
// Values from 2^41 up count in the top bucket. 35 KiB, no allocation after construction.
// Thread-compatible: callers serialize access (the load generator shards and locks).
class LatencyHistogram {
 public:
  void Record(std::uint64_t value);
  void Merge(const LatencyHistogram& other);

  std::uint64_t count() const { return count_; }
  std::uint64_t max() const { return max_; }
  // The value at `quantile` in (0, 1] (0.99 is p99); 0 when empty.
  std::uint64_t Quantile(double quantile) const;

 private:
  static constexpr int kSubBits = 7;  // 128 buckets per power of two
  static constexpr int kMaxExponent = 40;
  static constexpr int kBuckets = (kMaxExponent - kSubBits + 2) << kSubBits;

  static int BucketOf(std::uint64_t value);
  static std::uint64_t LowestOf(int bucket);
  static std::uint64_t WidthOf(int bucket);

  std::array<std::uint64_t, kBuckets> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t min_ = ~std::uint64_t{0};
  std::uint64_t max_ = 0;
};

// --- Servers -----------------------------------------------------------------------------

// Adds a listener on 0.0.0.0:port (0: the kernel picks) with SO_REUSEPORT off, so that a
// port in use is an error. `*selected_port` is valid after BuildAndStart.
void AddListeningPort(grpc::ServerBuilder* builder, int port, int* selected_port);

// Prints "listening on PORT" as a stdout line and flushes it.
void PrintListening(int port);

// Per-server query outcome counters, printed at exit. Thread-safe (relaxed atomics).
struct QueryCounters {
  std::atomic<std::uint64_t> ok{0};
  std::atomic<std::uint64_t> failed{0};

  void Count(const grpc::Status& status) {
    (status.ok() ? ok : failed).fetch_add(1, std::memory_order_relaxed);
  }
  // Prints "PROGRAM: queries_ok=N queries_failed=N" on stdout.
  void Print() const;
};

}  // namespace spindle::fanout

#endif  // SPINDLE_EXAMPLES_GRPC_FANOUT_FANOUT_COMMON_H_
