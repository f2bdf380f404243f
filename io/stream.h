// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_STREAM_H_
#define SPINDLE_IO_STREAM_H_

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "io/address.h"
#include "io/deadline.h"

namespace spindle::io {

namespace internal {
class Descriptor;
}  // namespace internal

// A connected stream socket (TCP or Unix). Every blocking call parks the calling fiber
// (its worker runs other fibers) until the socket is ready or `deadline` passes; called
// from a plain thread it blocks that thread in poll(). Errors name the operation, the
// peer address and the OS error: a deadline gives DeadlineExceeded, a peer reset
// Unavailable, an operation on a closed stream (or one closed while it waits)
// FailedPrecondition. Every wait is interruptible (fiber/execution_context.h): the
// caller's execution context bounds it by its deadline (DeadlineExceeded) and ends it
// when cancelled (Cancelled); a call whose socket is ready does not wait.
//
// Thread-safety: one reader (Read, ReadFull, WaitReadable) and one writer (Write,
// WriteAll, WriteVectored, WriteAllVectored, WaitWritable, ShutdownWrite) may run at the
// same time, from any fibers or threads; a second concurrent reader (or writer) is
// refused with FailedPrecondition.
// Close() may be called from anywhere at any time, also while others wait: it wakes
// them with an error, and the descriptor is released (close(2)) once the last operation
// in flight returns, so its number cannot be reused under a running call. Moving or
// destroying a Stream while another thread uses it is a data race.
class Stream {
 public:
  Stream() = default;  // not open
  ~Stream();
  // Moves the stream: `other` is then not open. Assigning first closes the stream this
  // one held (as Close()). No other call may run on either stream meanwhile.
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Connects to `address` (TCP_NODELAY on for TCP).
  static absl::StatusOr<Stream> Connect(const Address& address,
                                        Deadline deadline = kNoDeadline);
  // Takes ownership of a connected stream socket `fd` (made non-blocking; closed on
  // failure too); `peer` is used in messages. Sockets only: other descriptors (pipes)
  // get errors such as ENOTSOCK from Write().
  static absl::StatusOr<Stream> Adopt(int fd, Address peer);

  // Reads up to `size` bytes; 0 means the peer closed its side (end of stream), or
  // that `size` was 0 (then it returns at once).
  absl::StatusOr<std::size_t> Read(void* buffer, std::size_t size,
                                   Deadline deadline = kNoDeadline);
  // Reads exactly `size` bytes; an end of stream first gives OutOfRange with how many
  // bytes arrived.
  absl::Status ReadFull(void* buffer, std::size_t size, Deadline deadline = kNoDeadline);
  // Writes some of `size` bytes (at least 1 unless size is 0), waiting for room.
  absl::StatusOr<std::size_t> Write(const void* data, std::size_t size,
                                    Deadline deadline = kNoDeadline);
  // Writes all `size` bytes (or fails; then some may have been written).
  absl::Status WriteAll(const void* data, std::size_t size,
                        Deadline deadline = kNoDeadline);
  // Vectored writes (sendmsg(2)): the bytes of `pieces` in order, as if they were one
  // buffer, so a header and a payload that live apart go out in one system call.
  // WriteVectored writes some (at least 1 byte unless every piece is empty, at most
  // IOV_MAX pieces per call); WriteAllVectored all of them (or fails; then some may
  // have been written). Empty pieces are allowed.
  absl::StatusOr<std::size_t> WriteVectored(absl::Span<const absl::string_view> pieces,
                                            Deadline deadline = kNoDeadline);
  // Writes all the bytes of `pieces`, in as many sendmsg() calls as it takes; OK at once
  // if every piece is empty. On failure some of the bytes may have been written.
  absl::Status WriteAllVectored(absl::Span<const absl::string_view> pieces,
                                Deadline deadline = kNoDeadline);
  // Waits until a Read() would not block (data, end of stream or an error is pending).
  absl::Status WaitReadable(Deadline deadline = kNoDeadline);
  // Waits until a Write() would not block.
  absl::Status WaitWritable(Deadline deadline = kNoDeadline);
  // Sends end of stream to the peer (shutdown(SHUT_WR)); reading goes on.
  absl::Status ShutdownWrite();
  // Closes the stream: later calls fail, waiting calls wake with FailedPrecondition.
  // Closing a closed stream is OK.
  absl::Status Close();

  // Whether the stream was opened and not closed yet.
  bool is_open() const;
  // The peer's address: the one given to Connect() or Adopt(); for an accepted stream,
  // the client's (for a Unix socket, the listener's own address). Empty for a stream
  // never opened. Kept after Close(); it changes only when the stream is assigned to.
  const Address& peer() const { return peer_; }
  // The kernel's descriptor number, while open (for setsockopt and the like; do not
  // close it or read from it directly).
  int fd() const;

 private:
  friend class Listener;
  Stream(internal::Descriptor* descriptor, std::uint32_t generation, Address peer)
      : descriptor_(descriptor), generation_(generation), peer_(std::move(peer)) {}
  // WriteVectored() of `pieces` from piece `first`, whose first `skip` bytes are left
  // out.
  absl::StatusOr<std::size_t> WriteVectoredFrom(absl::Span<const absl::string_view> pieces,
                                                std::size_t first, std::size_t skip,
                                                Deadline deadline);

  internal::Descriptor* descriptor_ = nullptr;
  std::uint32_t generation_ = 0;
  Address peer_;
};

// How Listener::Listen() sets up its socket. A backlog below 1 is InvalidArgument.
struct ListenOptions {
  int backlog = 4096;       // listen(2)'s backlog (the kernel caps it at somaxconn)
  bool reuse_address = true;  // SO_REUSEADDR
  bool reuse_port = false;    // SO_REUSEPORT
  // Out of descriptors (EMFILE, ENFILE): close a spare descriptor kept for this, accept
  // the waiting connection with it and close that at once, so its client sees the
  // connection end now instead of waiting unanswered in the backlog; then take the
  // spare again. false: leave connections in the backlog and back off (below).
  bool refuse_when_out_of_descriptors = true;
};

// A listening socket. Accept() parks like Stream's calls. Accepted streams have
// TCP_NODELAY on (TCP).
//
// Out of descriptors (EMFILE, ENFILE), Accept() refuses waiting connections as
// ListenOptions::refuse_when_out_of_descriptors says (counted in refused()) and goes on
// waiting for one it can keep. When it cannot (no spare: the option is off, or the
// spare could not be taken back) or the kernel is out of memory (ENOBUFS, ENOMEM), it
// does not spin: it backs off (5 ms doubling to 250 ms, back to 5 ms after an attempt
// that got a connection, within the deadline) and tries again, leaving the connection
// in the backlog; at the deadline it returns ResourceExhausted naming the error.
//
// Thread-safety: as Stream; one Accept() at a time, Close() from anywhere. The spare
// descriptor is released when the Listener is destroyed (or assigned to), not by
// Close(), which may run while Accept() uses it.
class Listener {
 public:
  Listener() = default;
  ~Listener();
  // Moves the listener, its counters and its spare descriptor: `other` is then not
  // open. Assigning first closes the listener this one held and releases its spare. No
  // other call may run on either listener meanwhile.
  Listener(Listener&& other) noexcept;
  Listener& operator=(Listener&& other) noexcept;
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds a stream socket to `address` and listens on it (SO_REUSEADDR, except for a
  // Unix socket, and SO_REUSEPORT as `options` say). InvalidArgument for an empty
  // address or a backlog below 1; a failed socket(), setsockopt(), bind() or listen()
  // gives the status of its errno (absl::ErrnoToStatusCode), naming the address. A
  // Unix socket's file is not removed, neither before bind() nor by Close().
  static absl::StatusOr<Listener> Listen(const Address& address,
                                         const ListenOptions& options = {});
  // Waits for a connection and returns it as an open Stream (its peer: the client's
  // address; for a Unix socket, the listener's own). Errors as Stream's:
  // FailedPrecondition if the listener is closed (before or during the wait) or another
  // Accept() runs, DeadlineExceeded, Cancelled; ResourceExhausted at the deadline while
  // out of descriptors or memory (see above); another OS error as the status of its
  // errno. Errors of one pending connection (ECONNABORTED and the like) are skipped.
  absl::StatusOr<Stream> Accept(Deadline deadline = kNoDeadline);
  // Closes the listening socket: a waiting Accept() wakes with FailedPrecondition, and
  // later ones fail so. Callable from any thread; always OK (closing a closed or never
  // opened listener too).
  absl::Status Close();

  // Whether the listener was opened and not closed yet (a snapshot, from any thread).
  bool is_open() const;
  // The bound address (with the port the kernel chose for port 0).
  const Address& address() const { return address_; }
  // Times Accept() backed off for lack of descriptors or memory (tests, metrics). Read
  // it where Accept() is not running (its caller's fiber, or after it returned).
  std::uint64_t resource_backoffs() const { return resource_backoffs_; }
  // Connections Accept() refused for lack of descriptors (closed at once; see above).
  // Read it, as resource_backoffs(), where Accept() is not running.
  std::uint64_t refused() const { return refused_; }

 private:
  void ReleaseSpare();

  internal::Descriptor* descriptor_ = nullptr;
  std::uint32_t generation_ = 0;
  Address address_;
  std::uint64_t resource_backoffs_ = 0;
  std::uint64_t refused_ = 0;
  // The spare descriptor of refuse_when_out_of_descriptors (-1: none now), and whether
  // to keep one.
  int spare_fd_ = -1;
  bool keep_spare_ = false;
};

}  // namespace spindle::io

#endif  // SPINDLE_IO_STREAM_H_
