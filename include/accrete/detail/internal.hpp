// Guard against including accrete's internal headers directly (as Kokkos
// does): accrete/detail/ is not API and changes without notice. Public
// headers define ACCRETE_PUBLIC_INCLUDE around their own includes; the
// library's sources and its white-box tests define ACCRETE_INTERNAL_INCLUDE.
// No #pragma once: every detail header checks on its first inclusion.
#if !defined(ACCRETE_PUBLIC_INCLUDE) && !defined(ACCRETE_INTERNAL_INCLUDE)
#error "accrete/detail/ headers are internal to accrete: include <accrete/accrete.hpp> or the public header you need"
#endif

// Per-thread scratch and queues. Under SimGrid SMPI (ACCRETE_SMPI) every
// simulated process runs on the same OS thread, so thread_local storage
// would be shared by all of them, and one process's scratch overwritten by
// another that runs while the first is switched out inside an MPI call.
// SMPI privatises static storage per simulated process instead (it loads
// one copy of the executable per process; ACCRETE_SMPI builds use
// -fno-gnu-unique so that statics of inline functions and templates are
// per copy too, see CMakeLists.txt), and no accrete code runs on two
// threads of one simulated process.
#ifndef ACCRETE_THREAD_LOCAL
#ifdef ACCRETE_SMPI
#define ACCRETE_THREAD_LOCAL static
#else
#define ACCRETE_THREAD_LOCAL thread_local
#endif
#endif
