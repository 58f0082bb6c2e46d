#pragma once
/// \file
// Teams: ordered sets of processes with their own MPI communicator.
#include <compare>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <utility>
#include <vector>

#include <mpi.h>

#include "accrete/future.hpp"

namespace accrete {
namespace detail {
struct team_access;  // src/backend/mpi/team.cpp
}
class team;

/// The synchronization a collective destroy starts with (UPC++'s
/// entry_barrier): none, one with internal progress only, or one with
/// user-level progress.
enum class entry_barrier { none, internal, user };

namespace detail {
/// How team_id and dist_id print: `kind(a:b:...)`, the parts in hexadecimal
/// (the stream's own format flags are left as they were).
inline std::ostream& print_id(std::ostream& os, const char* kind, std::initializer_list<std::uint64_t> parts) {
  std::ios_base::fmtflags flags = os.flags();
  os << kind << '(' << std::hex;
  const char* sep = "";
  for (std::uint64_t p : parts) {
    os << sep << p;
    sep = ":";
  }
  os.flags(flags);
  return os << ')';
}
}  // namespace detail

/// A team's name, the same on every member and trivially copyable, so it
/// can travel in an RPC (UPC++'s team_id). here() finds the caller's team
/// of that name.
class team_id {
 public:
  /// The null id (names no team).
  team_id() = default;
  /// The caller's team with this id; throws accrete::error if the caller
  /// has no such team alive (not a member, destroyed, or not yet split).
  team& here() const;
  /// A future of the caller's team with this id: ready at once if the
  /// caller has it, otherwise during the user-level progress after the
  /// caller creates it (split or create). It stays unready if the caller
  /// never does (not a member). Throws accrete::error for the null id.
  future<team&> when_here() const;
  /// Ids compare by the team they name, in an order that is the same on
  /// every process (so ids can key a std::map or, hashed, an unordered one).
  ///@{
  friend bool operator==(const team_id&, const team_id&) = default;
  friend auto operator<=>(const team_id&, const team_id&) = default;
  ///@}
  /// Writes the id as `team_id(key)`, the key in hexadecimal.
  friend std::ostream& operator<<(std::ostream& os, const team_id& id) {
    return detail::print_id(os, "team_id", {id.key_});
  }

 private:
  friend class team;
  friend struct std::hash<team_id>;
  explicit team_id(std::uint64_t key) noexcept : key_(key) {}
  std::uint64_t key_ = 0;
};

/// An ordered subset of the world's processes. Each team holds a private MPI
/// communicator (never the user's), which `mpi_comm()` exposes so the user
/// can call MPI, BLACS or ScaLAPACK on the same processes.
///
/// Teams made by split() own their communicator and free it on destruction;
/// destroy a team on all its members (MPI_Comm_free is collective). Teams
/// are movable, not copyable. Not thread-safe: in the par thread mode
/// split, create and destroy throw accrete::error off the master persona's
/// thread.
class team {
 public:
  team() = default;
  /// Moves take the communicator; the moved-from team is empty (inactive).
  /// Assigning onto a team with a communicator frees it first (collective
  /// over that team, as destroy()). world() and local_team() cannot be
  /// moved from or assigned to (accrete::error).
  ///@{
  team(team&& o);
  team& operator=(team&& o);
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
  ///@{
  int to_world(int team_rank) const;
  int operator[](int team_rank) const { return to_world(team_rank); }
  ///@}
  /// Team rank of world rank `world_rank`, or -1 if not a member.
  int from_world(int world_rank) const;
  /// Team rank of world rank `world_rank`, or `otherwise` if not a member.
  int from_world(int world_rank, int otherwise) const {
    const int r = from_world(world_rank);
    return r < 0 ? otherwise : r;
  }
  /// The color of a member that joins no new team in split() (UPC++'s
  /// team::color_none; MPI_UNDEFINED): it gets an inactive team.
  static constexpr int color_none = MPI_UNDEFINED;
  /// Collective over this team: like MPI_Comm_split.
  team split(int color, int key) const;
  /// Collective over this team: a new team of the members whose ranks in
  /// this team the caller lists, in that order (UPC++'s team::create).
  /// Members of one new team pass the same list; the lists of different new
  /// teams must not overlap; a process in no new team passes an empty list
  /// and gets an empty team. A rank out of range, a repeated rank, or a
  /// non-empty list without the caller's own rank throws std::invalid_argument
  /// on the caller and accrete::error on the other members (nobody waits).
  template <class Container>
  team create(const Container& team_ranks) const {
    std::vector<int> v;
    for (const auto& r : team_ranks) v.push_back(int(r));
    return create_from(v);
  }
  /// The team's communicator (owned by the team; do not free it).
  MPI_Comm mpi_comm() const;
  /// This team's name on every member (see team_id).
  team_id id() const noexcept { return team_id(key_); }
  /// Whether the team has a communicator (not default-constructed, moved
  /// from or destroyed).
  bool is_active() const noexcept { return comm_ != MPI_COMM_NULL; }
  /// Collective over the team: waits for every member (a barrier, whatever
  /// `lev` says: freeing the communicator is collective anyway), then
  /// frees the communicator; the team is empty afterwards, as if moved
  /// from. world() and local_team() cannot be destroyed (accrete::error).
  void destroy(entry_barrier lev = entry_barrier::user);

  /// Internal: wraps an existing communicator.
  team(MPI_Comm comm, bool owned);
  /// Internal: create() over a plain list.
  team create_from(const std::vector<int>& team_ranks) const;

 private:
  friend struct detail::team_access;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = -1;
  std::vector<int> world_ranks_;
  // (world rank, team rank) sorted by world rank: from_world is a binary
  // search (UPC++ programs ask local_team_contains once per message).
  std::vector<std::pair<int, int>> by_world_;
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

// Doxygen 1.9 cannot place this specialization of std::hash: hidden from it.
/// \cond
/// Hashes a team_id (UPC++'s team_id is hashable).
template <>
struct std::hash<accrete::team_id> {
  std::size_t operator()(const accrete::team_id& id) const noexcept { return std::hash<std::uint64_t>{}(id.key_); }
};
/// \endcond
