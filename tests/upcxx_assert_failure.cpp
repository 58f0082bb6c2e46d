// A UPCXX_ASSERT_ALWAYS that fails: the condition, the place, the rank and
// the streamed message on stderr, then abort (tests/upcxx.cmake matches
// the line).
#include <upcxx/upcxx.hpp>

int main() {
  upcxx::init();
  int parts = 3;
  UPCXX_ASSERT_ALWAYS(parts == 4, "parts = " << parts);
  upcxx::finalize();
  return 0;
}
