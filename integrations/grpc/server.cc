// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/server.h"

#include <atomic>
#include <exception>
#include <new>
#include <string>
#include <thread>

#include "fiber/fiber.h"
#include "glog/logging.h"
#include "integrations/grpc/internal/deadline.h"

namespace spindle::grpc_fiber {
namespace {

// Relaxed counters: statistics, ordered with nothing.
std::atomic<std::uint64_t> g_started{0};
std::atomic<std::uint64_t> g_finished{0};
std::atomic<std::uint64_t> g_cancelled{0};
std::atomic<std::uint64_t> g_exceptions{0};
std::atomic<std::uint64_t> g_not_started{0};

std::shared_ptr<ExecutionContext> MakeCallContext(grpc::CallbackServerContext* server_context) {
  ExecutionContext::Options options;
  // Converted once, at entry: from here the call's deadline is a steady-clock point,
  // honoured by every interruptible wait in the handler, ahead of gRPC's own
  // cancellation at the deadline (which arrives a little later, through OnCancel).
  options.deadline = internal::SteadyFromSystem(server_context->deadline());
  return ExecutionContext::Create(std::move(options));
}

}  // namespace

namespace internal {

ServerCallCore::ServerCallCore(grpc::CallbackServerContext* server_context)
    : server_context_(server_context), context_(MakeCallContext(server_context)) {}

bool ServerCallCore::StartFiber(absl::AnyInvocable<void()> body) {
  try {
    StartFiberDetached(std::move(body));
  } catch (const std::bad_alloc&) {
    LOG_EVERY_T(WARNING, 1) << "spindle::grpc_fiber: out of memory starting a handler's "
                               "fiber (answered RESOURCE_EXHAUSTED)";
    return false;
  }
  g_started.fetch_add(1, std::memory_order_relaxed);
  return true;
}

grpc::Status ServerCallCore::RunHandler(absl::FunctionRef<grpc::Status()> handler) {
  // A call that waited in the run queue past its deadline, or was cancelled there, is
  // answered without running its handler: under overload the queue then drains at
  // once instead of doing work nobody waits for (which would make every call behind
  // it late as well).
  if (context_->cancelled()) {
    g_not_started.fetch_add(1, std::memory_order_relaxed);
    return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled before its handler started");
  }
  if (context_->deadline() <= std::chrono::steady_clock::now()) {
    g_not_started.fetch_add(1, std::memory_order_relaxed);
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                        "the deadline passed before the handler started");
  }
  ScopedExecutionContext scope(context_);
  // The call must be finished whatever happens here: nothing below may throw.
  const char* error = nullptr;
  try {
    return handler();
  } catch (const std::exception& e) {
    try {
      std::string message = std::string("the handler threw: ") + e.what();
      g_exceptions.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_T(WARNING, 1) << "spindle::grpc_fiber: " << message << " (answered UNKNOWN)";
      return grpc::Status(grpc::StatusCode::UNKNOWN, std::move(message));
    } catch (...) {
      error = "the handler threw (its message could not be copied)";
    }
  } catch (...) {
    error = "the handler threw an exception not derived from std::exception";
  }
  g_exceptions.fetch_add(1, std::memory_order_relaxed);
  LOG_EVERY_T(WARNING, 1) << "spindle::grpc_fiber: " << error << " (answered UNKNOWN)";
  return grpc::Status(grpc::StatusCode::UNKNOWN, error);
}

void ServerCallCore::OnCancelled() {
  g_cancelled.fetch_add(1, std::memory_order_relaxed);
  // Runs the StopCallbacks of the handler's waits (client calls' TryCancel) here, on
  // gRPC's executor thread, and wakes its parked waits. The context outlives this: the
  // reactor holds it until OnDone, which gRPC runs after OnCancel.
  context_->Cancel();
}

void ServerCallCore::OnDone() { g_finished.fetch_add(1, std::memory_order_relaxed); }

}  // namespace internal

ServerStats GetServerStats() {
  ServerStats stats;
  stats.started = g_started.load(std::memory_order_relaxed);
  stats.finished = g_finished.load(std::memory_order_relaxed);
  stats.cancelled = g_cancelled.load(std::memory_order_relaxed);
  stats.handler_exceptions = g_exceptions.load(std::memory_order_relaxed);
  stats.expired_before_start = g_not_started.load(std::memory_order_relaxed);
  return stats;
}

void ShutdownServer(grpc::Server& server, std::chrono::milliseconds drain) {
  // gRPC stops accepting, waits for the calls in flight up to the deadline, then
  // cancels the rest (OnCancel: their contexts are cancelled) and returns once every
  // reactor is done.
  server.Shutdown(std::chrono::system_clock::now() + drain);
}

int ServeUntilSignal(io::ShutdownSignals& signals, grpc::Server& server,
                     std::chrono::milliseconds drain) {
  // The first signal starts the shutdown on a thread of its own (it blocks until the
  // drain is over); server.Wait() returns once the server has shut down, whoever shut
  // it down.
  std::thread shutdown;
  const int signal = signals.RunUntilSignal(
      [&] { server.Wait(); },
      [&] { shutdown = std::thread([&server, drain] { ShutdownServer(server, drain); }); });
  if (shutdown.joinable()) shutdown.join();
  return signal;
}

}  // namespace spindle::grpc_fiber
