#pragma once
// Collectives over teams.
#include "accrete/team.hpp"

namespace accrete {

/// Collective over `t`: returns when every member has entered. Makes
/// user-level progress while waiting (so RPCs other members depend on still
/// run) and acts as a memory fence: direct stores made before the barrier
/// are visible to every member after it.
void barrier(const team& t = world());

}  // namespace accrete
