// Copyright 2026 The Spindle Authors.
//
// load --target=HOST:PORT [--mode=closed|open] [--outstanding=64] [--rate=1000]
//      [--arrivals=poisson|uniform] [--late_us=1000] [--duration_s=10] [--warmup_s=2]
//      [--fanout=0] [--backend_wait_us=0] [--backend_work_us=0] [--payload_bytes=0]
//      [--deadline_ms=1000] [--channels=8] [--client_threads=2]
//
// The fan-out example's load generator: sends Query calls to a Frontend over --channels
// channels (distinct channel arguments, so distinct HTTP/2 connections) with gRPC's
// callback client API, from --client_threads threads.
//
//   closed: --outstanding queries in flight at all times; each completion sends the next
//           one from its callback.
//   open:   queries sent at --rate per second in total, Poisson arrivals by default
//           (--arrivals=uniform: evenly spaced), split over the client threads, with no cap
//           on queries in flight. A query sent more than --late_us after its scheduled
//           time counts as late; its latency is measured from the scheduled time, so a
//           sender that falls behind shows up in the latency instead of being hidden.
//
// For --warmup_s nothing is counted; then, for --duration_s, every query that completes
// counts: an OK one whose reply checks out (id, backend_calls, sum) records its latency
// in a log-linear histogram (within 1%), a wrong reply counts as BAD_REPLY, any other
// outcome under its status code's name. Then no new query is sent and the program waits
// for those in flight. Output: a human line and a machine line,
//
//   RESULT qps=... p50_us=... p99_us=... p999_us=... ok=N errors=N late=N
//          errors_by_status=NAME:N,NAME:N
//
// (one line; qps counts OK queries per second of --duration_s). Exits 0 if there was at
// least one OK query and no error, 1 otherwise, 2 on a bad flag.

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "examples/grpc_fanout/fanout.grpc.pb.h"
#include "examples/grpc_fanout/fanout_common.h"
#include "gflags/gflags.h"

DEFINE_string(target, "", "The Frontend to load: host:port; required (default \"\")");
DEFINE_int64(channels, 8,
             "Channels (HTTP/2 connections) to the target; queries go round-robin over "
             "them (default 8, range [1, 1024])");
DEFINE_string(mode, "closed",
              "\"closed\": --outstanding queries always in flight; \"open\": --rate queries "
              "per second regardless of completions (default \"closed\")");
DEFINE_int64(outstanding, 64,
             "closed mode: queries in flight at all times (default 64, range [1, 1000000])");
DEFINE_double(rate, 1000,
              "open mode: queries per second over all client threads (default 1000, range "
              "[0.1, 10000000])");
DEFINE_string(arrivals, "poisson",
              "open mode: \"poisson\" (exponential gaps) or \"uniform\" (even gaps) "
              "(default \"poisson\")");
DEFINE_int64(late_us, 1000,
             "open mode: a query sent more than this many microseconds after its scheduled "
             "time counts as late (default 1000, range [1, 60000000])");
DEFINE_int64(duration_s, 10, "Seconds measured, after the warm-up (default 10, range [1, 86400])");
DEFINE_int64(warmup_s, 2,
             "Seconds of load before measuring; nothing in them is counted (default 2, "
             "range [0, 3600])");
DEFINE_int64(fanout, 0,
             "QueryRequest.fanout: backend calls per query; 0 lets the frontend use its "
             "--fanout (default 0, range [0, 1024])");
DEFINE_int64(backend_wait_us, 0,
             "QueryRequest.backend_wait_us: each backend call's timer wait (default 0, "
             "range [0, 60000000])");
DEFINE_int64(backend_work_us, 0,
             "QueryRequest.backend_work_us: each backend call's busy CPU time (default 0, "
             "range [0, 10000000])");
DEFINE_int64(payload_bytes, 0,
             "QueryRequest.payload_bytes: each backend reply's payload size (default 0, "
             "range [0, 1048576])");
DEFINE_int64(deadline_ms, 1000,
             "Client deadline of each query, in ms from sending it (default 1000, range "
             "[1, 3600000])");
DEFINE_int64(client_threads, 2,
             "Threads that send queries: in closed mode they send the first --outstanding, "
             "in open mode each sends its share of --rate (default 2, range [1, 256])");

namespace spindle::fanout {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadOptions {
  std::string target;
  int channels = 8;
  bool open = false;
  std::int64_t outstanding = 64;
  double rate = 1000;
  bool poisson = true;
  std::chrono::microseconds late{1000};
  std::chrono::seconds duration{10};
  std::chrono::seconds warmup{2};
  QueryRequest prototype;  // every field but id
  std::chrono::milliseconds deadline{1000};
  int client_threads = 2;
};

// The counters of a window of time, merged from shards at the end. Thread-compatible.
struct Tally {
  LatencyHistogram latency_ns;
  std::uint64_t ok = 0;
  std::map<std::string, std::uint64_t> errors;

  void Merge(const Tally& other) {
    latency_ns.Merge(other.latency_ns);
    ok += other.ok;
    for (const auto& [name, count] : other.errors) errors[name] += count;
  }
};

// Drives the load and tallies the outcome.
// Thread-safe: Send() runs on the client threads and on gRPC's callback threads (closed
// mode re-sends from the completion callback); each completion locks one of kShards
// tallies, picked by query id; the rest is atomics or fixed before the load starts.
class LoadGenerator {
 public:
  explicit LoadGenerator(const LoadOptions& options) : options_(options) {
    for (int i = 0; i < options.channels; ++i) {
      grpc::ChannelArguments args;
      args.SetInt("spindle.channel_index", i);  // one connection per channel
      channels_.push_back(
          grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), args));
      stubs_.push_back(Frontend::NewStub(channels_.back()));
    }
  }

  // Waits up to `timeout` for every channel to connect; returns how many did.
  int Connect(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::system_clock::now() + timeout;
    for (const auto& channel : channels_) channel->GetState(/*try_to_connect=*/true);
    int ready = 0;
    for (const auto& channel : channels_) ready += channel->WaitForConnected(deadline) ? 1 : 0;
    return ready;
  }

  // Runs warm-up and measurement, then waits for the queries in flight. Returns false if
  // some never completed.
  bool Run() {
    start_ = Clock::now();
    measure_start_ = start_ + options_.warmup;
    measure_end_ = measure_start_ + options_.duration;
    std::vector<std::thread> threads;
    for (int t = 0; t < options_.client_threads; ++t) {
      threads.emplace_back([this, t] { options_.open ? SendOpen(t) : SendClosed(t); });
    }
    for (std::thread& thread : threads) thread.join();
    std::this_thread::sleep_until(measure_end_);
    stopping_.store(true);
    std::unique_lock<std::mutex> lock(idle_mu_);
    return idle_.wait_until(lock, Clock::now() + options_.deadline + std::chrono::seconds(5),
                            [this] { return in_flight_.load() == 0; });
  }

  // Prints the human line and the RESULT line; returns the exit status.
  int Report() const {
    Tally total;
    for (const Shard& shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mu);
      total.Merge(shard.tally);
    }
    std::uint64_t errors = 0;
    std::string by_status;
    for (const auto& [name, count] : total.errors) {
      errors += count;
      if (!by_status.empty()) by_status += ',';
      by_status += name + ":" + std::to_string(count);
    }
    const double seconds = std::chrono::duration<double>(options_.duration).count();
    const double qps = static_cast<double>(total.ok) / seconds;
    const auto us = [&total](double q) {
      return static_cast<unsigned long long>(total.latency_ns.Quantile(q) / 1000);
    };
    const unsigned long long late = late_.load();
    std::printf(
        "load: %s %s fanout=%lld wait_us=%lld work_us=%lld: %.1f queries/s, latency "
        "p50 %llu us, p99 %llu us, p99.9 %llu us, max %llu us; ok %llu, errors %llu%s%s, "
        "late %llu\n",
        options_.open ? "open" : "closed", Describe().c_str(),
        static_cast<long long>(options_.prototype.fanout()),
        static_cast<long long>(options_.prototype.backend_wait_us()),
        static_cast<long long>(options_.prototype.backend_work_us()), qps, us(0.5), us(0.99),
        us(0.999), static_cast<unsigned long long>(total.latency_ns.max() / 1000),
        static_cast<unsigned long long>(total.ok), static_cast<unsigned long long>(errors),
        by_status.empty() ? "" : " ", by_status.c_str(), late);
    std::printf(
        "RESULT qps=%.1f p50_us=%llu p99_us=%llu p999_us=%llu ok=%llu errors=%llu late=%llu "
        "errors_by_status=%s\n",
        qps, us(0.5), us(0.99), us(0.999), static_cast<unsigned long long>(total.ok),
        static_cast<unsigned long long>(errors), late, by_status.c_str());
    std::fflush(stdout);
    return total.ok > 0 && errors == 0 ? 0 : 1;
  }

 private:
  static constexpr int kShards = 16;

  // A query in flight. Owned by its completion callback.
  struct Call {
    grpc::ClientContext context;
    QueryRequest request;
    QueryReply reply;
    Clock::time_point scheduled;
  };

  // Padded so that shards locked by different threads do not share a cache line.
  struct alignas(64) Shard {
    mutable std::mutex mu;
    Tally tally;
  };

  std::string Describe() const {
    char text[96];
    if (options_.open) {
      std::snprintf(text, sizeof(text), "rate=%.1f/s %s", options_.rate,
                    options_.poisson ? "poisson" : "uniform");
    } else {
      std::snprintf(text, sizeof(text), "outstanding=%lld",
                    static_cast<long long>(options_.outstanding));
    }
    return text;
  }

  void SendClosed(int thread) {
    const std::int64_t n = options_.outstanding;
    const std::int64_t first = n * thread / options_.client_threads;
    const std::int64_t last = n * (thread + 1) / options_.client_threads;
    for (std::int64_t i = first; i < last; ++i) Send(Clock::now());
  }

  void SendOpen(int thread) {
    const double per_thread = options_.rate / options_.client_threads;
    std::mt19937_64 random(0x5eed + static_cast<std::uint64_t>(thread));
    std::exponential_distribution<double> exponential(per_thread);
    const auto even_gap = std::chrono::duration<double>(1.0 / per_thread);
    // Uniform arrivals: the threads' schedules are interleaved, not in step.
    auto next = start_ + std::chrono::duration_cast<Clock::duration>(even_gap * thread /
                                                                     options_.client_threads);
    while (next < measure_end_) {
      std::this_thread::sleep_until(next);
      if (Clock::now() - next > options_.late && next >= measure_start_) {
        late_.fetch_add(1, std::memory_order_relaxed);
      }
      Send(next);
      const auto gap =
          options_.poisson ? std::chrono::duration<double>(exponential(random)) : even_gap;
      next += std::chrono::duration_cast<Clock::duration>(gap);
    }
  }

  void Send(Clock::time_point scheduled) {
    in_flight_.fetch_add(1);
    auto* call = new Call;
    const std::uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
    call->request = options_.prototype;
    call->request.set_id(id);
    call->scheduled = scheduled;
    call->context.set_deadline(std::chrono::system_clock::now() + options_.deadline);
    stubs_[id % stubs_.size()]->async()->Query(
        &call->context, &call->request, &call->reply,
        [this, call](grpc::Status status) { OnComplete(call, status); });
  }

  void OnComplete(Call* call, const grpc::Status& status) {
    const Clock::time_point now = Clock::now();
    if (now >= measure_start_ && now < measure_end_) {
      Shard& shard = shards_[call->request.id() % kShards];
      std::lock_guard<std::mutex> lock(shard.mu);
      if (!status.ok()) {
        ++shard.tally.errors[StatusCodeName(status.error_code())];
      } else if (!ReplyChecksOut(call->request, call->reply)) {
        ++shard.tally.errors["BAD_REPLY"];
      } else {
        ++shard.tally.ok;
        shard.tally.latency_ns.Record(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - call->scheduled).count()));
      }
    }
    delete call;
    // The next query is counted in flight before this one leaves, so the count reaches
    // 0 only once sending has stopped.
    if (!options_.open && !stopping_.load()) Send(Clock::now());
    if (in_flight_.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(idle_mu_);
      idle_.notify_all();
    }
  }

  static bool ReplyChecksOut(const QueryRequest& request, const QueryReply& reply) {
    const std::uint32_t k = reply.backend_calls();
    if (reply.id() != request.id() || k < 1 || k > kMaxFanout) return false;
    if (request.fanout() != 0 && k != request.fanout()) return false;
    return reply.sum() == ExpectedSum(request.id(), k);
  }

  const LoadOptions options_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<Frontend::Stub>> stubs_;
  Clock::time_point start_;
  Clock::time_point measure_start_;
  Clock::time_point measure_end_;
  std::atomic<std::uint64_t> next_id_{1};
  std::atomic<std::int64_t> in_flight_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> late_{0};
  std::array<Shard, kShards> shards_;
  std::mutex idle_mu_;
  std::condition_variable idle_;
};

LoadOptions OptionsFromFlags() {
  LoadOptions options;
  if (FLAGS_target.empty()) FailUsage("--target is required: host:port of a Frontend");
  std::vector<std::string> targets;
  std::string error;
  if (!ParseBackends(FLAGS_target, &targets, &error) || targets.size() != 1) {
    FailUsage("--target=\"" + FLAGS_target + "\": expected one host:port");
  }
  options.target = targets[0];
  CheckFlagRange("channels", FLAGS_channels, 1, 1024);
  options.channels = static_cast<int>(FLAGS_channels);
  if (FLAGS_mode != "closed" && FLAGS_mode != "open") {
    FailUsage("--mode=" + FLAGS_mode + " is not one of: closed, open");
  }
  options.open = FLAGS_mode == "open";
  CheckFlagRange("outstanding", FLAGS_outstanding, 1, 1'000'000);
  options.outstanding = FLAGS_outstanding;
  if (!(FLAGS_rate >= 0.1 && FLAGS_rate <= 10'000'000)) {
    char value[32];
    std::snprintf(value, sizeof(value), "%g", FLAGS_rate);
    FailUsage("--rate=" + std::string(value) +
              " is out of range: expected a number in [0.1, 10000000]");
  }
  options.rate = FLAGS_rate;
  if (FLAGS_arrivals != "poisson" && FLAGS_arrivals != "uniform") {
    FailUsage("--arrivals=" + FLAGS_arrivals + " is not one of: poisson, uniform");
  }
  options.poisson = FLAGS_arrivals == "poisson";
  CheckFlagRange("late_us", FLAGS_late_us, 1, 60'000'000);
  options.late = std::chrono::microseconds(FLAGS_late_us);
  CheckFlagRange("duration_s", FLAGS_duration_s, 1, 86'400);
  options.duration = std::chrono::seconds(FLAGS_duration_s);
  CheckFlagRange("warmup_s", FLAGS_warmup_s, 0, 3'600);
  options.warmup = std::chrono::seconds(FLAGS_warmup_s);
  CheckFlagRange("fanout", FLAGS_fanout, 0, kMaxFanout);
  CheckFlagRange("backend_wait_us", FLAGS_backend_wait_us, 0, 60'000'000);
  CheckFlagRange("backend_work_us", FLAGS_backend_work_us, 0, 10'000'000);
  CheckFlagRange("payload_bytes", FLAGS_payload_bytes, 0, 1 << 20);
  options.prototype.set_fanout(static_cast<std::uint32_t>(FLAGS_fanout));
  options.prototype.set_backend_wait_us(static_cast<std::uint32_t>(FLAGS_backend_wait_us));
  options.prototype.set_backend_work_us(static_cast<std::uint32_t>(FLAGS_backend_work_us));
  options.prototype.set_payload_bytes(static_cast<std::uint32_t>(FLAGS_payload_bytes));
  CheckFlagRange("deadline_ms", FLAGS_deadline_ms, 1, 3'600'000);
  options.deadline = std::chrono::milliseconds(FLAGS_deadline_ms);
  CheckFlagRange("client_threads", FLAGS_client_threads, 1, 256);
  options.client_threads = static_cast<int>(FLAGS_client_threads);
  return options;
}

int Main() {
  const LoadOptions options = OptionsFromFlags();
  auto load = std::make_unique<LoadGenerator>(options);
  const int ready = load->Connect(std::chrono::seconds(10));
  if (ready < options.channels) {
    std::fprintf(stderr, "load: only %d of %d channels to %s connected in 10 s\n", ready,
                 options.channels, options.target.c_str());
    return 1;
  }
  const bool drained = load->Run();
  const int status = load->Report();
  if (!drained) {
    // Some query never completed; tearing the channels down under it could hang.
    std::fprintf(stderr, "load: queries still in flight 5 s past their deadline; exiting\n");
    std::fflush(stderr);
    std::_Exit(1);
  }
  load.reset();
  return status;
}

}  // namespace
}  // namespace spindle::fanout

int main(int argc, char** argv) {
  gflags::SetUsageMessage("load generator for the fan-out example's Frontend servers");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return spindle::fanout::Main();
}
