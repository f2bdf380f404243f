// Copyright 2026 The Spindle Authors.

#include "examples/grpc_fanout/fanout_common.h"

#include <grpc/grpc.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "gflags/gflags.h"

namespace spindle::fanout {

void FailUsage(const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", gflags::ProgramInvocationShortName(), message.c_str());
  std::exit(2);
}

void CheckFlagRange(const char* name, std::int64_t value, std::int64_t min, std::int64_t max) {
  if (value >= min && value <= max) return;
  FailUsage("--" + std::string(name) + "=" + std::to_string(value) +
            " is out of range: expected an integer in [" + std::to_string(min) + ", " +
            std::to_string(max) + "]");
}

namespace {

bool ParsePort(const std::string& text, int* port) {
  if (text.empty() || text.size() > 5) return false;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  if (value < 1 || value > 65535) return false;
  *port = value;
  return true;
}

}  // namespace

bool ParseBackends(const std::string& spec, std::vector<std::string>* targets, std::string* error) {
  targets->clear();
  if (spec.empty()) {
    *error = "the list is empty; expected host:port[,host:port...]";
    return false;
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = spec.find(',', start);
    const std::string entry =
        spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    std::string host;
    std::string port_text;
    if (!entry.empty() && entry[0] == '[') {
      const std::size_t close = entry.find("]:");
      if (close != std::string::npos) {
        host = entry.substr(1, close - 1);
        port_text = entry.substr(close + 2);
      }
    } else {
      const std::size_t colon = entry.rfind(':');
      if (colon != std::string::npos && entry.find(':') == colon) {
        host = entry.substr(0, colon);
        port_text = entry.substr(colon + 1);
      }
    }
    int port = 0;
    if (host.empty() || !ParsePort(port_text, &port)) {
      *error = "bad entry \"" + entry +
               "\": expected host:port or [ipv6]:port with a port in [1, 65535]";
      return false;
    }
    targets->push_back(entry);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return true;
}

BackendPool::BackendPool(const std::vector<std::string>& targets, int channels_per_backend) {
  int index = 0;
  for (const std::string& target : targets) {
    for (int i = 0; i < channels_per_backend; ++i) {
      grpc::ChannelArguments args;
      // Channels with equal arguments to one target share a subchannel, hence one TCP
      // connection and its stream limit; a distinct argument keeps them apart.
      args.SetInt("spindle.channel_index", index++);
      channels_.push_back(
          grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
      stubs_.push_back(Backend::NewStub(channels_.back()));
    }
  }
}

Backend::Stub* BackendPool::NextStub() {
  const std::uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
  return stubs_[n % stubs_.size()].get();
}

int BackendPool::WaitForConnected(std::chrono::system_clock::time_point deadline) {
  for (const auto& channel : channels_) channel->GetState(/*try_to_connect=*/true);
  int ready = 0;
  for (const auto& channel : channels_) {
    if (channel->WaitForConnected(deadline)) ++ready;
  }
  return ready;
}

std::uint64_t ExpectedSum(std::uint64_t query_id, std::uint32_t fanout) {
  const std::uint64_t k = fanout;
  return k * query_id * kMaxFanout + k * (k + 1) / 2;
}

grpc::Status BuildWorkRequests(const QueryRequest& query, std::uint32_t default_fanout,
                               std::vector<WorkRequest>* work) {
  const std::uint32_t fanout = query.fanout() == 0 ? default_fanout : query.fanout();
  if (fanout < 1 || fanout > kMaxFanout) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "fanout " + std::to_string(fanout) + " is not in [1, " + std::to_string(kMaxFanout) + "]");
  }
  if (query.id() > kMaxQueryId) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        "id " + std::to_string(query.id()) + " is above " + std::to_string(kMaxQueryId));
  }
  work->resize(fanout);
  for (std::uint32_t i = 0; i < fanout; ++i) {
    WorkRequest& request = (*work)[i];
    request.set_id(WorkId(query.id(), i));
    request.set_wait_us(query.backend_wait_us());
    request.set_work_us(query.backend_work_us());
    request.set_payload_bytes(query.payload_bytes());
  }
  return grpc::Status::OK;
}

grpc::Status SumReplies(std::uint64_t query_id, std::uint32_t fanout,
                        const std::function<const WorkReply&(std::uint32_t)>& reply_at,
                        QueryReply* out) {
  std::uint64_t sum = 0;
  for (std::uint32_t i = 0; i < fanout; ++i) {
    const std::uint64_t expected = WorkId(query_id, i) + 1;
    const std::uint64_t value = reply_at(i).value();
    if (value != expected) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "backend call " + std::to_string(i) +
                                                          " of query " + std::to_string(query_id) +
                                                          " answered " + std::to_string(value) +
                                                          ", expected " + std::to_string(expected));
    }
    sum += value;
  }
  out->set_id(query_id);
  out->set_sum(sum);
  out->set_backend_calls(fanout);
  return grpc::Status::OK;
}

std::chrono::system_clock::time_point QueryDeadline(std::chrono::system_clock::time_point incoming,
                                                    std::int64_t deadline_ms) {
  const auto own = std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms);
  return std::min(incoming, own);
}

const char* StatusCodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      break;
  }
  static thread_local char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "CODE_%d", static_cast<int>(code));
  return buffer;
}

// --- LatencyHistogram ------------------------------------------------------------------

int LatencyHistogram::BucketOf(std::uint64_t value) {
  constexpr std::uint64_t kTop = (std::uint64_t{2} << kMaxExponent) - 1;
  if (value > kTop) value = kTop;
  if (value < (std::uint64_t{2} << kSubBits)) return static_cast<int>(value);
  const int exponent = 63 - __builtin_clzll(value);
  const int shift = exponent - kSubBits;
  // (value >> shift) is in [128, 256): the octave's first bucket plus the sub-bucket.
  return (shift << kSubBits) + static_cast<int>(value >> shift);
}

std::uint64_t LatencyHistogram::LowestOf(int bucket) {
  if (bucket < (2 << kSubBits)) return static_cast<std::uint64_t>(bucket);
  const int shift = (bucket >> kSubBits) - 1;
  const std::uint64_t mantissa = (bucket & ((1 << kSubBits) - 1)) + (1 << kSubBits);
  return mantissa << shift;
}

std::uint64_t LatencyHistogram::WidthOf(int bucket) {
  if (bucket < (2 << kSubBits)) return 1;
  return std::uint64_t{1} << ((bucket >> kSubBits) - 1);
}

void LatencyHistogram::Record(std::uint64_t value) {
  ++counts_[BucketOf(value)];
  ++count_;
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

std::uint64_t LatencyHistogram::Quantile(double quantile) const {
  if (count_ == 0) return 0;
  const double wanted = std::ceil(quantile * static_cast<double>(count_));
  const std::uint64_t rank =
      wanted < 1 ? 1 : std::min<std::uint64_t>(count_, static_cast<std::uint64_t>(wanted));
  std::uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) {
      const std::uint64_t middle = LowestOf(i) + WidthOf(i) / 2;
      return std::clamp(middle, min_, max_);
    }
  }
  return max_;
}

// --- Servers -----------------------------------------------------------------------------

void AddListeningPort(grpc::ServerBuilder* builder, int port, int* selected_port) {
  builder->AddListeningPort("0.0.0.0:" + std::to_string(port), grpc::InsecureServerCredentials(),
                            selected_port);
  // gRPC turns SO_REUSEPORT on by default, which would let two servers share a port.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
}

void PrintListening(int port) {
  std::printf("listening on %d\n", port);
  std::fflush(stdout);
}

void QueryCounters::Print() const {
  std::printf("%s: queries_ok=%llu queries_failed=%llu\n", gflags::ProgramInvocationShortName(),
              static_cast<unsigned long long>(ok.load()),
              static_cast<unsigned long long>(failed.load()));
  std::fflush(stdout);
}

}  // namespace spindle::fanout
