// Copyright 2026 The Spindle Authors.
//
// The echo RPC wire format: a frame is a 4-byte big-endian payload length followed by
// that many payload bytes. The client sends request frames; the server answers each
// with the same frame, in order. A connection carries any number of frames both ways
// (requests may be pipelined); either side ends it by closing.

#ifndef SPINDLE_EXAMPLES_ECHO_RPC_ECHO_PROTOCOL_H_
#define SPINDLE_EXAMPLES_ECHO_RPC_ECHO_PROTOCOL_H_

#include <cstddef>
#include <cstdint>

namespace spindle::examples::echo {

inline constexpr std::size_t kFrameHeaderBytes = 4;
// The largest payload either side accepts by default (16 MiB).
inline constexpr std::size_t kDefaultMaxPayloadBytes = std::size_t{16} << 20;

inline void EncodeFrameHeader(std::uint32_t payload_bytes, char* out) {
  out[0] = static_cast<char>(payload_bytes >> 24);
  out[1] = static_cast<char>(payload_bytes >> 16);
  out[2] = static_cast<char>(payload_bytes >> 8);
  out[3] = static_cast<char>(payload_bytes);
}

inline std::uint32_t DecodeFrameHeader(const char* in) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

}  // namespace spindle::examples::echo

#endif  // SPINDLE_EXAMPLES_ECHO_RPC_ECHO_PROTOCOL_H_
