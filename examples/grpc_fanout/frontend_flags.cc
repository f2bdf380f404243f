// Copyright 2026 The Spindle Authors.

#include "examples/grpc_fanout/frontend_flags.h"

#include "examples/grpc_fanout/fanout_common.h"

DEFINE_int64(port, 0,
             "Port to serve Frontend on, on 0.0.0.0; 0 lets the kernel pick one. The port is "
             "printed as \"listening on PORT\", the first stdout line (default 0, range "
             "[0, 65535])");
DEFINE_string(backends, "",
              "The backends to fan out to: host:port[,host:port...] (IPv6 as [addr]:port); "
              "required (default \"\")");
DEFINE_int64(channels_per_backend, 4,
             "Channels, hence HTTP/2 connections, opened to each backend; calls go "
             "round-robin over all of them (default 4, range [1, 256])");
DEFINE_int64(fanout, 8,
             "Backend calls per query (K) when the QueryRequest's fanout is 0 (default 8, "
             "range [1, 1024])");
DEFINE_int64(deadline_ms, 1000,
             "Deadline of a query's backend calls, in ms from the query's arrival; the "
             "caller's own deadline wins when earlier (default 1000, range [1, 3600000])");

namespace spindle::fanout {

FrontendOptions FrontendOptionsFromFlags() {
  CheckFlagRange("port", FLAGS_port, 0, 65535);
  CheckFlagRange("channels_per_backend", FLAGS_channels_per_backend, 1, 256);
  CheckFlagRange("fanout", FLAGS_fanout, 1, kMaxFanout);
  CheckFlagRange("deadline_ms", FLAGS_deadline_ms, 1, 3'600'000);
  FrontendOptions options;
  std::string error;
  if (!ParseBackends(FLAGS_backends, &options.backends, &error)) {
    FailUsage("--backends=\"" + FLAGS_backends + "\": " + error);
  }
  options.port = static_cast<int>(FLAGS_port);
  options.channels_per_backend = static_cast<int>(FLAGS_channels_per_backend);
  options.fanout = static_cast<std::uint32_t>(FLAGS_fanout);
  options.deadline_ms = FLAGS_deadline_ms;
  return options;
}

}  // namespace spindle::fanout
