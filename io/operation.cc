// Copyright 2026 The Spindle Authors.

#include "io/operation.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"

namespace spindle::io::internal {

std::string Context(const char* operation, const char* preposition, const Address& address) {
  return absl::StrCat(operation, " ", preposition, " ", address.ToString());
}

std::string ErrorText(int error) {
  char buffer[128];
  return absl::StrCat(strerror_r(error, buffer, sizeof(buffer)), " [errno ", error, "]");
}

absl::Status OsError(int error, const char* operation, const char* preposition,
                     const Address& address) {
  return absl::Status(absl::ErrnoToStatusCode(error),
                      absl::StrCat(Context(operation, preposition, address), ": ",
                                   ErrorText(error)));
}

absl::Status ClosedError(const char* operation, const char* preposition,
                         const Address& address) {
  return absl::FailedPreconditionError(
      absl::StrCat(Context(operation, preposition, address), ": closed"));
}

absl::Status DeadlineError(const char* operation, const char* preposition,
                           const Address& address) {
  return absl::DeadlineExceededError(
      absl::StrCat(Context(operation, preposition, address), ": deadline exceeded"));
}

absl::Status CancelledError(const char* operation, const char* preposition,
                            const Address& address) {
  return absl::CancelledError(
      absl::StrCat(Context(operation, preposition, address), ": cancelled"));
}

void SetNoDelay(int fd, int family) {
  if (family != AF_INET && family != AF_INET6) return;
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // best effort
}

}  // namespace spindle::io::internal
