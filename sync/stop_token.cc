// Copyright 2026 The Spindle Authors.

#include "sync/stop_token.h"

#include <new>

#include "sync/internal/stop_state.h"

namespace spindle::internal {
namespace {

// The node a StopCallback registers, built in its StopCallbackRoom.
struct StopCallbackRecord : StopState::Callback {
  void (*function)(void* owner) noexcept;
  void* owner;
};
static_assert(sizeof(StopCallbackRecord) <= sizeof(StopCallbackRoom),
              "StopCallbackRoom is too small for the node: grow it in stop_token.h");
static_assert(alignof(StopCallbackRecord) <= alignof(StopCallbackRoom));

void RunRecord(StopState::Callback* node) noexcept {
  auto* record = static_cast<StopCallbackRecord*>(node);
  record->function(record->owner);
}

StopCallbackRecord* RecordIn(StopCallbackRoom& room) {
  return std::launder(reinterpret_cast<StopCallbackRecord*>(room.bytes));
}

}  // namespace

StopState* StopStateCreate() { return StopState::Create(); }
void StopStateRef(StopState* state) { state->Ref(); }
void StopStateUnref(StopState* state) { state->Unref(); }
bool StopStateRequested(const StopState* state) { return state->stop_requested(); }
bool StopStateRequest(StopState* state) { return state->RequestStop(); }

bool StopCallbackAdd(StopState* state, StopCallbackRoom& room,
                     void (*run)(void* owner) noexcept, void* owner) {
  // Default-initialized as the node a StopCallback embedded was: Add() sets the links.
  auto* record = new (room.bytes) StopCallbackRecord;
  record->run = &RunRecord;
  record->function = run;
  record->owner = owner;
  if (state->Add(record)) return true;
  record->~StopCallbackRecord();  // requested already: never registered
  return false;
}

void StopCallbackRemove(StopState* state, StopCallbackRoom& room) {
  StopCallbackRecord* record = RecordIn(room);
  state->Remove(record);
  record->~StopCallbackRecord();
}

}  // namespace spindle::internal
