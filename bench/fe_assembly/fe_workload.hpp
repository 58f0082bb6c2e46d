#pragma once
// The finite-element assembly workload (../shared/bench/fe-assembly.md):
// Q1 hexahedra on an n x n x n grid, d unknowns per node, slab or rcb
// partitions, node ownership and numbering, and the element matrices.
// Every implementation of bench_fe_assembly takes its elements, rows and
// values from here, so their results compare bit for bit.
//
// Where the spec leaves a choice open, this file makes it (and the README
// says so): rcb's longest axis breaks ties x, then y, then z; a cut sits at
// lo + floor(L * floor(q/2) / q), is moved by (h mod 3) - 1 layers and
// clamped to [lo + 1, hi - 1] (a box one layer wide is not cut, and its
// processes beyond the first get no elements).
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fe {

inline std::uint64_t splitmix_next(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct preset {
  std::string name;
  int n, d, rounds;
};

inline preset preset_named(const std::string& s) {
  if (s == "tiny") return {s, 8, 1, 3};
  if (s == "small") return {s, 32, 3, 5};
  if (s == "paper") return {s, 64, 3, 5};
  if (s == "large") return {s, 96, 3, 3};
  throw std::invalid_argument("fe: unknown preset '" + s + "' (tiny, small, paper or large)");
}

/// The mesh, its partition and its numbering, the same on every process.
struct mesh {
  int n = 0, d = 1, np = 1;
  std::uint64_t seed = 42;
  std::vector<int> owner_of_element;     // by lexicographic (z, y, x) element index
  std::vector<std::int64_t> node_number;  // new node number, by lexicographic node index
  std::vector<std::int64_t> row_start;   // rank p owns rows [row_start[p], row_start[p + 1])

  std::int64_t nodes() const { return std::int64_t(n + 1) * (n + 1) * (n + 1); }
  std::int64_t unknowns() const { return nodes() * d; }
  int element_unknowns() const { return 8 * d; }
  std::int64_t node_index(int x, int y, int z) const { return (std::int64_t(z) * (n + 1) + y) * (n + 1) + x; }

  /// The 8d global unknowns of element e, in the spec's local order.
  void element_rows(std::int64_t e, std::int64_t* out) const {
    const int x = int(e % n), y = int((e / n) % n), z = int(e / (std::int64_t(n) * n));
    static constexpr int off[8][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                      {0, 0, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 1}};
    for (int a = 0; a < 8; ++a) {
      const std::int64_t nn = node_number[std::size_t(node_index(x + off[a][0], y + off[a][1], z + off[a][2]))];
      for (int k = 0; k < d; ++k) out[a * d + k] = nn * d + k;
    }
  }
};

namespace detail {
struct box {
  int lo[3], hi[3];
};
inline void rcb(const box& b, int p0, int q, std::uint64_t& s, int n, std::vector<int>& owner) {
  if (q == 1) {
    for (int z = b.lo[2]; z < b.hi[2]; ++z)
      for (int y = b.lo[1]; y < b.hi[1]; ++y)
        for (int x = b.lo[0]; x < b.hi[0]; ++x) owner[(std::size_t(z) * n + y) * n + x] = p0;
    return;
  }
  int axis = 0;
  for (int a = 1; a < 3; ++a)
    if (b.hi[a] - b.lo[a] > b.hi[axis] - b.lo[axis]) axis = a;
  const int L = b.hi[axis] - b.lo[axis], ql = q / 2;
  const std::uint64_t h = splitmix_next(s);
  int cut = b.lo[axis] + int(std::int64_t(L) * ql / q) + int(h % 3) - 1;
  box lower = b, upper = b;
  if (L < 2) {
    // One layer: nothing to cut; the lower half takes it all.
    rcb(b, p0, ql, s, n, owner);
    return;
  }
  cut = std::clamp(cut, b.lo[axis] + 1, b.hi[axis] - 1);
  lower.hi[axis] = cut;
  upper.lo[axis] = cut;
  rcb(lower, p0, ql, s, n, owner);
  rcb(upper, p0 + ql, q - ql, s, n, owner);
}
}  // namespace detail

/// Builds the partition ("slab" or "rcb") and the numbering for np processes.
inline mesh make_mesh(int n, int d, int np, const std::string& partition, std::uint64_t seed = 42) {
  mesh m;
  m.n = n;
  m.d = d;
  m.np = np;
  m.seed = seed;
  const std::int64_t ne = std::int64_t(n) * n * n;
  m.owner_of_element.assign(std::size_t(ne), 0);
  if (partition == "slab") {
    for (std::int64_t e = 0; e < ne; ++e) {
      const std::int64_t z = e / (std::int64_t(n) * n);
      // Layers [floor(p n / P), floor((p + 1) n / P)) go to p.
      int p = int((z * np) / n);
      while (p + 1 < np && (std::int64_t(p + 1) * n) / np <= z) ++p;
      while (p > 0 && (std::int64_t(p) * n) / np > z) --p;
      m.owner_of_element[std::size_t(e)] = p;
    }
  } else if (partition == "rcb") {
    std::uint64_t s = seed ^ 0xfe;
    detail::rcb({{0, 0, 0}, {n, n, n}}, 0, np, s, n, m.owner_of_element);
  } else {
    throw std::invalid_argument("fe: unknown partition '" + partition + "' (slab or rcb)");
  }
  // Node owner: the lowest rank among the elements touching it.
  std::vector<int> node_owner(std::size_t(m.nodes()), np);
  for (int z = 0; z < n; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const int p = m.owner_of_element[(std::size_t(z) * n + y) * n + x];
        for (int c = 0; c < 8; ++c) {
          int& o = node_owner[std::size_t(m.node_index(x + (c & 1), y + ((c >> 1) & 1), z + (c >> 2)))];
          o = std::min(o, p);
        }
      }
  // Numbering by owner, lexicographic within each owner.
  std::vector<std::int64_t> count(std::size_t(np) + 1, 0);
  for (int o : node_owner) ++count[std::size_t(o) + 1];
  for (int p = 0; p < np; ++p) count[std::size_t(p) + 1] += count[std::size_t(p)];
  m.row_start.resize(std::size_t(np) + 1);
  for (int p = 0; p <= np; ++p) m.row_start[std::size_t(p)] = count[std::size_t(p)] * d;
  m.node_number.resize(node_owner.size());
  std::vector<std::int64_t> next(count.begin(), count.end() - 1);
  for (std::size_t i = 0; i < node_owner.size(); ++i) m.node_number[i] = next[std::size_t(node_owner[i])]++;
  return m;
}

/// Element e's matrix in round r, row-major (symmetric, so also
/// column-major), 8d x 8d, into K.
inline void element_matrix(const mesh& m, int round, std::int64_t e, double* K) {
  const int ne = m.element_unknowns();
  std::uint64_t s = m.seed ^ (std::uint64_t(round) << 48) ^ std::uint64_t(e);
  const double c = double(1 + splitmix_next(s) % 4);
  for (int a = 0; a < ne; ++a)
    for (int b = a; b < ne; ++b) {
      const std::uint64_t t = splitmix_next(s);
      const double v = 0.25 * c * (a == b ? double(ne + 1) : -double(1 + t % 3) / 8.0);
      K[a * ne + b] = v;
      K[b * ne + a] = v;
    }
}

}  // namespace fe
