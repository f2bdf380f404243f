// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/client.h"

#include "glog/logging.h"
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

void CheckFreshContext(grpc::ClientContext& context) {
  if (context.c_call() != nullptr) {
    LOG(FATAL) << "spindle::grpc_fiber: a grpc::ClientContext that carried a call already "
                  "was given for another: gRPC allows one call per ClientContext (make a "
                  "new one for each call)";
  }
}

void CheckStarted(grpc::ClientContext& context, const char* function) {
  if (context.c_call() == nullptr) {
    LOG(FATAL) << "spindle::grpc_fiber::" << function
               << ": the function given returned without starting a call on the "
                  "ClientContext given (it must call the stub's async() method with that "
                  "context): nothing would ever answer";
  }
}

}  // namespace spindle::grpc_fiber::internal
