// Compiled by the internal_header_guard test, which expects it to fail:
// a user's file must not reach into accrete/detail/ directly.
#include "accrete/detail/backend.hpp"
int main() { return 0; }
