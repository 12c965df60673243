#pragma once
// Thin RAII + Status layer over the HDF5 C API (internal to traces/). HDF5's
// automatic error-stack printing is switched off; every failure becomes one
// Status with the object path.

#include <hdf5.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace tide::traces::h5 {

// The serial HDF5 library is not thread-safe: every call in traces/ holds this.
std::recursive_mutex& libraryMutex();
// Turns off HDF5's stderr error stacks (idempotent).
void silenceErrors();

class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer c) : id_(id), close_(c) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = -1;
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = -1;
  }
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

Result<Handle> createFile(const std::string& path);
Result<Handle> openFile(const std::string& path, bool writable);
Result<Handle> createGroup(hid_t loc, const std::string& name);
Result<Handle> openGroup(hid_t loc, const std::string& name);
bool exists(hid_t loc, const std::string& path);

// Attributes on an object.
Status writeAttr(hid_t obj, const std::string& name, const std::string& value);
Status writeAttr(hid_t obj, const std::string& name, int64_t value);
Status writeAttr(hid_t obj, const std::string& name, double value);
Result<std::string> readStringAttr(hid_t obj, const std::string& name);
Result<int64_t> readIntAttr(hid_t obj, const std::string& name);
Result<double> readDoubleAttr(hid_t obj, const std::string& name);

// Element type tags for the typed helpers below.
template <typename T>
hid_t nativeType();

// Chunked, deflate-compressed dataset with the given shape (maxDims unlimited
// along dim 0 when extendible), written in one go.
template <typename T>
Status writeDataset(hid_t loc, const std::string& name, const std::vector<uint64_t>& shape,
                    const std::vector<T>& data, bool extendible = false);
Status writeStrings(hid_t loc, const std::string& name, const std::vector<std::string>& values);

// Appends rows to an extendible 1-D dataset.
template <typename T>
Status appendRows(hid_t loc, const std::string& name, const std::vector<T>& rows);

struct DatasetInfo {
  std::vector<uint64_t> shape;
  H5T_class_t typeClass = H5T_NO_CLASS;
  size_t typeSize = 0;
  bool isSigned = false;
};
Result<DatasetInfo> datasetInfo(hid_t loc, const std::string& name);
// Reads a whole dataset, converting to T. Checks the stored type class
// (integer vs float) matches T, and that the shape equals `want` when given.
template <typename T>
Result<std::vector<T>> readDataset(hid_t loc, const std::string& name,
                                   const std::vector<uint64_t>& want = {});
Result<std::vector<std::string>> readStrings(hid_t loc, const std::string& name);

}  // namespace tide::traces::h5
