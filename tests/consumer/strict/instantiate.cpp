// Every public class template instantiated for the element types the library
// supports, so that strict warnings reach the template bodies users compile.
#include <complex>
#include <cstdint>
#include <vector>
#include <accrete/accrete.hpp>
#include <accrete/array/counter.hpp>
#include <accrete/array/dist_array.hpp>
#include <accrete/matrix/convergent_matrix.hpp>
template class accrete::convergent_matrix<float>;
template class accrete::convergent_matrix<double>;
template class accrete::convergent_matrix<std::complex<float>>;
template class accrete::convergent_matrix<std::complex<double>>;
template class accrete::dist_array<float>;
template class accrete::dist_array<double>;
template class accrete::dist_array<std::int32_t>;
template class accrete::dist_array<std::int64_t>;
template class accrete::dist_array<std::complex<float>>;
template class accrete::dist_array<std::complex<double>>;
template class accrete::atomic_domain<std::int32_t>;
template class accrete::atomic_domain<std::int64_t>;
template class accrete::atomic_domain<std::uint64_t>;
template class accrete::atomic_domain<float>;
template class accrete::atomic_domain<double>;
template class accrete::global_ptr<double>;
template class accrete::global_ptr<char>;
template class accrete::dist_object<std::vector<int>>;
template class accrete::future<int>;
template class accrete::future<>;
template class accrete::promise<int>;

// The UPC++ layer: its class templates and the completion machinery of
// every RMA call.
#include <upcxx/upcxx.hpp>
template class upcxx::atomic_domain<std::int64_t>;
template class upcxx::atomic_domain<double>;
void upcxx_instantiations(upcxx::global_ptr<int> g, const int* src, int* dst) {
  upcxx::promise<> p;
  upcxx::promise<int> v;
  auto [op, sf] = upcxx::rput(src, g, 4, upcxx::operation_cx::as_future() | upcxx::source_cx::as_future());
  upcxx::rput(src, g, 4, upcxx::operation_cx::as_promise(p) | upcxx::source_cx::as_buffered());
  upcxx::rput(7, g, upcxx::source_cx::as_blocking() | upcxx::remote_cx::as_rpc([] {}));
  upcxx::rget(g, dst, 4, upcxx::operation_cx::as_promise(p));
  upcxx::rget(g, upcxx::operation_cx::as_promise(v));
  upcxx::when_all(op, sf, upcxx::rget(g), upcxx::copy(g, g + 4, 4)).wait();
  p.finalize().wait();
  v.finalize().wait();
  upcxx::say() << upcxx::rank_me();
  upcxx::current_persona().lpc([] { return 1; }).wait();
  upcxx::master_persona().lpc_ff([] {});
  upcxx::rput(1, g, upcxx::operation_cx::as_defer_future() | upcxx::operation_cx::as_lpc(upcxx::master_persona(), [] {}))
      .wait();
  upcxx::rget(g, upcxx::operation_cx::as_lpc(upcxx::master_persona(), [](int) {}));
  upcxx::rpc(0, upcxx::operation_cx::as_future(), [](int x) { return x; }, 1).wait();
  upcxx::rpc_ff(0, upcxx::source_cx::as_future(), [] {}).wait();
}
