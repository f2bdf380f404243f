// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/client.h"

#include "integrations/grpc/internal/deadline.h"

namespace spindle::grpc_fiber::internal {

void ApplyCallerDeadline(grpc::ClientContext& context) {
  const ExecutionContext* caller = ExecutionContext::Current();
  if (caller == nullptr) return;
  const auto deadline = caller->deadline();
  if (deadline == std::chrono::steady_clock::time_point::max()) return;
  // Carried as a point on the system clock, which gRPC sends as a duration (the
  // grpc-timeout header): hosts' clocks need not agree.
  const auto wanted = SystemFromSteady(deadline);
  if (wanted < context.deadline()) context.set_deadline(wanted);
}

}  // namespace spindle::grpc_fiber::internal
