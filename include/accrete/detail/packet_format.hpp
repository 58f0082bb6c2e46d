#pragma once
// The wire format of assembly packets, shared by the sender (packing), the
// receiver (parsing) and the fuzz target. Header-only and free of MPI.
//
//   packet = i32 nr | i32 nc | i32 lrow[nr] | i32 lcol[nc] | pad to 8 | T vals[nr*nc] (column-major)
//
// A message is a sequence of packets. The receiver validates a whole message
// before it applies any packet of it, so a corrupt or hostile message is
// rejected whole and never partly applied.
#include "accrete/detail/internal.hpp"
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "accrete/error.hpp"

namespace accrete::detail {

/// Bytes of an nr x nc packet of esize-byte values, or nullopt when that
/// does not fit in size_t (only a corrupt header can ask for that).
constexpr std::optional<std::size_t> packet_bytes(std::size_t nr, std::size_t nc, std::size_t esize) noexcept {
  std::size_t elems = 0, vals = 0;
  if (nr > INT32_MAX || nc > INT32_MAX) return std::nullopt;
  if (__builtin_mul_overflow(nr, nc, &elems) || __builtin_mul_overflow(elems, esize, &vals)) return std::nullopt;
  const std::size_t idx = (8 + 4 * (nr + nc) + 7) / 8 * 8;
  std::size_t total = 0;
  if (__builtin_add_overflow(idx, vals, &total)) return std::nullopt;
  return total;
}

/// One parsed packet (pointers into the message).
struct packet_view {
  const std::int32_t* lrow;
  std::int32_t nr;
  const std::int32_t* lcol;
  std::int32_t nc;
  const std::byte* values;  // nr * nc values, column-major
};

/// Checks every packet of `msg` against a local part of lrows x lcols,
/// then calls apply(packet_view) for each. Throws accrete::error naming the
/// first defect; apply is then never called. Returns the packet count.
template <class F>
std::size_t for_each_packet(std::span<const std::byte> msg, std::size_t esize, std::int64_t lrows, std::int64_t lcols,
                            F&& apply) {
  auto bad = [](std::size_t at, const std::string& why) {
    throw error("accrete: malformed assembly packet at byte " + std::to_string(at) + ": " + why);
  };
  auto walk = [&](bool run) {
    std::size_t at = 0, n = 0;
    while (at < msg.size()) {
      std::int32_t dims[2];
      if (msg.size() - at < sizeof dims) bad(at, "truncated header");
      std::memcpy(dims, msg.data() + at, sizeof dims);
      if (dims[0] < 0 || dims[1] < 0) bad(at, "negative dimensions");
      const auto bytes = packet_bytes(std::size_t(dims[0]), std::size_t(dims[1]), esize);
      if (!bytes || *bytes > msg.size() - at) bad(at, "dimensions run past the end of the message");
      // Index lists are 4-byte aligned: messages are built at 8-byte aligned
      // offsets (vectors) and packets are padded to 8 bytes.
      const std::byte* p = msg.data() + at + 8;
      packet_view v{reinterpret_cast<const std::int32_t*>(p), dims[0],
                    reinterpret_cast<const std::int32_t*>(p) + dims[0], dims[1],
                    msg.data() + at + (*bytes - std::size_t(dims[0]) * std::size_t(dims[1]) * esize)};
      if (!run) {
        for (std::int32_t k = 0; k < v.nr; ++k)
          if (v.lrow[k] < 0 || v.lrow[k] >= lrows) bad(at, "local row " + std::to_string(v.lrow[k]) + " out of range");
        for (std::int32_t k = 0; k < v.nc; ++k)
          if (v.lcol[k] < 0 || v.lcol[k] >= lcols)
            bad(at, "local column " + std::to_string(v.lcol[k]) + " out of range");
      } else {
        apply(v);
      }
      at += *bytes;
      ++n;
    }
    return n;
  };
  walk(false);
  return walk(true);
}

}  // namespace accrete::detail
