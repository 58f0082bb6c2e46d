// Which build of the assembly kernels runs (src/assembly/simd.hpp).
#include "assembly/simd.hpp"

#include <string>

#include "accrete/detail/env.hpp"
#include "accrete/error.hpp"

namespace accrete::detail {

simd_isa simd_isa_from_env() {
  const auto e = env_word("ACCRETE_SIMD");
  if (e && *e == "baseline") return simd_isa::baseline;
  if (e && *e != "auto") throw error("accrete: ACCRETE_SIMD='" + *e + "' is not auto or baseline");
#ifdef ACCRETE_SIMD_AVX2
  if (__builtin_cpu_supports("avx2")) return simd_isa::avx2;
#endif
  return simd_isa::baseline;
}

simd_isa simd_level() {
  static const simd_isa isa = simd_isa_from_env();
  return isa;
}

}  // namespace accrete::detail
