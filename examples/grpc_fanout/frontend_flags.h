// Copyright 2026 The Spindle Authors.
//
// The flags every Frontend server of the fan-out example takes (frontend_sync,
// frontend_callback, frontend_cq and the Spindle frontend): --port, --backends,
// --channels_per_backend, --fanout and --deadline_ms. They live in their own library so
// that the backend and the load generator, which have flags of their own with some of
// these names, do not link them.

#ifndef SPINDLE_EXAMPLES_GRPC_FANOUT_FRONTEND_FLAGS_H_
#define SPINDLE_EXAMPLES_GRPC_FANOUT_FRONTEND_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gflags/gflags.h"

DECLARE_int64(port);
DECLARE_string(backends);
DECLARE_int64(channels_per_backend);
DECLARE_int64(fanout);
DECLARE_int64(deadline_ms);

namespace spindle::fanout {

// The validated values of the flags above. A plain value: thread-compatible.
struct FrontendOptions {
  int port = 0;
  std::vector<std::string> backends;  // gRPC targets, host:port
  int channels_per_backend = 4;
  std::uint32_t fanout = 8;         // K when a QueryRequest says 0
  std::int64_t deadline_ms = 1000;  // per query, capped by the caller's deadline
};

// Reads and checks the flags; on a bad value prints a message naming the flag, the value
// and the accepted range, and exits 2. Call after gflags::ParseCommandLineFlags.
FrontendOptions FrontendOptionsFromFlags();

}  // namespace spindle::fanout

#endif  // SPINDLE_EXAMPLES_GRPC_FANOUT_FRONTEND_FLAGS_H_
