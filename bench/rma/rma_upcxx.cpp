// bench_rma's upcxx series, written against the UPC++ API only.
#include "rma_upcxx.hpp"

#include <upcxx/upcxx.hpp>

namespace rma_upcxx {

void put_lat(const std::byte* src, gptr target, std::size_t n, std::size_t iters) {
  for (std::size_t i = 0; i < iters; ++i) upcxx::rput(src, target, n).wait();
}

void get_lat(gptr target, std::byte* dst, std::size_t n, std::size_t iters) {
  for (std::size_t i = 0; i < iters; ++i) upcxx::rget(target, dst, n).wait();
}

void put_flood(const std::byte* src, gptr target, std::size_t n, std::size_t ops, std::size_t slots,
               std::size_t iters) {
  for (std::size_t it = 0; it < iters; ++it) {
    upcxx::promise<> done;
    for (std::size_t i = 0; i < ops; ++i) {
      const std::size_t off = (i % slots) * n;
      upcxx::rput(src + off, target + std::ptrdiff_t(off), n, upcxx::operation_cx::as_promise(done));
    }
    done.finalize().wait();
  }
}

void get_flood(gptr target, std::byte* dst, std::size_t n, std::size_t ops, std::size_t slots, std::size_t iters) {
  for (std::size_t it = 0; it < iters; ++it) {
    upcxx::promise<> done;
    for (std::size_t i = 0; i < ops; ++i) {
      const std::size_t off = (i % slots) * n;
      upcxx::rget(target + std::ptrdiff_t(off), dst + off, n, upcxx::operation_cx::as_promise(done));
    }
    done.finalize().wait();
  }
}

}  // namespace rma_upcxx
