// Copyright 2026 The Spindle Authors.

#include "sync/channel.h"

namespace spindle {

const char* ChannelStatusName(ChannelStatus status) {
  switch (status) {
    case ChannelStatus::kOk:
      return "ok";
    case ChannelStatus::kClosed:
      return "closed";
    case ChannelStatus::kWouldBlock:
      return "would_block";
    case ChannelStatus::kTimedOut:
      return "timed_out";
    case ChannelStatus::kCancelled:
      return "cancelled";
  }
  return "?";
}

}  // namespace spindle
