// upcxx_memberof on a class that is not standard-layout, and
// upcxx_memberof_general on a reference member, must not compile, and the
// first error must say why (tests/upcxx.cmake compiles each CASE).
#include <upcxx/upcxx.hpp>

struct access_mix {
  int visible = 0;

 private:
  int hidden_ = 0;
};
struct holds_ref {
  int x = 0;
  int& ref = x;
};

int main() {
  upcxx::init();
#if CASE == 1
  upcxx::global_ptr<access_mix> g = upcxx::new_<access_mix>();
  upcxx::global_ptr<int> m = upcxx_memberof(g, visible);
#elif CASE == 2
  upcxx::global_ptr<holds_ref> g = upcxx::new_<holds_ref>();
  auto m = upcxx_memberof_general(g, ref).wait();
#endif
  (void)m;
  upcxx::delete_(g);
  upcxx::finalize();
}
