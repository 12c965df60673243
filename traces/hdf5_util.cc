#include "traces/hdf5_util.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tide::traces::h5 {

namespace {

Status fail(const std::string& what) {
  return TIDE_ERROR(Code::kDataLoss, what);
}

// Chunk of about 64 Ki elements, whole trailing dims when they fit.
std::vector<hsize_t> chunkFor(const std::vector<uint64_t>& shape) {
  std::vector<hsize_t> c(shape.size(), 1);
  uint64_t budget = 1 << 16;
  for (size_t d = shape.size(); d-- > 0;) {
    const uint64_t take = std::max<uint64_t>(1, std::min<uint64_t>(shape[d], budget));
    c[d] = take;
    budget = std::max<uint64_t>(1, budget / take);
  }
  return c;
}

}  // namespace

template <>
hid_t nativeType<uint8_t>() {
  return H5T_NATIVE_UINT8;
}
template <>
hid_t nativeType<int32_t>() {
  return H5T_NATIVE_INT32;
}
template <>
hid_t nativeType<uint32_t>() {
  return H5T_NATIVE_UINT32;
}
template <>
hid_t nativeType<int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t nativeType<uint64_t>() {
  return H5T_NATIVE_UINT64;
}
template <>
hid_t nativeType<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t nativeType<float>() {
  return H5T_NATIVE_FLOAT;
}

std::recursive_mutex& libraryMutex() {
  static std::recursive_mutex mu;
  return mu;
}

void silenceErrors() {
  static std::once_flag once;
  std::call_once(once, [] { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); });
}

Result<Handle> createFile(const std::string& path) {
  silenceErrors();
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0) return TIDE_ERROR(Code::kUnavailable, "cannot create trace file '" + path + "'");
  return Handle(f, H5Fclose);
}

Result<Handle> openFile(const std::string& path, bool writable) {
  silenceErrors();
  htri_t is = H5Fis_hdf5(path.c_str());
  if (is <= 0) {
    return TIDE_ERROR(
        is < 0 ? Code::kNotFound : Code::kDataLoss,
        "'" + path + "' " + (is < 0 ? "cannot be read" : "is not an HDF5 file (or is truncated)"));
  }
  hid_t f = H5Fopen(path.c_str(), writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return fail("'" + path + "': cannot open as HDF5 (truncated or corrupt)");
  return Handle(f, H5Fclose);
}

Result<Handle> createGroup(hid_t loc, const std::string& name) {
  hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return fail("cannot create group " + name);
  return Handle(g, H5Gclose);
}

Result<Handle> openGroup(hid_t loc, const std::string& name) {
  if (!exists(loc, name)) return fail("missing group " + name);
  hid_t g = H5Gopen2(loc, name.c_str(), H5P_DEFAULT);
  if (g < 0) return fail("cannot open group " + name);
  return Handle(g, H5Gclose);
}

bool exists(hid_t loc, const std::string& path) {
  // Check each component so a missing parent is not an error stack.
  size_t pos = 0;
  while (true) {
    size_t slash = path.find('/', pos + 1);
    std::string prefix = path.substr(0, slash);
    if (!prefix.empty() && prefix != "/" && H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) {
      return false;
    }
    if (slash == std::string::npos) return true;
    pos = slash;
  }
}

Status writeAttr(hid_t obj, const std::string& name, const std::string& value) {
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(1, value.size()));
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  if (!a.valid()) return fail("cannot create attribute " + name);
  std::string buf = value.empty() ? std::string(1, '\0') : value;
  if (H5Awrite(a.get(), type.get(), buf.data()) < 0) return fail("cannot write attribute " + name);
  return Status::ok();
}

template <typename T>
static Status writeScalarAttr(hid_t obj, const std::string& name, T value) {
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  Handle a(H5Acreate2(obj, name.c_str(), nativeType<T>(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
           H5Aclose);
  if (!a.valid() || H5Awrite(a.get(), nativeType<T>(), &value) < 0) {
    return fail("cannot write attribute " + name);
  }
  return Status::ok();
}

Status writeAttr(hid_t obj, const std::string& name, int64_t value) {
  return writeScalarAttr(obj, name, value);
}
Status writeAttr(hid_t obj, const std::string& name, double value) {
  return writeScalarAttr(obj, name, value);
}

Result<std::string> readStringAttr(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) return fail("missing attribute '" + name + "'");
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  if (!a.valid() || H5Tget_class(ft.get()) != H5T_STRING) {
    return fail("attribute '" + name + "' is not a string");
  }
  Handle space(H5Aget_space(a.get()), H5Sclose);
  if (H5Sget_simple_extent_npoints(space.get()) != 1) {
    return fail("attribute '" + name + "' is not a scalar");
  }
  if (H5Tis_variable_str(ft.get()) != 0) {  // see writeStrings: no global heap reads
    return fail("attribute '" + name + "' is a variable-length string; tide reads fixed-length");
  }
  size_t n = H5Tget_size(ft.get());
  if (n == 0 || n > (1u << 20)) return fail("attribute '" + name + "' has a bad size");
  std::string s(n, '\0');
  if (H5Aread(a.get(), ft.get(), s.data()) < 0) return fail("cannot read attribute " + name);
  s.resize(std::strlen(s.c_str()));
  return s;
}

template <typename T>
static Result<T> readScalarAttr(hid_t obj, const std::string& name, H5T_class_t want) {
  if (H5Aexists(obj, name.c_str()) <= 0) return fail("missing attribute '" + name + "'");
  Handle a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  Handle ft(H5Aget_type(a.get()), H5Tclose);
  Handle space(H5Aget_space(a.get()), H5Sclose);
  if (!a.valid() || H5Tget_class(ft.get()) != want ||
      H5Sget_simple_extent_npoints(space.get()) != 1) {
    return fail("attribute '" + name + "' has the wrong type (want a scalar " +
                (want == H5T_INTEGER ? "integer" : "float") + ")");
  }
  T v{};
  if (H5Aread(a.get(), nativeType<T>(), &v) < 0) return fail("cannot read attribute " + name);
  return v;
}

Result<int64_t> readIntAttr(hid_t obj, const std::string& name) {
  return readScalarAttr<int64_t>(obj, name, H5T_INTEGER);
}
Result<double> readDoubleAttr(hid_t obj, const std::string& name) {
  return readScalarAttr<double>(obj, name, H5T_FLOAT);
}

template <typename T>
Status writeDataset(hid_t loc, const std::string& name, const std::vector<uint64_t>& shape,
                    const std::vector<T>& data, bool extendible) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  if (n != data.size()) return TIDE_ERROR(Code::kInternal, name + ": data does not match shape");
  std::vector<hsize_t> dims(shape.begin(), shape.end()), maxDims = dims;
  if (extendible) maxDims[0] = H5S_UNLIMITED;
  Handle space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), maxDims.data()),
               H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  std::vector<uint64_t> chunkShape = shape;
  if (extendible) chunkShape[0] = std::max<uint64_t>(chunkShape[0], 4096);
  auto chunk = chunkFor(chunkShape);
  H5Pset_chunk(dcpl.get(), static_cast<int>(chunk.size()), chunk.data());
  H5Pset_shuffle(dcpl.get());
  H5Pset_deflate(dcpl.get(), 4);
  Handle ds(H5Dcreate2(loc, name.c_str(), nativeType<T>(), space.get(), H5P_DEFAULT, dcpl.get(),
                       H5P_DEFAULT),
            H5Dclose);
  if (!ds.valid()) return fail("cannot create dataset " + name);
  if (n > 0 &&
      H5Dwrite(ds.get(), nativeType<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, data.data()) < 0) {
    return fail("cannot write dataset " + name);
  }
  return Status::ok();
}

// Fixed-length, NUL-padded strings: variable-length ones live in HDF5's
// global heap, and reading a corrupt global heap can loop inside the HDF5
// library (found by fuzz_trace_reader), so tide neither writes nor reads them.
Status writeStrings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), width);
  H5Tset_strpad(type.get(), H5T_STR_NULLPAD);
  hsize_t dims[1] = {values.size()};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  hsize_t chunk[1] = {std::max<hsize_t>(1, std::min<hsize_t>(values.size(), 8192))};
  H5Pset_chunk(dcpl.get(), 1, chunk);
  H5Pset_deflate(dcpl.get(), 4);
  Handle ds(
      H5Dcreate2(loc, name.c_str(), type.get(), space.get(), H5P_DEFAULT, dcpl.get(), H5P_DEFAULT),
      H5Dclose);
  if (!ds.valid()) return fail("cannot create dataset " + name);
  std::string buf(values.size() * width, '\0');
  for (size_t i = 0; i < values.size(); ++i) values[i].copy(buf.data() + i * width, width);
  if (!values.empty() &&
      H5Dwrite(ds.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) {
    return fail("cannot write dataset " + name);
  }
  return Status::ok();
}

template <typename T>
Status appendRows(hid_t loc, const std::string& name, const std::vector<T>& rows) {
  if (rows.empty()) return Status::ok();
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return fail("cannot open dataset " + name);
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  hsize_t cur[1];
  if (H5Sget_simple_extent_ndims(space.get()) != 1) return fail(name + " is not 1-D");
  H5Sget_simple_extent_dims(space.get(), cur, nullptr);
  hsize_t next[1] = {cur[0] + rows.size()};
  if (H5Dset_extent(ds.get(), next) < 0) return fail("cannot extend " + name);
  Handle fspace(H5Dget_space(ds.get()), H5Sclose);
  hsize_t start[1] = {cur[0]}, count[1] = {rows.size()};
  H5Sselect_hyperslab(fspace.get(), H5S_SELECT_SET, start, nullptr, count, nullptr);
  Handle mspace(H5Screate_simple(1, count, nullptr), H5Sclose);
  if (H5Dwrite(ds.get(), nativeType<T>(), mspace.get(), fspace.get(), H5P_DEFAULT, rows.data()) <
      0) {
    return fail("cannot append to " + name);
  }
  return Status::ok();
}

Result<DatasetInfo> datasetInfo(hid_t loc, const std::string& name) {
  if (!exists(loc, name)) return fail("missing dataset " + name);
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) return fail(name + " is not a dataset");
  Handle space(H5Dget_space(ds.get()), H5Sclose);
  Handle type(H5Dget_type(ds.get()), H5Tclose);
  int nd = H5Sget_simple_extent_ndims(space.get());
  if (nd < 0 || nd > 8) return fail(name + ": bad dataspace");
  std::vector<hsize_t> dims(static_cast<size_t>(nd));
  H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
  DatasetInfo info;
  info.shape.assign(dims.begin(), dims.end());
  info.typeClass = H5Tget_class(type.get());
  info.typeSize = H5Tget_size(type.get());
  info.isSigned = info.typeClass == H5T_INTEGER && H5Tget_sign(type.get()) == H5T_SGN_2;
  return info;
}

static std::string shapeText(const std::vector<uint64_t>& s) {
  std::string t = "(";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + ")";
}

template <typename T>
Result<std::vector<T>> readDataset(hid_t loc, const std::string& name,
                                   const std::vector<uint64_t>& want) {
  TIDE_ASSIGN_OR_RETURN(DatasetInfo info, datasetInfo(loc, name));
  const bool wantInt = std::is_integral_v<T>;
  if (wantInt && info.typeClass != H5T_INTEGER) {
    return fail(name + " must hold integers (counts cannot be NaN or fractional)");
  }
  if (!wantInt && info.typeClass != H5T_FLOAT) return fail(name + " must hold floats");
  if (!want.empty() && info.shape != want) {
    return fail(name + " has shape " + shapeText(info.shape) + ", expected " + shapeText(want));
  }
  uint64_t n = 1;
  for (uint64_t d : info.shape) n *= d;
  if (n > (1ull << 34)) return fail(name + " is implausibly large");
  std::vector<T> out(n);
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (n > 0 && H5Dread(ds.get(), nativeType<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0) {
    return fail("cannot read " + name + " (truncated or corrupt)");
  }
  return out;
}

Result<std::vector<std::string>> readStrings(hid_t loc, const std::string& name) {
  TIDE_ASSIGN_OR_RETURN(DatasetInfo info, datasetInfo(loc, name));
  if (info.typeClass != H5T_STRING || info.shape.size() != 1) {
    return fail(name + " must be a 1-D string dataset");
  }
  Handle ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  Handle ft(H5Dget_type(ds.get()), H5Tclose);
  if (!ds.valid() || !ft.valid()) return fail("cannot open " + name);
  if (H5Tis_variable_str(ft.get()) != 0) {
    return fail(name + " holds variable-length strings; tide reads fixed-length ones only");
  }
  const size_t width = H5Tget_size(ft.get());
  if (width == 0 || width > (1u << 16) || info.shape[0] > (1ull << 30) / width) {
    return fail(name + " has a bad string size");
  }
  Handle mt(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mt.get(), width);
  H5Tset_strpad(mt.get(), H5T_STR_NULLPAD);
  std::string buf(info.shape[0] * width, '\0');
  if (!buf.empty() && H5Dread(ds.get(), mt.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) < 0) {
    return fail("cannot read " + name + " (truncated or corrupt)");
  }
  std::vector<std::string> out;
  out.reserve(info.shape[0]);
  for (size_t i = 0; i < info.shape[0]; ++i) {
    const char* p = buf.data() + i * width;
    out.emplace_back(p, strnlen(p, width));
  }
  return out;
}

#define TIDE_H5_INSTANTIATE(T)                                                             \
  template Status writeDataset<T>(hid_t, const std::string&, const std::vector<uint64_t>&, \
                                  const std::vector<T>&, bool);                            \
  template Status appendRows<T>(hid_t, const std::string&, const std::vector<T>&);         \
  template Result<std::vector<T>> readDataset<T>(hid_t, const std::string&,                \
                                                 const std::vector<uint64_t>&);
TIDE_H5_INSTANTIATE(uint8_t)
TIDE_H5_INSTANTIATE(int32_t)
TIDE_H5_INSTANTIATE(uint32_t)
TIDE_H5_INSTANTIATE(int64_t)
TIDE_H5_INSTANTIATE(uint64_t)
TIDE_H5_INSTANTIATE(double)
TIDE_H5_INSTANTIATE(float)
#undef TIDE_H5_INSTANTIATE

}  // namespace tide::traces::h5
