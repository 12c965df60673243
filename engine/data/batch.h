#pragma once
// Batch (DataProto): named columns sharing one leading row dimension, plus
// `meta` (a JSON object copied to every chunk). Columns are views with shared
// owners, so selecting fields or row ranges and chunking never copy; gather,
// concat and union build new columns only where rows must move.

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "engine/data/column.h"

namespace tide::data {

class Batch {
 public:
  Batch() = default;
  explicit Batch(int64_t rows) : rows_(rows), hasRows_(true) {}

  int64_t rows() const { return rows_; }
  // The first column fixes the row count of an empty batch.
  Status add(const std::string& name, Column column);
  bool has(const std::string& name) const { return find(name) != nullptr; }
  const Column* find(const std::string& name) const;
  Result<const Column*> column(const std::string& name) const;
  const std::vector<std::pair<std::string, Column>>& columns() const { return columns_; }
  std::vector<std::string> fieldNames() const;
  uint64_t payloadBytes() const;

  nlohmann::json& meta() { return meta_; }
  const nlohmann::json& meta() const { return meta_; }

  Result<Batch> selectFields(const std::vector<std::string>& names) const;
  Result<Batch> slice(int64_t begin, int64_t end) const;
  Result<Batch> gather(std::span<const int64_t> rows) const;
  // n nearly equal row ranges (views); the first rows % n chunks get one more.
  Result<std::vector<Batch>> chunk(int64_t n) const;
  // Rows of every batch in order; all must have the same fields. Meta of the first.
  static Result<Batch> concat(std::span<const Batch> parts);
  // Fields of both (same rows); a field in both must be the same bytes. Meta merged.
  Result<Batch> unionWith(const Batch& other) const;

 private:
  int64_t rows_ = 0;
  bool hasRows_ = false;
  std::vector<std::pair<std::string, Column>> columns_;
  nlohmann::json meta_ = nlohmann::json::object();
};

}  // namespace tide::data
