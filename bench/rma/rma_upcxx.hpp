#pragma once
// bench_rma's upcxx series: the same four kernels written the way a UPC++
// program writes them (rma_upcxx.cpp includes only <upcxx/upcxx.hpp>).
#include <cstddef>

#include "accrete/global_ptr.hpp"

namespace rma_upcxx {

using gptr = accrete::global_ptr<std::byte>;  // upcxx::global_ptr<std::byte> is this type

/// `iters` times: one operation, then wait for it.
void put_lat(const std::byte* src, gptr target, std::size_t n, std::size_t iters);
void get_lat(gptr target, std::byte* dst, std::size_t n, std::size_t iters);

/// `iters` times: `ops` operations (slot i % slots, n bytes apart) on one
/// promise, then wait for all.
void put_flood(const std::byte* src, gptr target, std::size_t n, std::size_t ops, std::size_t slots,
               std::size_t iters);
void get_flood(gptr target, std::byte* dst, std::size_t n, std::size_t ops, std::size_t slots, std::size_t iters);

}  // namespace rma_upcxx
