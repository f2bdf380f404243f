// Copyright 2026 The Spindle Authors.
//
// For the example servers: while a request's handler runs, the connection's fiber
// watches the socket, so that a client that goes away cancels the handler instead of
// leaving it to work for nobody.

#ifndef SPINDLE_EXAMPLES_CLIENT_WATCH_H_
#define SPINDLE_EXAMPLES_CLIENT_WATCH_H_

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "io/stream.h"

namespace spindle::examples {

// Runs `handler` in a fiber of its own, in `request` (the request's execution context,
// whose deadline bounds the handler's waits), while the calling fiber watches `stream`
// in a second context that the handler's end cancels. The client's end of stream, a
// reset, or the connection being closed under the watch (a server's drain) cancels
// `request`; readable data that is not the end of stream is the client's next request
// (pipelined): the client is there, and the watch ends. Returns once the handler has
// returned: true if the client went away (`request` was cancelled).
template <class Handler>
bool RunWatchingClient(io::Stream& stream, const std::shared_ptr<ExecutionContext>& request,
                       Handler&& handler) {
  const std::shared_ptr<ExecutionContext> watch = ExecutionContext::Create();
  Fiber worker([&] {
    {
      ScopedExecutionContext scope(request);
      std::forward<Handler>(handler)();
    }
    watch->Cancel();
  });
  bool client_gone = false;
  {
    ScopedExecutionContext scope(watch);
    absl::Status readable;
    while ((readable = stream.WaitReadable(io::kNoDeadline)).ok()) {
      char byte;
      const ssize_t peeked = recv(stream.fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (peeked > 0) break;  // the next request: the client is there
      if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
      client_gone = true;  // end of stream, or an error (a reset)
      break;
    }
    // Not the watch's cancellation (the handler's end): the connection is closed.
    if (!readable.ok() && !absl::IsCancelled(readable)) client_gone = true;
  }
  if (client_gone) request->Cancel();
  worker.join();
  return client_gone;
}

}  // namespace spindle::examples

#endif  // SPINDLE_EXAMPLES_CLIENT_WATCH_H_
