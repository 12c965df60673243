#include "engine/data/column.h"

#include <cstring>
#include <string>

namespace tide::data {
namespace {

constexpr uint64_t kMaxElements = 1ull << 62;

Status invalid(const std::string& msg) {
  return TIDE_ERROR(Code::kInvalidArgument, msg);
}

}  // namespace

Result<uint64_t> shapeElements(std::span<const int64_t> dims) {
  uint64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return invalid("negative dimension " + std::to_string(d));
    if (d != 0 && n > kMaxElements / static_cast<uint64_t>(d))
      return invalid("shape overflows 2^62 elements");
    n *= static_cast<uint64_t>(d);
  }
  return n;
}

const char* columnKindName(ColumnKind k) {
  switch (k) {
    case ColumnKind::kDense:
      return "dense";
    case ColumnKind::kRagged:
      return "ragged";
    case ColumnKind::kObject:
      return "object";
  }
  return "invalid";
}

BufferRef BufferRef::own(std::vector<uint8_t> bytes) {
  return ownVector(std::move(bytes));
}

Result<Column> Column::dense(DType dtype, std::vector<int64_t> shape, BufferRef data) {
  if (dtypeSize(dtype) == 0) return invalid("invalid dtype");
  if (shape.empty()) return invalid("dense column needs a leading batch dimension");
  TIDE_ASSIGN_OR_RETURN(uint64_t elems, shapeElements(shape));
  TIDE_ASSIGN_OR_RETURN(uint64_t rowElems, shapeElements(std::span(shape).subspan(1)));
  if (elems * dtypeSize(dtype) != data.size)
    return invalid("dense " + std::string(dtypeName(dtype)) + " column: shape needs " +
                   std::to_string(elems * dtypeSize(dtype)) + " bytes, buffer has " +
                   std::to_string(data.size));
  Column c;
  c.kind_ = ColumnKind::kDense;
  c.dtype_ = dtype;
  c.rows_ = shape[0];
  c.shape_ = std::move(shape);
  c.itemBytes_ = rowElems * dtypeSize(dtype);
  c.data_ = std::move(data);
  return c;
}

Result<Column> Column::ragged(DType dtype, std::vector<int64_t> inner, BufferRef values,
                              BufferRef offsets, int64_t valueBase) {
  if (dtypeSize(dtype) == 0) return invalid("invalid dtype");
  TIDE_ASSIGN_OR_RETURN(uint64_t itemElems, shapeElements(inner));
  if (offsets.size < sizeof(int64_t) || offsets.size % sizeof(int64_t) != 0)
    return invalid("ragged offsets must hold rows+1 int64 values, got " +
                   std::to_string(offsets.size) + " bytes");
  if (reinterpret_cast<uintptr_t>(offsets.data) % alignof(int64_t) != 0)
    return invalid("ragged offsets are not 8-byte aligned");
  Column c;
  c.kind_ = ColumnKind::kRagged;
  c.dtype_ = dtype;
  c.rows_ = static_cast<int64_t>(offsets.size / sizeof(int64_t)) - 1;
  c.shape_ = std::move(inner);
  c.itemBytes_ = itemElems * dtypeSize(dtype);
  c.valueBase_ = valueBase;
  c.data_ = std::move(values);
  c.offsets_ = std::move(offsets);
  TIDE_RETURN_IF_ERROR(c.validate());
  return c;
}

Result<Column> Column::object(BufferRef bytes, BufferRef offsets, int64_t valueBase) {
  TIDE_ASSIGN_OR_RETURN(Column c,
                        ragged(DType::kU8, {}, std::move(bytes), std::move(offsets), valueBase));
  c.kind_ = ColumnKind::kObject;
  return c;
}

Status Column::validate() const {
  if (!isRagged()) return Status::ok();
  auto off = offsets();
  if (off.empty()) return invalid("ragged column without offsets");
  if (off[0] < valueBase_)
    return invalid("ragged offsets start at " + std::to_string(off[0]) + ", before value base " +
                   std::to_string(valueBase_));
  for (size_t i = 1; i < off.size(); ++i)
    if (off[i] < off[i - 1])
      return invalid("ragged offsets not monotonic at row " + std::to_string(i - 1) + " (" +
                     std::to_string(off[i - 1]) + " > " + std::to_string(off[i]) + ")");
  uint64_t items = static_cast<uint64_t>(off.back() - valueBase_);
  if (itemBytes_ != 0 && items > data_.size / itemBytes_)
    return invalid("ragged offsets reach item " + std::to_string(off.back()) +
                   " but the values buffer holds " + std::to_string(data_.size / itemBytes_));
  return Status::ok();
}

std::span<const uint8_t> Column::payload() const {
  if (!isRagged()) return {data_.data, data_.size};
  auto off = offsets();
  uint64_t b = static_cast<uint64_t>(off.front() - valueBase_) * itemBytes_;
  uint64_t e = static_cast<uint64_t>(off.back() - valueBase_) * itemBytes_;
  return {data_.data + b, e - b};
}

std::span<const uint8_t> Column::rowBytes(int64_t i) const {
  if (!isRagged()) return {data_.data + static_cast<uint64_t>(i) * itemBytes_, itemBytes_};
  auto off = offsets();
  uint64_t b = static_cast<uint64_t>(off[i] - valueBase_) * itemBytes_;
  uint64_t e = static_cast<uint64_t>(off[i + 1] - valueBase_) * itemBytes_;
  return {data_.data + b, e - b};
}

Result<Column> Column::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > rows_)
    return TIDE_ERROR(Code::kOutOfRange, "row range [" + std::to_string(begin) + ", " +
                                             std::to_string(end) + ") outside " +
                                             std::to_string(rows_) + " rows");
  Column c = *this;
  c.rows_ = end - begin;
  if (!isRagged()) {
    c.shape_[0] = c.rows_;
    c.data_ = data_.sub(static_cast<uint64_t>(begin) * itemBytes_, c.rows_ * itemBytes_);
  } else {
    c.offsets_ = offsets_.sub(static_cast<uint64_t>(begin) * sizeof(int64_t),
                              static_cast<uint64_t>(c.rows_ + 1) * sizeof(int64_t));
  }
  return c;
}

Result<Column> Column::gather(std::span<const int64_t> rows) const {
  for (int64_t r : rows)
    if (r < 0 || r >= rows_)
      return TIDE_ERROR(Code::kOutOfRange,
                        "row " + std::to_string(r) + " outside " + std::to_string(rows_) + " rows");
  std::vector<uint8_t> out;
  if (!isRagged()) {
    out.resize(rows.size() * itemBytes_);
    for (size_t i = 0; i < rows.size(); ++i)
      std::memcpy(out.data() + i * itemBytes_, rowBytes(rows[i]).data(), itemBytes_);
    auto shape = shape_;
    shape[0] = static_cast<int64_t>(rows.size());
    return dense(dtype_, std::move(shape), BufferRef::own(std::move(out)));
  }
  std::vector<int64_t> off(rows.size() + 1, 0);
  for (size_t i = 0; i < rows.size(); ++i) off[i + 1] = off[i] + rowLength(rows[i]);
  out.resize(static_cast<uint64_t>(off.back()) * itemBytes_);
  for (size_t i = 0; i < rows.size(); ++i) {
    auto b = rowBytes(rows[i]);
    if (!b.empty()) std::memcpy(out.data() + off[i] * itemBytes_, b.data(), b.size());
  }
  TIDE_ASSIGN_OR_RETURN(Column c, ragged(dtype_, shape_, BufferRef::own(std::move(out)),
                                         BufferRef::ownVector(std::move(off))));
  c.kind_ = kind_;
  return c;
}

Result<Column> Column::concat(std::span<const Column* const> parts) {
  if (parts.empty()) return invalid("concat of no columns");
  const Column& first = *parts[0];
  int64_t rows = 0;
  uint64_t bytes = 0;
  for (const Column* p : parts) {
    bool sameShape = first.isRagged() ? p->shape_ == first.shape_
                                      : std::equal(p->shape_.begin() + 1, p->shape_.end(),
                                                   first.shape_.begin() + 1, first.shape_.end());
    if (p->kind_ != first.kind_ || p->dtype_ != first.dtype_ || !sameShape)
      return invalid(std::string("concat of mismatched columns (") + columnKindName(p->kind_) +
                     " " + dtypeName(p->dtype_) + " vs " + columnKindName(first.kind_) + " " +
                     dtypeName(first.dtype_) + ")");
    rows += p->rows_;
    bytes += p->payloadBytes();
  }
  std::vector<uint8_t> out(bytes);
  uint64_t at = 0;
  for (const Column* p : parts) {
    auto b = p->payload();
    if (!b.empty()) std::memcpy(out.data() + at, b.data(), b.size());
    at += b.size();
  }
  if (!first.isRagged()) {
    auto shape = first.shape_;
    shape[0] = rows;
    return dense(first.dtype_, std::move(shape), BufferRef::own(std::move(out)));
  }
  std::vector<int64_t> off;
  off.reserve(rows + 1);
  off.push_back(0);
  for (const Column* p : parts) {
    auto po = p->offsets();
    for (size_t i = 1; i < po.size(); ++i) off.push_back(off.back() + po[i] - po[i - 1]);
  }
  TIDE_ASSIGN_OR_RETURN(Column c, ragged(first.dtype_, first.shape_, BufferRef::own(std::move(out)),
                                         BufferRef::ownVector(std::move(off))));
  c.kind_ = first.kind_;
  return c;
}

}  // namespace tide::data
