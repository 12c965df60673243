#include "engine/data/manifest.h"

#include <xxhash.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

namespace tide::data {
namespace {

constexpr uint32_t kMagic = 0x4d424454;  // "TDBM"

Status bad(const std::string& msg) {
  return TIDE_ERROR(Code::kDataLoss, "corrupt batch manifest: " + msg);
}

class Writer {
 public:
  template <typename T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    put(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void seg(const Segment& s) {
    put(s.region);
    put(s.offset);
    put(s.length);
    put(s.checksum);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), n_(n) {}
  template <typename T>
  bool get(T& v) {
    if (n_ - pos_ < sizeof v) return false;
    std::memcpy(&v, p_ + pos_, sizeof v);
    pos_ += sizeof v;
    return true;
  }
  bool str(std::string& s, uint32_t maxBytes) {
    uint32_t len = 0;
    if (!get(len) || len > maxBytes || n_ - pos_ < len) return false;
    s.assign(p_ + pos_, len);
    pos_ += len;
    return true;
  }
  bool seg(Segment& s) {
    return get(s.region) && get(s.offset) && get(s.length) && get(s.checksum);
  }
  size_t pos() const { return pos_; }

 private:
  const char* p_;
  size_t n_;
  size_t pos_ = 0;
};

bool mulOk(uint64_t a, uint64_t b, uint64_t& out) {
  return !__builtin_mul_overflow(a, b, &out);
}

}  // namespace

uint64_t checksum(const void* data, uint64_t length) {
  return XXH3_64bits(data, length);
}

uint64_t FieldManifest::itemBytes() const {
  auto span = kind == ColumnKind::kDense
                  ? std::span<const int64_t>(dims).subspan(dims.empty() ? 0 : 1)
                  : std::span<const int64_t>(dims);
  auto n = shapeElements(span);
  return n.isOk() ? *n * dtypeSize(dtype) : 0;
}

const FieldManifest* Manifest::find(const std::string& name) const {
  for (const auto& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

uint64_t Manifest::payloadBytes() const {
  uint64_t n = 0;
  for (const auto& f : fields) n += f.data.length + f.offsets.length;
  return n;
}

std::string Manifest::encode() const {
  Writer w;
  w.put(kMagic);
  w.put(version);
  w.put(payloadChecksums ? uint16_t{0} : kFlagNoPayloadChecksums);
  w.put(generation);
  w.str(id);
  w.put(rows);
  w.str(metaJson);
  w.put(static_cast<uint32_t>(regions.size()));
  for (const auto& r : regions) {
    w.put(r.rank);
    w.str(r.serialize());
  }
  w.put(static_cast<uint32_t>(fields.size()));
  for (const auto& f : fields) {
    w.str(f.name);
    w.put(static_cast<uint8_t>(f.kind));
    w.put(static_cast<uint8_t>(f.dtype));
    w.put(static_cast<uint8_t>(f.dims.size()));
    for (int64_t d : f.dims) w.put(d);
    w.put(f.valueBase);
    w.put(f.valueCount);
    w.seg(f.data);
    w.seg(f.offsets);
  }
  w.put(checksum(w.out().data(), w.out().size()));
  return std::move(w.out());
}

Result<Manifest> Manifest::decode(const std::string& bytes) {
  constexpr size_t kMin = 4 + 2 + 2 + 8;
  if (bytes.size() < kMin + 8) return bad("truncated (" + std::to_string(bytes.size()) + " bytes)");
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  Reader r(bytes.data(), bytes.size() - 8);
  uint32_t magic = 0;
  uint16_t flags = 0;
  Manifest m;
  if (!r.get(magic) || magic != kMagic) return bad("bad magic (not a tide batch manifest)");
  if (!r.get(m.version) || m.version != kManifestVersion)
    return bad("unsupported schema version " + std::to_string(m.version) + " (this build reads " +
               std::to_string(kManifestVersion) + ")");
  if (checksum(bytes.data(), bytes.size() - 8) != stored)
    return bad("checksum mismatch (truncated or modified)");
  uint32_t nRegions = 0, nFields = 0;
  if (!r.get(flags) || !r.get(m.generation) || !r.str(m.id, kMaxNameBytes) || !r.get(m.rows) ||
      !r.str(m.metaJson, kMaxMetaBytes) || !r.get(nRegions))
    return bad("truncated header");
  if ((flags & ~kFlagNoPayloadChecksums) != 0) return bad("unknown flags " + std::to_string(flags));
  m.payloadChecksums = (flags & kFlagNoPayloadChecksums) == 0;
  if (nRegions > kMaxRegions) return bad("too many regions (" + std::to_string(nRegions) + ")");
  for (uint32_t i = 0; i < nRegions; ++i) {
    int32_t rank = 0;
    std::string desc;
    if (!r.get(rank) || !r.str(desc, 4096)) return bad("truncated region list");
    auto rr = transport::RemoteRegion::deserialize(desc);
    if (!rr.isOk()) return bad("region " + std::to_string(i) + ": " + rr.status().message());
    if (rr->rank != rank) return bad("region " + std::to_string(i) + " rank mismatch");
    m.regions.push_back(std::move(rr).value());
  }
  if (!r.get(nFields)) return bad("truncated field count");
  if (nFields > kMaxFields) return bad("too many fields (" + std::to_string(nFields) + ")");
  for (uint32_t i = 0; i < nFields; ++i) {
    FieldManifest f;
    uint8_t kind = 0, dtype = 0, ndim = 0;
    if (!r.str(f.name, kMaxNameBytes) || !r.get(kind) || !r.get(dtype) || !r.get(ndim))
      return bad("truncated field " + std::to_string(i));
    if (kind > static_cast<uint8_t>(ColumnKind::kObject))
      return bad("field '" + f.name + "' has unknown kind " + std::to_string(kind));
    if (!validDType(dtype))
      return bad("field '" + f.name + "' has unknown dtype " + std::to_string(dtype));
    if (ndim > kMaxDims) return bad("field '" + f.name + "' has " + std::to_string(ndim) + " dims");
    f.kind = static_cast<ColumnKind>(kind);
    f.dtype = static_cast<DType>(dtype);
    f.dims.resize(ndim);
    for (auto& d : f.dims)
      if (!r.get(d)) return bad("truncated field '" + f.name + "'");
    if (!r.get(f.valueBase) || !r.get(f.valueCount) || !r.seg(f.data) || !r.seg(f.offsets))
      return bad("truncated field '" + f.name + "'");
    m.fields.push_back(std::move(f));
  }
  if (r.pos() != bytes.size() - 8) return bad("trailing bytes after the field list");
  Status s = m.validate();
  if (!s.isOk()) return bad(s.message());
  return m;
}

Status Manifest::validate() const {
  auto invalid = [](const std::string& msg) { return TIDE_ERROR(Code::kInvalidArgument, msg); };
  if (rows < 0) return invalid("negative row count");
  if (!nlohmann::json::accept(metaJson)) return invalid("meta is not valid JSON");
  std::set<std::string> names;
  auto checkSeg = [&](const FieldManifest& f, const Segment& s, const char* what) -> Status {
    if (s.region >= regions.size())
      return invalid("field '" + f.name + "' " + what + " names region " +
                     std::to_string(s.region) + " of " + std::to_string(regions.size()));
    if (s.offset % kPayloadAlign != 0)
      return invalid("field '" + f.name + "' " + what + " is not 64-byte aligned");
    if (!payloadChecksums && s.checksum != 0)
      return invalid("field '" + f.name + "' " + what +
                     " has a checksum in a manifest without payload checksums");
    const auto& reg = regions[s.region];
    if (s.offset > reg.size || s.length > reg.size - s.offset)
      return invalid("field '" + f.name + "' " + what + " [" + std::to_string(s.offset) + ", +" +
                     std::to_string(s.length) + ") lies outside its region of " +
                     std::to_string(reg.size) + " bytes");
    return Status::ok();
  };
  for (const auto& f : fields) {
    if (f.name.empty()) return invalid("field with empty name");
    if (!names.insert(f.name).second) return invalid("duplicate field '" + f.name + "'");
    auto elems = shapeElements(f.dims);
    if (!elems.isOk()) return invalid("field '" + f.name + "': " + elems.status().message());
    uint64_t need = 0;
    if (f.kind == ColumnKind::kDense) {
      if (f.dims.empty() || f.dims[0] != rows)
        return invalid("dense field '" + f.name + "' leading dim does not match " +
                       std::to_string(rows) + " rows");
      if (!mulOk(*elems, dtypeSize(f.dtype), need))
        return invalid("field '" + f.name + "' size overflows");
      if (f.offsets.length != 0) return invalid("dense field '" + f.name + "' has offsets");
    } else {
      if (f.kind == ColumnKind::kObject && (f.dtype != DType::kU8 || !f.dims.empty()))
        return invalid("object field '" + f.name + "' must be u8 without inner shape");
      if (f.valueCount < 0) return invalid("field '" + f.name + "' negative value count");
      uint64_t itemElems = *elems;
      if (!mulOk(itemElems, dtypeSize(f.dtype), need) ||
          !mulOk(need, static_cast<uint64_t>(f.valueCount), need))
        return invalid("field '" + f.name + "' size overflows");
      uint64_t offBytes = 0;
      if (!mulOk(static_cast<uint64_t>(rows) + 1, 8, offBytes) || f.offsets.length != offBytes)
        return invalid("field '" + f.name + "' offsets hold " + std::to_string(f.offsets.length) +
                       " bytes, " + std::to_string(static_cast<uint64_t>(rows) + 1) +
                       " int64 expected");
      TIDE_RETURN_IF_ERROR(checkSeg(f, f.offsets, "offsets"));
    }
    if (f.data.length != need)
      return invalid("field '" + f.name + "' (" + dtypeName(f.dtype) + ") declares a payload of " +
                     std::to_string(f.data.length) + " bytes; its dtype and shape need " +
                     std::to_string(need));
    TIDE_RETURN_IF_ERROR(checkSeg(f, f.data, "payload"));
  }
  return Status::ok();
}

}  // namespace tide::data
