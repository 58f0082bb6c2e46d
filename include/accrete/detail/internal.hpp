// Guard against including accrete's internal headers directly (as Kokkos
// does): accrete/detail/ is not API and changes without notice. Public
// headers define ACCRETE_PUBLIC_INCLUDE around their own includes; the
// library's sources and its white-box tests define ACCRETE_INTERNAL_INCLUDE.
// No #pragma once: every detail header checks on its first inclusion.
#if !defined(ACCRETE_PUBLIC_INCLUDE) && !defined(ACCRETE_INTERNAL_INCLUDE)
#error "accrete/detail/ headers are internal to accrete: include <accrete/accrete.hpp> or the public header you need"
#endif
