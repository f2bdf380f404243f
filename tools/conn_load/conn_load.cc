// Copyright 2026 The Spindle Authors.
//
// conn_load: holds many keep-alive HTTP connections to a server and measures what they
// cost it. Opens --connections connections (source addresses spread over 127.0.0.0/8
// when the target is a loopback address, so that ephemeral ports do not run out past
// ~28k and the kernel's port search stays short: SourceFor), each sends one request
// and reads its answer; then, with every connection open, watches the server idle,
// keeps --busy_fraction of them busy (closed loop, one request in flight each, as wrk
// does) and closes them all, or sends the server SIGTERM with them open. It reports,
// one `key value` line each:
//
//   opened, open_s, open_rate (connections answered per second while opening),
//   rss_per_connection_kib (the server's VmRSS growth over the opened connections),
//   idle_cpu_s_per_s (the server's user + system CPU per second while all idle),
//   busy_connections, busy_requests, busy_rps, busy_p50_us, busy_p99_us, busy_max_us,
//   fds_before, fds_open, fds_after (the server's descriptors: before, all open, after
//   the close), sockets_before, sockets_open, sockets_after (the same for its sockets
//   only: after == before means every connection's descriptor came back; the close
//   waits for that, up to --deadline_secs), sockets_back_s,
//   and with --sigterm: sigterm_closed (connections the server closed after SIGTERM),
//   sigterm_drain_s (SIGTERM to the last close), server_exited (0 or 1).
//
// A plain program (no Spindle): one thread, non-blocking sockets, epoll. It raises its
// own descriptor limit (root may raise the hard limit too). The server is named by
// --server_pid for /proc (its RSS, CPU and descriptors); tools/conn_load.sh starts the
// HTTP example and runs this against it.
//
// Errors (a refused or reset connection, an answer that is not HTTP, a deadline) stop
// the run with a message naming the connection and the phase, exit status 1; bad flags
// exit 2 naming the flag, its value and the accepted range.

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "gflags/gflags.h"

DEFINE_string(target, "127.0.0.1:8080", "The server, IPv4ADDRESS:PORT.");
DEFINE_uint64(connections, 10000, "Connections to open and hold. Range [1, 1000000].");
DEFINE_double(busy_fraction, 0.01,
              "Fraction of the connections kept busy during the busy window. Range [0, 1].");
DEFINE_double(idle_secs, 5, "Seconds the idle window lasts. Range [0.1, 3600].");
DEFINE_double(busy_secs, 5, "Seconds the busy window lasts. Range [0.1, 3600].");
DEFINE_uint64(max_pending, 512,
              "Connections being opened (connect, first request) at once. Range [1, 65536].");
DEFINE_int64(server_pid, 0, "The server's process id, read in /proc (required).");
DEFINE_bool(sigterm, false,
            "End by sending the server SIGTERM with every connection open (instead of "
            "closing them) and report its drain.");
DEFINE_string(path, "/", "The path each request asks for.");
DEFINE_double(deadline_secs, 120,
              "Seconds any phase may take before the run fails. Range [1, 3600].");

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "conn_load: %s\n", message.c_str());
  std::exit(1);
}

[[noreturn]] void BadFlag(const std::string& message) {
  std::fprintf(stderr, "conn_load: %s\n", message.c_str());
  std::exit(2);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// ---- The server, through /proc.

std::int64_t ServerRssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoll(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

// User + system CPU seconds.
double ServerCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  double ticks = 0;
  // Fields after the name start at 3 (state); utime and stime are 14 and 15.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The server's descriptors: all of them, or only its sockets (a log file the server
// opens meanwhile is not a connection's).
long ServerFds(pid_t pid, bool sockets_only = false) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd";
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return -1;
  long count = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    if (sockets_only) {
      char target[64] = {};
      const std::string link = path + "/" + entry->d_name;
      if (readlink(link.c_str(), target, sizeof(target) - 1) <= 0 ||
          std::strncmp(target, "socket:", 7) != 0) {
        continue;
      }
    }
    ++count;
  }
  closedir(dir);
  return count;
}

bool ServerAlive(pid_t pid) {
  // A zombie (exited, not yet reaped by its parent) counts as gone.
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// ---- Connections.

struct Connection {
  int fd = -1;
  bool busy = false;           // in the busy set
  bool in_flight = false;      // a request sent, its answer not complete
  bool closed_by_server = false;
  bool unsent = false;         // the request waits for the socket to become writable
  std::string input;           // the answer read so far
  Clock::time_point sent;
};

// The length of the complete HTTP answer at the start of `input`, or 0 if incomplete.
// Fails (the run stops) on something that is not an HTTP/1.1 answer with a length.
std::size_t CompleteAnswer(const std::string& input, std::size_t index) {
  const std::size_t end = input.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (input.size() > 65536) Fail("connection " + std::to_string(index) + ": header over 64 KiB");
    return 0;
  }
  if (input.rfind("HTTP/1.", 0) != 0) {
    Fail("connection " + std::to_string(index) + ": not an HTTP answer: " + input.substr(0, 40));
  }
  std::size_t length = 0;
  bool found = false;
  for (std::size_t at = input.find("\r\n"); at < end; at = input.find("\r\n", at + 2)) {
    static constexpr char kName[] = "content-length:";
    if (at + 2 + sizeof(kName) - 1 > end) break;
    if (strncasecmp(input.c_str() + at + 2, kName, sizeof(kName) - 1) == 0) {
      length = std::strtoull(input.c_str() + at + 2 + sizeof(kName) - 1, nullptr, 10);
      found = true;
      break;
    }
  }
  if (!found) Fail("connection " + std::to_string(index) + ": an answer without Content-Length");
  return input.size() >= end + 4 + length ? end + 4 + length : 0;
}

class Load {
 public:
  Load(sockaddr_in target, pid_t server) : target_(target), server_(server) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) Fail(std::string("epoll_create1: ") + std::strerror(errno));
    request_ = "GET " + FLAGS_path + " HTTP/1.1\r\nHost: conn_load\r\n\r\n";
  }

  void Run() {
    const long fds_before = ServerFds(server_);
    const long sockets_before = ServerFds(server_, true);
    const std::int64_t rss_before = ServerRssKib(server_);
    Open();
    const long fds_open = ServerFds(server_);
    const long sockets_open = ServerFds(server_, true);
    const std::int64_t rss_open = ServerRssKib(server_);
    Print("opened", static_cast<double>(conns_.size()));
    Print("open_s", open_s_);
    Print("open_rate", static_cast<double>(conns_.size()) / open_s_);
    Print("rss_per_connection_kib",
          static_cast<double>(rss_open - rss_before) / static_cast<double>(conns_.size()));
    Idle();
    Busy();
    Print("fds_before", static_cast<double>(fds_before));
    Print("fds_open", static_cast<double>(fds_open));
    Print("sockets_before", static_cast<double>(sockets_before));
    Print("sockets_open", static_cast<double>(sockets_open));
    if (FLAGS_sigterm) {
      Sigterm();
    } else {
      CloseAll(sockets_before);
    }
  }

 private:
  static void Print(const char* key, double value) {
    std::printf("%s %.6g\n", key, value);
    std::fflush(stdout);
  }

  // The source address of connection `i`: 127.0.0.2 upwards, one per 1,000
  // connections, for loopback targets. Ephemeral ports are ~28k per source address, and
  // the kernel's search for a free one (__inet_hash_connect) grows with the connections
  // a source already has to the target: at 20,000 per source it was most of the
  // opening's time (5k connections a second), at 1,000 it is not.
  in_addr_t SourceFor(std::size_t i) const {
    const std::uint32_t k = static_cast<std::uint32_t>(i / 1000);
    return htonl((127u << 24) | (k + 2));
  }

  void StartConnect(std::size_t i) {
    Connection& c = conns_[i];
    c.fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c.fd < 0) {
      Fail("socket() for connection " + std::to_string(i) + ": " + std::strerror(errno));
    }
    if ((ntohl(target_.sin_addr.s_addr) >> 24) == 127) {
      const int one = 1;
      setsockopt(c.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
      sockaddr_in source{};
      source.sin_family = AF_INET;
      source.sin_addr.s_addr = SourceFor(i);
      if (bind(c.fd, reinterpret_cast<sockaddr*>(&source), sizeof(source)) != 0) {
        Fail("bind() of connection " + std::to_string(i) + ": " + std::strerror(errno));
      }
    }
    const int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(c.fd, reinterpret_cast<const sockaddr*>(&target_), sizeof(target_)) != 0 &&
        errno != EINPROGRESS) {
      Fail("connect() of connection " + std::to_string(i) + ": " + std::strerror(errno));
    }
    epoll_event event{};
    event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    event.data.u64 = i;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &event) != 0) {
      Fail(std::string("epoll_ctl: ") + std::strerror(errno));
    }
    c.in_flight = true;
    c.sent = Clock::now();
    Send(i);  // queued by the kernel once connected; EAGAIN retried on EPOLLOUT
  }

  void Send(std::size_t i) {
    Connection& c = conns_[i];
    const ssize_t n = send(c.fd, request_.data(), request_.size(), MSG_NOSIGNAL);
    if (n == static_cast<ssize_t>(request_.size())) return;
    if (n < 0 && (errno == EAGAIN || errno == ENOTCONN || errno == EINPROGRESS)) {
      c.unsent = true;  // sent again on its EPOLLOUT (edge-triggered: once writable)
      return;
    }
    Fail("send() on connection " + std::to_string(i) + ": " +
         (n < 0 ? std::strerror(errno) : "a short write"));
  }

  // Reads what is there; returns how many complete answers ended (0 or 1: one request
  // in flight at a time). Marks a connection the server closed.
  int Receive(std::size_t i, const char* phase) {
    Connection& c = conns_[i];
    char buffer[16384];
    int answers = 0;
    for (;;) {
      const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
      if (n > 0) {
        c.input.append(buffer, static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        c.closed_by_server = true;
        break;
      }
      if (errno == EAGAIN) break;
    }
    while (const std::size_t length = CompleteAnswer(c.input, i)) {
      if (!c.in_flight) Fail("connection " + std::to_string(i) + ": an answer nobody asked for");
      c.input.erase(0, length);
      c.in_flight = false;
      ++answers;
    }
    if (c.closed_by_server && c.in_flight) {
      Fail("connection " + std::to_string(i) + " closed by the server " + phase +
           " with a request unanswered");
    }
    return answers;
  }

  // On EPOLLOUT: sends a request that could not go out before.
  void Writable(std::size_t i) {
    if (!conns_[i].unsent) return;
    conns_[i].unsent = false;
    Send(i);
  }

  int Wait(epoll_event* events, int max, int timeout_ms) {
    const int n = epoll_wait(epoll_, events, max, timeout_ms);
    if (n < 0 && errno != EINTR) Fail(std::string("epoll_wait: ") + std::strerror(errno));
    return n < 0 ? 0 : n;
  }

  void Open() {
    conns_.resize(FLAGS_connections);
    const Clock::time_point start = Clock::now();
    const Clock::time_point deadline = start + Deadline();
    std::size_t next = 0, answered = 0, pending = 0;
    std::vector<epoll_event> events(1024);
    while (answered < conns_.size()) {
      while (next < conns_.size() && pending < FLAGS_max_pending) {
        StartConnect(next++);
        ++pending;
      }
      if (Clock::now() > deadline) {
        Fail("opening: " + std::to_string(answered) + " of " + std::to_string(conns_.size()) +
             " connections answered after " + std::to_string(FLAGS_deadline_secs) + " s");
      }
      const int n = Wait(events.data(), static_cast<int>(events.size()), 100);
      for (int e = 0; e < n; ++e) {
        const std::size_t i = events[e].data.u64;
        if ((events[e].events & EPOLLOUT) != 0) Writable(i);
        if ((events[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) continue;
        if (Receive(i, "while opening") > 0) {
          ++answered;
          --pending;
        } else if (conns_[i].closed_by_server) {
          Fail("connection " + std::to_string(i) + " closed by the server while opening");
        }
      }
    }
    open_s_ = Seconds(Clock::now() - start);
  }

  void Idle() {
    const double cpu_before = ServerCpuSeconds(server_);
    const Clock::time_point start = Clock::now();
    const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(FLAGS_idle_secs));
    std::vector<epoll_event> events(1024);
    while (Clock::now() < end) {
      const int n = Wait(events.data(), static_cast<int>(events.size()), 50);
      for (int e = 0; e < n; ++e) {
        const std::size_t i = events[e].data.u64;
        if ((events[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) continue;
        Receive(i, "while idle");
        if (conns_[i].closed_by_server) {
          Fail("connection " + std::to_string(i) +
               " closed by the server while idle (is its idle timeout shorter than the run?)");
        }
      }
    }
    const double elapsed = Seconds(Clock::now() - start);
    Print("idle_cpu_s_per_s", (ServerCpuSeconds(server_) - cpu_before) / elapsed);
  }

  void Busy() {
    std::vector<std::size_t> busy;
    if (FLAGS_busy_fraction > 0) {
      const std::size_t stride =
          std::max<std::size_t>(1, static_cast<std::size_t>(1.0 / FLAGS_busy_fraction + 0.5));
      for (std::size_t i = 0; i < conns_.size(); i += stride) busy.push_back(i);
    }
    Print("busy_connections", static_cast<double>(busy.size()));
    if (busy.empty()) return;
    std::vector<std::uint32_t> latencies_us;
    latencies_us.reserve(1 << 20);
    const Clock::time_point start = Clock::now();
    const Clock::time_point end = start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(FLAGS_busy_secs));
    for (std::size_t i : busy) {
      conns_[i].busy = true;
      conns_[i].in_flight = true;
      conns_[i].sent = Clock::now();
      Send(i);
    }
    std::size_t in_flight = busy.size();
    std::vector<epoll_event> events(1024);
    const Clock::time_point deadline = end + Deadline();
    while (in_flight > 0) {
      if (Clock::now() > deadline) Fail("busy: answers missing after the deadline");
      const int n = Wait(events.data(), static_cast<int>(events.size()), 50);
      const Clock::time_point now = Clock::now();
      for (int e = 0; e < n; ++e) {
        const std::size_t i = events[e].data.u64;
        if ((events[e].events & EPOLLOUT) != 0) Writable(i);
        if ((events[e].events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) == 0) continue;
        Connection& c = conns_[i];
        const Clock::time_point sent = c.sent;
        if (Receive(i, "while busy") == 0) {
          if (c.closed_by_server) Fail("connection " + std::to_string(i) + " closed while busy");
          continue;
        }
        if (!c.busy) Fail("an idle connection got an answer");
        latencies_us.push_back(static_cast<std::uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(now - sent).count()));
        if (now < end) {
          c.in_flight = true;
          c.sent = Clock::now();
          Send(i);
        } else {
          --in_flight;
        }
      }
    }
    const double elapsed = Seconds(Clock::now() - start);
    std::sort(latencies_us.begin(), latencies_us.end());
    auto at = [&](double q) {
      const double rank = q * static_cast<double>(latencies_us.size());
      return static_cast<double>(
          latencies_us[std::min(latencies_us.size() - 1, static_cast<std::size_t>(rank))]);
    };
    Print("busy_requests", static_cast<double>(latencies_us.size()));
    Print("busy_rps", static_cast<double>(latencies_us.size()) / elapsed);
    Print("busy_p50_us", at(0.50));
    Print("busy_p99_us", at(0.99));
    Print("busy_max_us", static_cast<double>(latencies_us.back()));
  }

  // Closes every connection, then waits (up to the deadline) until the server holds
  // no more sockets than before they opened.
  void CloseAll(long sockets_before) {
    const Clock::time_point start = Clock::now();
    for (Connection& c : conns_) close(c.fd);
    const Clock::time_point deadline = start + Deadline();
    long sockets = ServerFds(server_, true);
    while (sockets > sockets_before && Clock::now() < deadline) {
      usleep(10000);
      sockets = ServerFds(server_, true);
    }
    Print("sockets_after", static_cast<double>(sockets));
    Print("fds_after", static_cast<double>(ServerFds(server_)));
    Print("sockets_back_s", Seconds(Clock::now() - start));
  }

  void Sigterm() {
    const Clock::time_point start = Clock::now();
    if (kill(server_, SIGTERM) != 0) Fail(std::string("kill(SIGTERM): ") + std::strerror(errno));
    const Clock::time_point deadline = start + Deadline();
    std::size_t closed = 0;
    Clock::time_point last_close = start;
    std::vector<epoll_event> events(1024);
    while (closed < conns_.size() && Clock::now() < deadline) {
      const int n = Wait(events.data(), static_cast<int>(events.size()), 50);
      for (int e = 0; e < n; ++e) {
        const std::size_t i = events[e].data.u64;
        Connection& c = conns_[i];
        if (c.closed_by_server) continue;
        Receive(i, "after SIGTERM");
        if (c.closed_by_server) {
          ++closed;
          last_close = Clock::now();
        }
      }
    }
    while (ServerAlive(server_) && Clock::now() < deadline) usleep(10000);
    Print("sigterm_closed", static_cast<double>(closed));
    Print("sigterm_drain_s", Seconds(last_close - start));
    Print("server_exited", ServerAlive(server_) ? 0 : 1);
    for (Connection& c : conns_) close(c.fd);
  }

  static Clock::duration Deadline() {
    return std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(FLAGS_deadline_secs));
  }

  const sockaddr_in target_;
  const pid_t server_;
  int epoll_ = -1;
  std::string request_;
  std::vector<Connection> conns_;
  double open_s_ = 0;
};

void CheckRange(const char* flag, double value, double low, double high) {
  if (!(value >= low && value <= high)) {
    std::ostringstream message;
    message << std::setprecision(12) << "--" << flag << "=" << value
            << " is out of range: expected [" << low << ", " << high << "]";
    BadFlag(message.str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  gflags::SetUsageMessage("conn_load --target=ADDR:PORT --server_pid=PID [flags]");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  CheckRange("connections", static_cast<double>(FLAGS_connections), 1, 1000000);
  CheckRange("busy_fraction", FLAGS_busy_fraction, 0, 1);
  CheckRange("idle_secs", FLAGS_idle_secs, 0.1, 3600);
  CheckRange("busy_secs", FLAGS_busy_secs, 0.1, 3600);
  CheckRange("max_pending", static_cast<double>(FLAGS_max_pending), 1, 65536);
  CheckRange("deadline_secs", FLAGS_deadline_secs, 1, 3600);
  if (FLAGS_server_pid <= 0 || ServerFds(static_cast<pid_t>(FLAGS_server_pid)) < 0) {
    BadFlag("--server_pid=" + std::to_string(FLAGS_server_pid) +
            " names no process this user can read in /proc (a positive pid is required)");
  }
  sockaddr_in target{};
  target.sin_family = AF_INET;
  const std::size_t colon = FLAGS_target.rfind(':');
  const long port =
      colon == std::string::npos ? -1 : std::strtol(FLAGS_target.c_str() + colon + 1, nullptr, 10);
  if (colon == std::string::npos || port < 1 || port > 65535 ||
      inet_pton(AF_INET, FLAGS_target.substr(0, colon).c_str(), &target.sin_addr) != 1) {
    BadFlag("--target=" + FLAGS_target + " is not IPv4ADDRESS:PORT (port in [1, 65535])");
  }
  target.sin_port = htons(static_cast<std::uint16_t>(port));
  // Descriptors: every connection plus a margin.
  const rlim_t want = FLAGS_connections + 64;
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < want) {
    limit.rlim_cur = want;
    if (limit.rlim_max < want) limit.rlim_max = want;
    if (setrlimit(RLIMIT_NOFILE, &limit) != 0) {
      Fail("--connections=" + std::to_string(FLAGS_connections) + " needs " +
           std::to_string(want) + " descriptors; raising RLIMIT_NOFILE failed: " +
           std::strerror(errno) + " (raise the hard limit: ulimit -Hn, or run as root)");
    }
  }
  Load load(target, static_cast<pid_t>(FLAGS_server_pid));
  load.Run();
  return 0;
}
