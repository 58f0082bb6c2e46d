// Validation of an update's indices and their binning by owner.
#include <climits>
#include <stdexcept>
#include <string>

#include "accrete/detail/assembly_engine.hpp"
#include "assembly/common.hpp"

namespace accrete::detail {

void assembly_engine::validate(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols,
                               std::int64_t ld, matrix_layout lay, const void* block) const {
  require_usable("update");
  // Built only on failure: update() is hot.
  auto who = [&] { return std::string(shape_.name) + "::update: "; };
  for (std::size_t k = 0; k < rows.size(); ++k)
    if (rows[k] < 0 || rows[k] >= shape_.rows)
      throw std::out_of_range(who() + "row index " + std::to_string(rows[k]) + " at position " + std::to_string(k) +
                              " is outside [0, " + std::to_string(shape_.rows) + ")");
  for (std::size_t k = 0; k < cols.size(); ++k)
    if (cols[k] < 0 || cols[k] >= shape_.cols)
      throw std::out_of_range(who() + "column index " + std::to_string(cols[k]) + " at position " +
                              std::to_string(k) + " is outside [0, " + std::to_string(shape_.cols) + ")");
  validate_block(rows.size(), cols.size(), ld, lay, block);
}

void assembly_engine::validate_block(std::size_t nr, std::size_t nc, std::int64_t ld, matrix_layout lay,
                                     const void* block) const {
  require_usable("update");
  auto who = [&] { return std::string(shape_.name) + "::update: "; };
  const std::int64_t need = std::int64_t(lay == matrix_layout::col_major ? nr : nc);
  if (ld < 0 || ld < need)
    throw std::invalid_argument(who() + "leading dimension " + std::to_string(ld) + " is smaller than the block's " +
                                (lay == matrix_layout::col_major ? "row" : "column") + " count " +
                                std::to_string(need));
  if (!block && nr > 0 && nc > 0) throw std::invalid_argument(who() + "null block");
  if (nr > INT32_MAX || nc > INT32_MAX) throw std::invalid_argument(who() + "more than 2^31-1 indices");
}

void assembly_engine::bin(std::span<const std::int64_t> rows, std::span<const std::int64_t> cols, binned& b) {
  // Counting sort of one index list by owning part (each index split once).
  auto group = [](std::span<const std::int64_t> ix, const axis_map& map, std::vector<std::int32_t>& start,
                  std::vector<std::int32_t>& pos, std::vector<std::int32_t>& loc) {
    const int np = map.parts;
    start.assign(np + 1, 0);
    pos.resize(ix.size());
    loc.resize(ix.size());
    if (np == 1) {  // one part: the order is the update's, local == global
      start[1] = std::int32_t(ix.size());
      for (std::size_t k = 0; k < ix.size(); ++k) {
        pos[k] = std::int32_t(k);
        loc[k] = std::int32_t(ix[k]);
      }
      return;
    }
    ACCRETE_THREAD_LOCAL std::vector<int> part;
    ACCRETE_THREAD_LOCAL std::vector<std::int32_t> where, fill;
    part.resize(ix.size());
    where.resize(ix.size());
    for (std::size_t k = 0; k < ix.size(); ++k) {
      map.split(ix[k], part[k], where[k]);
      ++start[part[k] + 1];
    }
    for (int p = 0; p < np; ++p) start[p + 1] += start[p];
    fill.assign(start.begin(), start.end() - 1);
    for (std::size_t k = 0; k < ix.size(); ++k) {
      const std::int32_t at = fill[part[k]]++;
      pos[at] = std::int32_t(k);
      loc[at] = where[k];
    }
  };
  const axis_map &rm = shape_.row_map, &cm = shape_.col_map;
  group(rows, rm, b.row_start, b.row_pos, b.row_loc);
  group(cols, cm, b.col_start, b.col_pos, b.col_loc);
  b.targets.clear();
  for (int r = 0; r < rm.parts; ++r) {
    if (b.row_start[r] == b.row_start[r + 1]) continue;
    for (int c = 0; c < cm.parts; ++c)
      if (b.col_start[c] != b.col_start[c + 1]) b.targets.push_back(r * cm.parts + c);
  }
  // Random visiting order spreads concurrent origins over different targets.
  std::uint64_t s = mix(rng_.fetch_add(0x9e3779b97f4a7c15ULL, std::memory_order_relaxed));
  for (std::size_t k = b.targets.size(); k > 1; --k) std::swap(b.targets[k - 1], b.targets[splitmix(s) % k]);
}

}  // namespace accrete::detail
