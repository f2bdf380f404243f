// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_ADDRESS_H_
#define SPINDLE_IO_ADDRESS_H_

#include <sys/socket.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace spindle::io {

// A socket address: IPv4, IPv6 or a Unix-domain path. A value type; thread-compatible.
//
// Text forms (Parse, ToString): "1.2.3.4:80", "[::1]:80", "unix:/path/to/socket" (an
// abstract socket: "unix:@name"). Parse() does no name resolution: "localhost:80" is an
// error (resolve names with getaddrinfo() inside RunBlocking()).
class Address {
 public:
  // An empty address: family() AF_UNSPEC, length() 0, ToString() "(no address)".
  Address();

  // The address `text` spells in one of the forms above. InvalidArgument naming the
  // text and the fault: no port, a port that is not a number in [0, 65535], a host that
  // is not a numeric IPv4 or IPv6 address (names are not resolved), or a "unix:" path
  // whose length is not in [1, 107] (sizeof sun_path - 1; an abstract "@name" counts
  // its '@').
  static absl::StatusOr<Address> Parse(absl::string_view text);
  // From a kernel socket address; `length` bytes at `address` (at most sizeof
  // sockaddr_storage are kept).
  static Address FromSockaddr(const sockaddr* address, socklen_t length);
  // The IPv4 address `host_order_ip` (in host byte order: 0x7f000001 is 127.0.0.1) with
  // `port`. The port is not checked: one outside [0, 65535] is kept modulo 65536.
  static Address Ipv4(std::uint32_t host_order_ip, int port);
  // 127.0.0.1 with `port`, which is not checked either (as in Ipv4()).
  static Address Ipv4Loopback(int port);
  // [::1] with `port`, which is not checked either (as in Ipv4()).
  static Address Ipv6Loopback(int port);
  // The Unix-domain socket at `path` (no "unix:" prefix); a path starting with '@' names
  // an abstract socket. InvalidArgument naming the path if its length (the '@'
  // included) is not in [1, 107].
  static absl::StatusOr<Address> Unix(absl::string_view path);

  // The address family as the kernel spells it (AF_INET, AF_INET6, AF_UNIX; AF_UNSPEC
  // for an empty address).
  int family() const { return storage_.ss_family; }
  // Whether the address is empty (family() AF_UNSPEC), as a default-constructed one is.
  bool empty() const { return family() == AF_UNSPEC; }
  // The port (IPv4/IPv6), or -1.
  int port() const;
  // The address as the kernel takes it (for bind(), connect() and the like), length()
  // bytes long. Valid while this Address lives and is not assigned to.
  const sockaddr* sockaddr_ptr() const {
    return reinterpret_cast<const sockaddr*>(&storage_);
  }
  // The size in bytes of the address at sockaddr_ptr(); 0 for an empty address.
  socklen_t length() const { return length_; }
  // The address in the text forms above; "unix:(unnamed)" for an unnamed Unix-domain
  // socket, and "(no address)" for an empty address or one of another family.
  std::string ToString() const;

  friend bool operator==(const Address& a, const Address& b);
  friend bool operator!=(const Address& a, const Address& b) { return !(a == b); }

 private:
  sockaddr_storage storage_;
  socklen_t length_;
};

}  // namespace spindle::io

#endif  // SPINDLE_IO_ADDRESS_H_
