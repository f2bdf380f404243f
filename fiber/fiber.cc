// Copyright 2026 The Spindle Authors.

#include "fiber/fiber.h"

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
#include "runtime/internal/oneshot_event.h"
#include "runtime/internal/runtime_impl.h"

namespace spindle {
namespace {

internal::SchedulingGroup* ChooseGroup(const Fiber::Attributes& attributes) {
  internal::Runtime& runtime = internal::Runtime::Get();
  if (attributes.scheduling_group == Fiber::kNearestSchedulingGroup) {
    return runtime.NearestGroup();
  }
  CHECK_LT(attributes.scheduling_group, runtime.group_count())
      << "Fiber::Attributes::scheduling_group=" << attributes.scheduling_group
      << " is out of range: expected [0, " << runtime.group_count() << ")";
  return runtime.group(attributes.scheduling_group);
}

// Queues or dispatches `desc` as the attributes say.
void LaunchFiber(const Fiber::Attributes& attributes, internal::FiberDesc* desc) {
  desc->scheduling_group_local = attributes.scheduling_group_local;
  internal::SchedulingGroup* group = ChooseGroup(attributes);
  internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  const bool in_fiber = self != nullptr && !self->is_master();
  if (attributes.launch_policy == spindle::Launch::kDispatch && in_fiber &&
      self->scheduling_group == group) {
    group->Dispatch(self, desc);
    return;
  }
  group->StartFiber(desc);
}

}  // namespace

Fiber::Fiber(absl::AnyInvocable<void()> start_proc)
    : Fiber(Attributes(), std::move(start_proc)) {}

Fiber::Fiber(const Attributes& attributes, absl::AnyInvocable<void()> start_proc) {
  barrier_ = std::make_shared<internal::OneshotEvent>();
  internal::FiberDesc* desc = internal::NewFiberDesc(std::move(start_proc));
  desc->exit_hook = [barrier = barrier_] { barrier->Signal(); };
  id_ = desc->id;
  LaunchFiber(attributes, desc);
}

Fiber::~Fiber() {
  if (joinable()) {
    LOG(FATAL) << "spindle::Fiber for fiber " << id_
               << " destroyed while joinable: call join() or detach() first";
  }
}

Fiber::Fiber(Fiber&& other) noexcept
    : barrier_(std::move(other.barrier_)), id_(other.id_) {
  other.id_ = 0;
}

Fiber& Fiber::operator=(Fiber&& other) noexcept {
  if (joinable()) {
    LOG(FATAL) << "spindle::Fiber for fiber " << id_
               << " assigned to while joinable: call join() or detach() first";
  }
  barrier_ = std::move(other.barrier_);
  id_ = other.id_;
  other.id_ = 0;
  return *this;
}

void Fiber::join() {
  CHECK(joinable()) << "join() on a Fiber that is not joinable";
  barrier_->Wait();
  barrier_.reset();
  id_ = 0;
}

void Fiber::detach() {
  CHECK(joinable()) << "detach() on a Fiber that is not joinable";
  barrier_.reset();
  id_ = 0;
}

void StartFiberDetached(absl::AnyInvocable<void()> start_proc) {
  StartFiberDetached(Fiber::Attributes(), std::move(start_proc));
}

void StartFiberDetached(const Fiber::Attributes& attributes,
                        absl::AnyInvocable<void()> start_proc) {
  LaunchFiber(attributes, internal::NewFiberDesc(std::move(start_proc)));
}

void BatchStartFiberDetached(std::vector<absl::AnyInvocable<void()>> start_procs) {
  if (start_procs.empty()) return;
  std::vector<internal::FiberDesc*> descs;
  descs.reserve(start_procs.size());
  for (auto& proc : start_procs) descs.push_back(internal::NewFiberDesc(std::move(proc)));
  internal::Runtime::Get().NearestGroup()->StartFibers(descs.data(), descs.size());
}

}  // namespace spindle
