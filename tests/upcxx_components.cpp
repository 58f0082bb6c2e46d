// A UPC++ translation unit that includes UPC++'s component headers, not
// <upcxx/upcxx.hpp>, as some programs do.
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
