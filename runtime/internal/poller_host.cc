// Copyright 2026 The Spindle Authors.

#include "runtime/internal/poller_host.h"

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/runtime_impl.h"

namespace spindle::internal {

std::size_t PollerHostGroupCount() { return Runtime::Get().group_count(); }

std::size_t PollerHostCurrentGroup() {
  FiberEntity* self = GetCurrentFiberEntity();
  CHECK(self != nullptr && self->scheduling_group != nullptr)
      << "PollerHostCurrentGroup() from a thread that is not a fiber of a group";
  return self->scheduling_group->index();
}

void AttachPoller(std::size_t group, GroupPoller* poller) {
  const Runtime& runtime = Runtime::Get();
  CHECK_LT(group, runtime.group_count()) << "AttachPoller: no scheduling group " << group;
  SchedulingStrategy* strategy = runtime.group(group)->strategy();
  if (strategy->poller() != poller) strategy->SetPoller(poller);
}

bool IsAttachedPoller(std::size_t group, const GroupPoller* poller) {
  const Runtime& runtime = Runtime::Get();
  return group < runtime.group_count() && runtime.group(group)->strategy()->poller() == poller;
}

void EnsurePollerAwake(std::size_t group) {
  Runtime::Get().group(group)->busy_poll().EnsurePollerAwake();
}

}  // namespace spindle::internal
