// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/internal/op_slot.h"

#include "glog/logging.h"

namespace spindle::grpc_fiber::internal {

void OpSlot::Begin() {
  // relaxed: only detects misuse; the operation itself is ordered by gRPC's call lock
  // and the semaphore.
  if (busy_.exchange(true, std::memory_order_relaxed)) {
    LOG(FATAL) << "spindle::grpc_fiber: two " << what_
               << "s at once on one call: gRPC allows one " << what_
               << " in flight per call; use one fiber per direction";
  }
}

}  // namespace spindle::grpc_fiber::internal
