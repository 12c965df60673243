#include "engine/data/batch.h"

#include <cstring>

namespace tide::data {
namespace {

bool sameBytes(const Column& a, const Column& b) {
  if (a.kind() != b.kind() || a.dtype() != b.dtype() || a.rows() != b.rows()) return false;
  if (a.isRagged() && a.shape() != b.shape()) return false;
  if (!a.isRagged() && a.shape() != b.shape()) return false;
  for (int64_t i = 0; a.isRagged() && i < a.rows(); ++i)
    if (a.rowLength(i) != b.rowLength(i)) return false;
  auto pa = a.payload(), pb = b.payload();
  return pa.size() == pb.size() &&
         (pa.empty() || std::memcmp(pa.data(), pb.data(), pa.size()) == 0);
}

}  // namespace

Status Batch::add(const std::string& name, Column column) {
  if (name.empty()) return TIDE_ERROR(Code::kInvalidArgument, "field name is empty");
  if (has(name)) return TIDE_ERROR(Code::kAlreadyExists, "field '" + name + "' already in batch");
  if (hasRows_ && column.rows() != rows_)
    return TIDE_ERROR(Code::kInvalidArgument, "field '" + name + "' has " +
                                                  std::to_string(column.rows()) +
                                                  " rows, batch has " + std::to_string(rows_));
  rows_ = column.rows();
  hasRows_ = true;
  columns_.emplace_back(name, std::move(column));
  return Status::ok();
}

const Column* Batch::find(const std::string& name) const {
  for (const auto& [n, c] : columns_)
    if (n == name) return &c;
  return nullptr;
}

std::vector<std::string> Batch::fieldNames() const {
  std::vector<std::string> out;
  for (const auto& [n, c] : columns_) out.push_back(n);
  return out;
}

Result<const Column*> Batch::column(const std::string& name) const {
  if (const Column* c = find(name)) return c;
  std::string have;
  for (const auto& [n, c] : columns_) have += (have.empty() ? "" : ", ") + n;
  return TIDE_ERROR(Code::kNotFound, "no field '" + name + "' (fields: " + have + ")");
}

uint64_t Batch::payloadBytes() const {
  uint64_t n = 0;
  for (const auto& [name, c] : columns_) n += c.payloadBytes();
  return n;
}

Result<Batch> Batch::selectFields(const std::vector<std::string>& names) const {
  Batch out(rows_);
  out.meta_ = meta_;
  for (const auto& n : names) {
    TIDE_ASSIGN_OR_RETURN(const Column* c, column(n));
    TIDE_RETURN_IF_ERROR(out.add(n, *c));
  }
  return out;
}

Result<Batch> Batch::slice(int64_t begin, int64_t end) const {
  if (begin < 0 || end < begin || end > rows_)
    return TIDE_ERROR(Code::kOutOfRange, "row range [" + std::to_string(begin) + ", " +
                                             std::to_string(end) + ") outside " +
                                             std::to_string(rows_) + " rows");
  Batch out(end - begin);
  out.meta_ = meta_;
  for (const auto& [n, c] : columns_) {
    TIDE_ASSIGN_OR_RETURN(Column s, c.slice(begin, end));
    TIDE_RETURN_IF_ERROR(out.add(n, std::move(s)));
  }
  return out;
}

Result<Batch> Batch::gather(std::span<const int64_t> rows) const {
  Batch out(static_cast<int64_t>(rows.size()));
  out.meta_ = meta_;
  for (const auto& [n, c] : columns_) {
    TIDE_ASSIGN_OR_RETURN(Column g, c.gather(rows));
    TIDE_RETURN_IF_ERROR(out.add(n, std::move(g)));
  }
  return out;
}

Result<std::vector<Batch>> Batch::chunk(int64_t n) const {
  if (n <= 0) return TIDE_ERROR(Code::kInvalidArgument, "chunk count must be positive");
  std::vector<Batch> out;
  int64_t base = rows_ / n, extra = rows_ % n, at = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t len = base + (i < extra ? 1 : 0);
    TIDE_ASSIGN_OR_RETURN(Batch b, slice(at, at + len));
    out.push_back(std::move(b));
    at += len;
  }
  return out;
}

Result<Batch> Batch::concat(std::span<const Batch> parts) {
  if (parts.empty()) return TIDE_ERROR(Code::kInvalidArgument, "concat of no batches");
  int64_t rows = 0;
  for (const Batch& b : parts) {
    if (b.columns_.size() != parts[0].columns_.size())
      return TIDE_ERROR(Code::kInvalidArgument, "concat of batches with different fields");
    rows += b.rows_;
  }
  Batch out(rows);
  out.meta_ = parts[0].meta_;
  for (const auto& [name, first] : parts[0].columns_) {
    std::vector<const Column*> cols;
    for (const Batch& b : parts) {
      TIDE_ASSIGN_OR_RETURN(const Column* c, b.column(name));
      cols.push_back(c);
    }
    auto merged = Column::concat(cols);
    if (!merged.isOk()) return merged.status().withContext("field '" + name + "'");
    TIDE_RETURN_IF_ERROR(out.add(name, std::move(merged).value()));
  }
  return out;
}

Result<Batch> Batch::unionWith(const Batch& other) const {
  if (hasRows_ && other.hasRows_ && other.rows_ != rows_)
    return TIDE_ERROR(Code::kInvalidArgument, "union of batches with " + std::to_string(rows_) +
                                                  " and " + std::to_string(other.rows_) + " rows");
  Batch out = *this;
  for (const auto& [n, c] : other.columns_) {
    if (const Column* mine = find(n)) {
      if (!sameBytes(*mine, c))
        return TIDE_ERROR(Code::kInvalidArgument, "union: field '" + n + "' differs");
      continue;
    }
    TIDE_RETURN_IF_ERROR(out.add(n, c));
  }
  for (auto it = other.meta_.begin(); it != other.meta_.end(); ++it) {
    if (out.meta_.contains(it.key()) && out.meta_[it.key()] != it.value())
      return TIDE_ERROR(Code::kInvalidArgument, "union: meta '" + it.key() + "' differs");
    out.meta_[it.key()] = it.value();
  }
  return out;
}

}  // namespace tide::data
