// Copyright 2026 The Spindle Authors.
//
// gRPC keeps deadlines on the system clock (ServerContext::deadline(),
// ClientContext::set_deadline()); Spindle's waits, on the steady clock. These convert
// one to the other through the offset between the two clocks now, saturating, so that
// "none" (max()) stays none and a far deadline never overflows.

#ifndef SPINDLE_INTEGRATIONS_GRPC_INTERNAL_DEADLINE_H_
#define SPINDLE_INTEGRATIONS_GRPC_INTERNAL_DEADLINE_H_

#include <chrono>

namespace spindle::grpc_fiber::internal {

// The steady-clock point that is as far from now as `deadline` is on the system clock;
// max() for max() (gRPC's "no deadline"). A deadline in the past stays in the past.
std::chrono::steady_clock::time_point SteadyFromSystem(
    std::chrono::system_clock::time_point deadline);

// The reverse: the system-clock point as far from now as `deadline`; max() for max(),
// and now for a deadline that has passed (however long ago).
std::chrono::system_clock::time_point SystemFromSteady(
    std::chrono::steady_clock::time_point deadline);

}  // namespace spindle::grpc_fiber::internal

#endif  // SPINDLE_INTEGRATIONS_GRPC_INTERNAL_DEADLINE_H_
