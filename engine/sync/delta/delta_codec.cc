#include "engine/sync/delta/delta_codec.h"

#include <xxhash.h>
#include <zstd.h>

#include <bit>
#include <cstring>
#include <memory>

#include "engine/sync/delta/varint.h"

namespace tide::sync {
namespace {

constexpr uint32_t kBlockMagic = 0x314c4474;  // "tDL1"
constexpr uint8_t kFlagZstd = 1;
constexpr uint64_t kMaxElements = 1ull << 32;  // indices are stored as 32-bit on apply

#pragma pack(push, 1)
struct BlockHeader {
  uint32_t magic;
  uint8_t encoding;
  uint8_t elemBytes;
  uint8_t flags;
  uint8_t reserved;
  uint64_t elements;
  uint64_t changed;
  uint64_t baseHash;     // xxh3 of the old version
  uint64_t resultHash;   // xxh3 of the new version
  uint64_t payloadHash;  // xxh3 of the payload as stored
  uint64_t storedBytes;  // payload bytes following the header
  uint64_t rawBytes;     // payload bytes before compression
};
#pragma pack(pop)

uint64_t hash(std::span<const uint8_t> s) {
  return XXH3_64bits(s.data(), s.size());
}

template <typename Word>
Word load(const uint8_t* p) {
  Word w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// One pass over old/new: fills a bitmap (bit i = element i changed), copies
// changed values in index order, and sums the varint sizes of the index gaps,
// so the caller can pick bitmap vs indices without a second compare pass.
struct Scan {
  std::vector<uint64_t> bitmap;
  // Worst-case sized but uninitialized: only the pages actually written are
  // touched, so a sparse delta costs no full-size zeroing pass.
  std::unique_ptr<uint8_t[]> values;
  uint64_t valueBytes = 0;
  uint64_t changed = 0;
  uint64_t varintBytes = 0;
};

Scan scanChanges(const uint8_t* a, const uint8_t* b, uint64_t n, uint32_t e) {
  Scan s;
  s.bitmap.assign((n + 63) / 64, 0);
  s.values.reset(new uint8_t[n * e + 8]);
  uint8_t* vout = s.values.get();
  uint64_t last = 0;
  bool first = true;
  auto mark = [&](uint64_t i) {
    s.bitmap[i >> 6] |= 1ull << (i & 63);
    std::memcpy(vout, b + i * e, e);
    vout += e;
    s.varintBytes += varintSize(first ? i : i - last - 1);
    last = i;
    first = false;
    ++s.changed;
  };
  const uint64_t bytes = n * e;
  const uint64_t perWord = 8 / e;  // e divides 8
  uint64_t off = 0;
  // 32 bytes at a time: most of a sparse delta is identical runs.
  for (; off + 32 <= bytes; off += 32) {
    uint64_t x0 = load<uint64_t>(a + off) ^ load<uint64_t>(b + off);
    uint64_t x1 = load<uint64_t>(a + off + 8) ^ load<uint64_t>(b + off + 8);
    uint64_t x2 = load<uint64_t>(a + off + 16) ^ load<uint64_t>(b + off + 16);
    uint64_t x3 = load<uint64_t>(a + off + 24) ^ load<uint64_t>(b + off + 24);
    if ((x0 | x1 | x2 | x3) == 0) continue;
    uint64_t xs[4] = {x0, x1, x2, x3};
    for (int w = 0; w < 4; ++w) {
      if (!xs[w]) continue;
      uint64_t base = (off + 8 * w) / e;
      for (uint64_t k = 0; k < perWord; ++k) {
        uint64_t mask = e == 8 ? ~0ull : ((1ull << (8 * e)) - 1) << (8 * e * k);
        if (xs[w] & mask) mark(base + k);
      }
    }
  }
  for (uint64_t i = off / e; i < n; ++i)
    if (std::memcmp(a + i * e, b + i * e, e)) mark(i);
  s.valueBytes = static_cast<uint64_t>(vout - s.values.get());
  return s;
}

void appendRaw(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  out.insert(out.end(), c, c + n);
}

}  // namespace

const char* encodingName(DeltaEncoding e) {
  switch (e) {
    case DeltaEncoding::kUnchanged:
      return "unchanged";
    case DeltaEncoding::kBitmap:
      return "bitmap";
    case DeltaEncoding::kIndices:
      return "indices";
    case DeltaEncoding::kDenseXor:
      return "dense-xor";
  }
  return "?";
}

Result<DeltaStats> encodeDelta(std::span<const uint8_t> old, std::span<const uint8_t> next,
                               uint32_t e, const DeltaOptions& options, std::vector<uint8_t>& out) {
  if (e != 1 && e != 2 && e != 4 && e != 8)
    return TIDE_ERROR(Code::kInvalidArgument, "element size must be 1, 2, 4 or 8 bytes");
  if (old.size() != next.size() || old.size() % e)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "delta inputs differ in size or are not whole elements (" +
                          std::to_string(old.size()) + " vs " + std::to_string(next.size()) + ")");
  const uint64_t n = old.size() / e;
  if (n >= kMaxElements)
    return TIDE_ERROR(Code::kInvalidArgument, "tensor too large for one delta block (split it)");
  Scan scan = scanChanges(old.data(), next.data(), n, e);

  DeltaEncoding enc = options.force;
  if (enc == DeltaEncoding::kUnchanged) {
    const uint64_t bitmapCost = (n + 7) / 8, indexCost = scan.varintBytes;
    if (scan.changed == 0)
      enc = DeltaEncoding::kUnchanged;
    else if (options.zstd && scan.changed * 4 > n)
      enc = DeltaEncoding::kDenseXor;
    else
      enc = indexCost < bitmapCost ? DeltaEncoding::kIndices : DeltaEncoding::kBitmap;
  }
  if (options.force != DeltaEncoding::kUnchanged && scan.changed == 0 &&
      enc != DeltaEncoding::kDenseXor)
    enc = DeltaEncoding::kUnchanged;

  std::vector<uint8_t> raw;
  switch (enc) {
    case DeltaEncoding::kUnchanged:
      break;
    case DeltaEncoding::kBitmap:
      raw.resize((n + 7) / 8 + scan.valueBytes);
      std::memcpy(raw.data(), scan.bitmap.data(), (n + 7) / 8);  // little-endian word order
      std::memcpy(raw.data() + (n + 7) / 8, scan.values.get(), scan.valueBytes);
      break;
    case DeltaEncoding::kIndices: {
      raw.resize(scan.varintBytes + scan.valueBytes);
      uint8_t* p = raw.data();
      uint64_t last = 0;
      bool first = true;
      for (size_t w = 0; w < scan.bitmap.size(); ++w) {
        for (uint64_t bits = scan.bitmap[w]; bits; bits &= bits - 1) {
          uint64_t i = w * 64 + std::countr_zero(bits);
          p = putVarint(p, first ? i : i - last - 1);
          last = i;
          first = false;
        }
      }
      std::memcpy(p, scan.values.get(), scan.valueBytes);
      break;
    }
    case DeltaEncoding::kDenseXor:
      raw.resize(old.size());
      for (size_t i = 0; i < old.size(); ++i) raw[i] = old[i] ^ next[i];
      break;
  }

  BlockHeader h{};
  h.magic = kBlockMagic;
  h.encoding = static_cast<uint8_t>(enc);
  h.elemBytes = static_cast<uint8_t>(e);
  h.elements = n;
  h.changed = scan.changed;
  h.baseHash = hash(old);
  h.resultHash = hash(next);
  h.rawBytes = raw.size();

  std::vector<uint8_t> stored;
  const std::vector<uint8_t>* payload = &raw;
  if (options.zstd && !raw.empty()) {
    stored.resize(ZSTD_compressBound(raw.size()));
    size_t z =
        ZSTD_compress(stored.data(), stored.size(), raw.data(), raw.size(), options.zstdLevel);
    if (ZSTD_isError(z))
      return TIDE_ERROR(Code::kInternal, std::string("zstd: ") + ZSTD_getErrorName(z));
    if (z < raw.size()) {  // keep compression only when it pays
      stored.resize(z);
      payload = &stored;
      h.flags |= kFlagZstd;
    }
  }
  h.storedBytes = payload->size();
  h.payloadHash = hash(*payload);
  appendRaw(out, &h, sizeof h);
  appendRaw(out, payload->data(), payload->size());

  DeltaStats st;
  st.elements = n;
  st.changed = scan.changed;
  st.inputBytes = next.size();
  st.encodedBytes = sizeof h + payload->size();
  st.encoding = enc;
  return st;
}

namespace {

Result<BlockHeader> readHeader(std::span<const uint8_t> block) {
  BlockHeader h;
  if (block.size() < sizeof h)
    return TIDE_ERROR(Code::kDataLoss, "delta block truncated: " + std::to_string(block.size()) +
                                           " bytes, header needs " + std::to_string(sizeof h));
  std::memcpy(&h, block.data(), sizeof h);
  if (h.magic != kBlockMagic) return TIDE_ERROR(Code::kDataLoss, "not a delta block (bad magic)");
  if (h.encoding > 3 ||
      (h.elemBytes != 1 && h.elemBytes != 2 && h.elemBytes != 4 && h.elemBytes != 8))
    return TIDE_ERROR(Code::kDataLoss, "delta block has an unknown encoding or element size");
  if (h.storedBytes > block.size() - sizeof h)
    return TIDE_ERROR(Code::kDataLoss, "delta block truncated: payload of " +
                                           std::to_string(h.storedBytes) + " bytes, " +
                                           std::to_string(block.size() - sizeof h) + " present");
  if (h.elements >= kMaxElements)
    return TIDE_ERROR(Code::kDataLoss, "delta block declares too many elements");
  if (h.changed > h.elements) return TIDE_ERROR(Code::kDataLoss, "delta block: changed > elements");
  return h;
}

}  // namespace

Result<DeltaStats> inspectDelta(std::span<const uint8_t> block) {
  TIDE_ASSIGN_OR_RETURN(BlockHeader h, readHeader(block));
  DeltaStats st;
  st.elements = h.elements;
  st.changed = h.changed;
  st.inputBytes = h.elements * h.elemBytes;
  st.encodedBytes = sizeof h + h.storedBytes;
  st.encoding = static_cast<DeltaEncoding>(h.encoding);
  return st;
}

Status checkDelta(std::span<const uint8_t> block, std::span<const uint8_t> target) {
  TIDE_ASSIGN_OR_RETURN(BlockHeader h, readHeader(block));
  if (target.size() != h.elements * h.elemBytes)
    return TIDE_ERROR(Code::kInvalidArgument,
                      "delta is for " + std::to_string(h.elements * h.elemBytes) +
                          " bytes, target has " + std::to_string(target.size()));
  if (hash(block.subspan(sizeof h, h.storedBytes)) != h.payloadHash)
    return TIDE_ERROR(Code::kDataLoss, "delta payload corrupt (checksum mismatch)");
  if (hash(target) != h.baseHash)
    return TIDE_ERROR(Code::kDataLoss,
                      "delta base mismatch: the target is not the version this "
                      "delta was made from");
  return Status::ok();
}

Result<size_t> applyDelta(std::span<const uint8_t> block, std::span<uint8_t> target, bool checked) {
  if (!checked) TIDE_RETURN_IF_ERROR(checkDelta(block, target));
  TIDE_ASSIGN_OR_RETURN(BlockHeader h, readHeader(block));
  const uint32_t e = h.elemBytes;
  const uint64_t n = h.elements;
  std::span<const uint8_t> stored = block.subspan(sizeof h, h.storedBytes);

  std::vector<uint8_t> inflated;
  std::span<const uint8_t> raw = stored;
  if (h.flags & kFlagZstd) {
    if (h.rawBytes > (n * e) + (n + 7) / 8 + 10 * n)
      return TIDE_ERROR(Code::kDataLoss, "delta block declares an impossible raw size");
    inflated.resize(h.rawBytes);
    size_t z = ZSTD_decompress(inflated.data(), inflated.size(), stored.data(), stored.size());
    if (ZSTD_isError(z) || z != h.rawBytes)
      return TIDE_ERROR(Code::kDataLoss, "delta payload does not decompress to its declared size");
    raw = inflated;
  } else if (h.rawBytes != h.storedBytes) {
    return TIDE_ERROR(Code::kDataLoss, "delta block sizes disagree");
  }

  const uint64_t valueBytes = h.changed * e;
  auto enc = static_cast<DeltaEncoding>(h.encoding);
  // Validate fully before the first write, so a bad block never tears the target.
  switch (enc) {
    case DeltaEncoding::kUnchanged:
      if (h.changed != 0 || !raw.empty())
        return TIDE_ERROR(Code::kDataLoss, "unchanged delta block carries data");
      break;
    case DeltaEncoding::kBitmap: {
      const uint64_t bm = (n + 7) / 8;
      if (raw.size() != bm + valueBytes)
        return TIDE_ERROR(Code::kDataLoss, "bitmap delta has the wrong payload size");
      uint64_t count = 0;
      for (uint64_t i = 0; i < bm; ++i) count += std::popcount(raw[i]);
      if (count != h.changed || (n % 8 && (raw[bm - 1] >> (n % 8))))
        return TIDE_ERROR(Code::kDataLoss, "bitmap delta does not match its changed count");
      const uint8_t* vals = raw.data() + bm;
      for (uint64_t i = 0; i < bm; ++i)
        for (uint8_t bits = raw[i]; bits; bits &= bits - 1) {
          uint64_t idx = i * 8 + std::countr_zero(bits);
          std::memcpy(target.data() + idx * e, vals, e);
          vals += e;
        }
      break;
    }
    case DeltaEncoding::kIndices: {
      if (raw.size() < valueBytes) return TIDE_ERROR(Code::kDataLoss, "index delta too short");
      const uint8_t* p = raw.data();
      const uint8_t* end = raw.data() + raw.size() - valueBytes;
      std::vector<uint32_t> idx(h.changed);
      uint64_t cur = 0;
      for (uint64_t k = 0; k < h.changed; ++k) {
        uint64_t gap = 0;
        p = getVarint(p, end, gap);
        if (!p) return TIDE_ERROR(Code::kDataLoss, "index delta: truncated varint");
        cur = k == 0 ? gap : cur + gap + 1;
        if (cur >= n) return TIDE_ERROR(Code::kDataLoss, "index delta: index out of range");
        idx[k] = static_cast<uint32_t>(cur);
      }
      if (p != end) return TIDE_ERROR(Code::kDataLoss, "index delta: trailing bytes");
      const uint8_t* vals = end;
      for (uint64_t k = 0; k < h.changed; ++k)
        std::memcpy(target.data() + uint64_t(idx[k]) * e, vals + k * e, e);
      break;
    }
    case DeltaEncoding::kDenseXor:
      if (raw.size() != n * e) return TIDE_ERROR(Code::kDataLoss, "xor delta has the wrong size");
      for (uint64_t i = 0; i < n * e; ++i) target[i] ^= raw[i];
      break;
  }
  if (hash(target) != h.resultHash)
    return TIDE_ERROR(Code::kDataLoss, "delta result checksum mismatch after apply");
  return sizeof h + h.storedBytes;
}

}  // namespace tide::sync
