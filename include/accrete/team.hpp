#pragma once
/// \file
// Teams: ordered sets of processes with their own MPI communicator.
#include <cstdint>
#include <vector>

#include <mpi.h>

namespace accrete {
namespace detail {
struct team_access;  // src/backend/mpi/team.cpp
}

/// An ordered subset of the world's processes. Each team holds a private MPI
/// communicator (never the user's), which `mpi_comm()` exposes so the user
/// can call MPI, BLACS or ScaLAPACK on the same processes.
///
/// Teams made by split() own their communicator and free it on destruction;
/// destroy a team on all its members (MPI_Comm_free is collective). Teams
/// are movable, not copyable. Not thread-safe.
class team {
 public:
  team() = default;
  /// Moves take the communicator; the moved-from team is empty.
  ///@{
  team(team&& o) noexcept;
  team& operator=(team&& o) noexcept;
  ///@}
  team(const team&) = delete;
  team& operator=(const team&) = delete;
  ~team();

  /// Rank of the caller in this team, and the team's size.
  ///@{
  int rank_me() const;
  int rank_n() const;
  ///@}
  /// World rank of team member `team_rank` (throws std::out_of_range).
  int to_world(int team_rank) const;
  /// Team rank of world rank `world_rank`, or -1 if not a member.
  int from_world(int world_rank) const;
  /// Collective over this team: like MPI_Comm_split.
  team split(int color, int key) const;
  /// The team's communicator (owned by the team; do not free it).
  MPI_Comm mpi_comm() const;

  /// Internal: wraps an existing communicator.
  team(MPI_Comm comm, bool owned);

 private:
  friend struct detail::team_access;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = -1;
  std::vector<int> world_ranks_;
  // The same on every member: names the team in ACCRETE_COLLECTIVE_TIMEOUT's
  // diagnosis (a hash of its parent's key, the split's color and the
  // parent's split count).
  std::uint64_t key_ = 0;
  mutable std::uint64_t splits_ = 0;
};

/// All processes (a private duplicate of MPI_COMM_WORLD).
team& world();
/// The processes of the caller's node (pretend node under ACCRETE_NODE_SIZE),
/// whose segments the caller reaches by direct load/store.
team& local_team();

}  // namespace accrete
