// A UPC++ translation unit that includes UPC++'s component headers, not
// <upcxx/upcxx.hpp>, as some programs do, after `using namespace std;`, as
// many programs do: the headers must parse and instantiate with every name
// of std visible (`x.rank < 0` in a header would read as std::rank<...>).
#include <array>
#include <cstddef>
#include <utility>
#include <vector>
using namespace std;
#include <upcxx/allocate.hpp>
#include <upcxx/atomic.hpp>
#include <upcxx/barrier.hpp>
#include <upcxx/bind.hpp>
#include <upcxx/broadcast.hpp>
#include <upcxx/copy.hpp>
#include <upcxx/cuda.hpp>
#include <upcxx/device_allocator.hpp>
#include <upcxx/dist_object.hpp>
#include <upcxx/future.hpp>
#include <upcxx/global_ptr.hpp>
#include <upcxx/memory_kind.hpp>
#include <upcxx/persona.hpp>
#include <upcxx/reduce.hpp>
#include <upcxx/rget.hpp>
#include <upcxx/rput.hpp>
#include <upcxx/rpc.hpp>
#include <upcxx/serialization.hpp>
#include <upcxx/team.hpp>
#include <upcxx/vis.hpp>
#include <upcxx/view.hpp>

// The value at p (local), read through the component headers' names.
int upcxx_component_read(upcxx::global_ptr<int> p) { return upcxx::rget(p).wait(); }

// Compiled, not run: the templates of each component instantiated here.
void upcxx_component_instances(upcxx::global_ptr<int> p, int* buf, upcxx::atomic_domain<int>& ad,
                               upcxx::dist_object<int>& d) {
  vector<pair<upcxx::global_ptr<int>, size_t>> rf{{p, 2}};
  vector<pair<int*, size_t>> lf{{buf, 2}};
  upcxx::rput_irregular(lf.begin(), lf.end(), rf.begin(), rf.end()).wait();
  upcxx::rget_irregular(rf.begin(), rf.end(), lf.begin(), lf.end()).wait();
  vector<upcxx::global_ptr<int>> rr{p, p + 2};
  vector<int*> lr{buf, buf + 2};
  upcxx::rput_regular(lr.begin(), lr.end(), 2, rr.begin(), rr.end(), 2).wait();
  upcxx::rget_regular(rr.begin(), rr.end(), 2, lr.begin(), lr.end(), 2).wait();
  const array<ptrdiff_t, 1> stride{sizeof(int)};
  const array<size_t, 1> extent{2};
  upcxx::rput_strided<1>(buf, stride, p, stride, extent).wait();
  upcxx::rget_strided<1>(p, stride, buf, stride, extent).wait();
  upcxx::copy(p, buf, 2).wait();
  ad.fetch_add(p, 1, memory_order_relaxed).wait();
  (void)upcxx::rpc(0, [](upcxx::dist_object<int>& o, vector<int> v) { return *o + int(v.size()); }, d,
                   vector<int>{1}).wait();
  (void)upcxx::reduce_all(1, upcxx::op_fast_add).wait();
  (void)upcxx::broadcast(1, 0).wait();
  (void)d.fetch(0).wait();
}
