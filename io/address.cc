// Copyright 2026 The Spindle Authors.

#include "io/address.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace spindle::io {
namespace {

absl::Status BadAddress(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "address \"", text, "\" is invalid: ", why,
      " (accepted: IPV4:PORT, [IPV6]:PORT, unix:PATH, unix:@ABSTRACT; PORT in [0, 65535])"));
}

}  // namespace

Address::Address() : length_(0) {
  std::memset(&storage_, 0, sizeof(storage_));
  storage_.ss_family = AF_UNSPEC;
}

Address Address::FromSockaddr(const sockaddr* address, socklen_t length) {
  Address result;
  if (length > sizeof(result.storage_)) length = sizeof(result.storage_);
  std::memcpy(&result.storage_, address, length);
  result.length_ = length;
  return result;
}

Address Address::Ipv4(std::uint32_t host_order_ip, int port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<std::uint16_t>(port));
  in.sin_addr.s_addr = htonl(host_order_ip);
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
}

Address Address::Ipv4Loopback(int port) { return Ipv4(INADDR_LOOPBACK, port); }

Address Address::Ipv6Loopback(int port) {
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(static_cast<std::uint16_t>(port));
  in6.sin6_addr = in6addr_loopback;
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
}

absl::StatusOr<Address> Address::Unix(absl::string_view path) {
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(un.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unix socket path \"", path, "\" is invalid: its length ",
                     path.size(), " is not in [1, ", sizeof(un.sun_path) - 1, "]"));
  }
  std::memcpy(un.sun_path, path.data(), path.size());
  socklen_t length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
  if (path[0] == '@') {
    un.sun_path[0] = '\0';  // abstract: no trailing NUL, the length says where it ends
  } else {
    ++length;  // the NUL
  }
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&un), length);
}

absl::StatusOr<Address> Address::Parse(absl::string_view text) {
  if (absl::ConsumePrefix(&text, "unix:")) return Unix(text);
  const std::string original(text);
  absl::string_view host;
  absl::string_view port_text;
  bool v6 = false;
  if (!text.empty() && text[0] == '[') {
    const std::size_t close = text.find(']');
    if (close == absl::string_view::npos || close + 1 >= text.size() ||
        text[close + 1] != ':') {
      return BadAddress(original, "expected [IPV6]:PORT");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
    v6 = true;
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == absl::string_view::npos) return BadAddress(original, "no port");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535) {
    return BadAddress(original, absl::StrCat("port \"", port_text, "\" is not a number in [0, 65535]"));
  }
  const std::string host_string(host);
  if (v6) {
    sockaddr_in6 in6{};
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(static_cast<std::uint16_t>(port));
    if (inet_pton(AF_INET6, host_string.c_str(), &in6.sin6_addr) != 1) {
      return BadAddress(original, "not an IPv6 address");
    }
    return FromSockaddr(reinterpret_cast<const sockaddr*>(&in6), sizeof(in6));
  }
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, host_string.c_str(), &in.sin_addr) != 1) {
    return BadAddress(original,
                      "not an IPv4 address (names are not resolved here: resolve them "
                      "with getaddrinfo() inside spindle::io::RunBlocking())");
  }
  return FromSockaddr(reinterpret_cast<const sockaddr*>(&in), sizeof(in));
}

int Address::port() const {
  if (family() == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
  }
  if (family() == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
  }
  return -1;
}

std::string Address::ToString() const {
  char buffer[INET6_ADDRSTRLEN] = {};
  switch (family()) {
    case AF_INET:
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, buffer,
                sizeof(buffer));
      return absl::StrCat(buffer, ":", port());
    case AF_INET6:
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr,
                buffer, sizeof(buffer));
      return absl::StrCat("[", buffer, "]:", port());
    case AF_UNIX: {
      const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
      const std::size_t offset = offsetof(sockaddr_un, sun_path);
      if (length_ <= offset) return "unix:(unnamed)";
      std::size_t n = length_ - offset;
      if (un->sun_path[0] == '\0') {
        return absl::StrCat("unix:@", absl::string_view(un->sun_path + 1, n - 1));
      }
      return absl::StrCat("unix:", absl::string_view(un->sun_path, strnlen(un->sun_path, n)));
    }
    default:
      return "(no address)";
  }
}

bool operator==(const Address& a, const Address& b) {
  return a.length_ == b.length_ && std::memcmp(&a.storage_, &b.storage_, a.length_) == 0;
}

}  // namespace spindle::io
