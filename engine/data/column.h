#pragma once
// One column of a Batch. Three kinds share one representation:
//  * dense:  shape [rows, d1, ...], one contiguous buffer;
//  * ragged: row i has shape [len_i, inner...]; one contiguous values buffer
//            plus rows+1 int64 offsets (in items of `inner` elements);
//  * object: ragged u8 without inner shape (opaque bytes per row).
// Buffers are BufferRefs: a pointer plus a shared owner, so a column can be a
// view into a leased transfer buffer, a slice of another column, or own a
// vector, and selecting fields or row ranges never copies.
// Ragged offsets need not start at 0 (a slice keeps the parent's values):
// row i covers values[(offsets[i] - valueBase) * itemBytes, ...).

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "engine/core/status.h"
#include "engine/data/dtype.h"

namespace tide::data {

struct BufferRef {
  std::shared_ptr<const void> owner;  // keeps the bytes alive
  const uint8_t* data = nullptr;
  uint64_t size = 0;

  static BufferRef own(std::vector<uint8_t> bytes);
  template <typename T>
  static BufferRef ownVector(std::vector<T> v) {
    auto p = std::make_shared<std::vector<T>>(std::move(v));
    return BufferRef{p, reinterpret_cast<const uint8_t*>(p->data()), p->size() * sizeof(T)};
  }
  BufferRef sub(uint64_t offset, uint64_t length) const {
    return BufferRef{owner, data + offset, length};
  }
};

// Product of dims; fails on a negative dim or overflow past 2^62.
Result<uint64_t> shapeElements(std::span<const int64_t> dims);

enum class ColumnKind : uint8_t { kDense = 0, kRagged = 1, kObject = 2 };
const char* columnKindName(ColumnKind k);

class Column {
 public:
  Column() = default;

  // shape[0] is the row count; data.size must equal prod(shape) * dtype size.
  static Result<Column> dense(DType dtype, std::vector<int64_t> shape, BufferRef data);
  // offsets: rows+1 int64, non-decreasing, offsets[0] >= valueBase.
  static Result<Column> ragged(DType dtype, std::vector<int64_t> inner, BufferRef values,
                               BufferRef offsets, int64_t valueBase = 0);
  static Result<Column> object(BufferRef bytes, BufferRef offsets, int64_t valueBase = 0);

  // Owning conveniences (tests, generators).
  template <typename T>
  static Result<Column> fromRows(const std::vector<std::vector<T>>& rows);
  template <typename T>
  static Result<Column> fromDense(std::vector<T> values, std::vector<int64_t> shape);

  ColumnKind kind() const { return kind_; }
  DType dtype() const { return dtype_; }
  int64_t rows() const { return rows_; }
  bool isRagged() const { return kind_ != ColumnKind::kDense; }
  // dense: full shape; ragged/object: inner (per-item) shape.
  const std::vector<int64_t>& shape() const { return shape_; }
  // Bytes of one item: dense row, or one ragged item (inner elements).
  uint64_t itemBytes() const { return itemBytes_; }
  int64_t valueBase() const { return valueBase_; }

  const BufferRef& data() const { return data_; }
  const BufferRef& offsetsRef() const { return offsets_; }
  std::span<const int64_t> offsets() const {
    return {reinterpret_cast<const int64_t*>(offsets_.data), offsets_.size / sizeof(int64_t)};
  }
  // Bytes of the values this column's rows cover (dense: all of data).
  std::span<const uint8_t> payload() const;
  uint64_t payloadBytes() const { return payload().size(); }
  // Items in row i (dense: 1).
  int64_t rowLength(int64_t i) const { return isRagged() ? offsets()[i + 1] - offsets()[i] : 1; }
  std::span<const uint8_t> rowBytes(int64_t i) const;
  template <typename T>
  std::span<const T> row(int64_t i) const {
    auto b = rowBytes(i);
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }
  template <typename T>
  std::span<const T> values() const {
    auto b = payload();
    return {reinterpret_cast<const T*>(b.data()), b.size() / sizeof(T)};
  }

  // Rows [begin, end) as a view (no copy).
  Result<Column> slice(int64_t begin, int64_t end) const;
  // Arbitrary rows, gathered into a new owning column.
  Result<Column> gather(std::span<const int64_t> rows) const;
  // Rows of several columns of the same kind/dtype/shape, into a new column.
  static Result<Column> concat(std::span<const Column* const> parts);
  // Checks internal invariants (offsets monotonic, sizes); a column built by
  // the factories already holds them.
  Status validate() const;

 private:
  ColumnKind kind_ = ColumnKind::kDense;
  DType dtype_ = DType::kU8;
  int64_t rows_ = 0;
  std::vector<int64_t> shape_;
  uint64_t itemBytes_ = 0;
  int64_t valueBase_ = 0;
  BufferRef data_;
  BufferRef offsets_;
};

template <typename T>
Result<Column> Column::fromRows(const std::vector<std::vector<T>>& rows) {
  std::vector<int64_t> off(rows.size() + 1, 0);
  size_t total = 0;
  for (size_t i = 0; i < rows.size(); ++i)
    off[i + 1] = static_cast<int64_t>(total += rows[i].size());
  std::vector<T> vals;
  vals.reserve(total);
  for (const auto& r : rows) vals.insert(vals.end(), r.begin(), r.end());
  return ragged(dtypeOf<T>(), {}, BufferRef::ownVector(std::move(vals)),
                BufferRef::ownVector(std::move(off)));
}

template <typename T>
Result<Column> Column::fromDense(std::vector<T> values, std::vector<int64_t> shape) {
  return dense(dtypeOf<T>(), std::move(shape), BufferRef::ownVector(std::move(values)));
}

}  // namespace tide::data
