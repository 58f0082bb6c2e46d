// RMA on a type that is neither trivially copyable nor declared trivially
// serializable must not compile, and the first error must say why in
// UPC++'s words (tests/upcxx.cmake compiles each CASE and matches it).
#include <upcxx/upcxx.hpp>

struct not_trivial {
  int x = 0;
  not_trivial() = default;
  not_trivial(const not_trivial& o) : x(o.x) {}
};

int main() {
  upcxx::init();
  upcxx::global_ptr<not_trivial> g = upcxx::new_<not_trivial>();
  not_trivial v;
#if CASE == 1
  upcxx::rput(v, g).wait();
#elif CASE == 2
  upcxx::rput(&v, g, 1).wait();
#elif CASE == 3
  v = upcxx::rget(g).wait();
#elif CASE == 4
  upcxx::rget(g, &v, 1).wait();
#elif CASE == 5
  upcxx::rput(v, g, upcxx::operation_cx::as_future()).wait();
#elif CASE == 6
  v = upcxx::rget(g, upcxx::operation_cx::as_future()).wait();
#endif
  upcxx::delete_(g);
  upcxx::finalize();
}
