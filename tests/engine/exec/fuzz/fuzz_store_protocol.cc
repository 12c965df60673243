// libFuzzer target for the rendezvous store's server side
// (engine/exec/rendezvous/store_protocol.h): a client's bytes are decoded as the server
// decodes them, from a hello or from the first request, and every request
// that decodes is applied to a map as the server applies it (counters
// included). Nothing may throw or crash; what decodes must be what was sent.

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "engine/core/kv_store.h"
#include "engine/core/parse.h"
#include "engine/exec/rendezvous/store_protocol.h"

using namespace tide::exec;

namespace {

const std::string kToken = "fuzz-run-token";

void require(bool ok) {
  if (!ok) std::abort();
}

class Bytes {
 public:
  Bytes(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  bool read(void* out, size_t k) {
    if (k > n_) return false;
    if (k > 0) std::memcpy(out, p_, k);
    p_ += k;
    n_ -= k;
    return true;
  }
  size_t left() const { return n_; }

 private:
  const uint8_t* p_;
  size_t n_;
};

void requests(Bytes& in) {
  const StoreReader read = [&in](void* out, size_t k) { return in.read(out, k); };
  std::map<std::string, std::string> values;
  while (true) {
    const size_t before = in.left();
    auto r = readStoreRequest(read);
    if (!r.isOk()) {
      const auto code = r.status().code();
      require(code == tide::Code::kUnavailable || code == tide::Code::kInvalidArgument);
      return;
    }
    require(in.left() < before && r->key.size() <= kMaxStoreKey);
    switch (r->op) {
      case StoreOp::kSet:
        require(r->value.size() <= kMaxStoreValue);
        values[r->key] = r->value;
        break;
      case StoreOp::kGet:
        (void)values.count(r->key);  // the server waits; the map answers at once
        break;
      case StoreOp::kAdd: {
        auto it = values.find(r->key);
        auto sum = tide::addToCounter(it != values.end() ? &it->second : nullptr, r->delta);
        if (!sum.isOk()) {
          require(sum.status().code() == tide::Code::kInvalidArgument);
          break;
        }
        values[r->key] = std::to_string(*sum);
        auto back = tide::parseSigned(values[r->key], "counter");
        require(back.isOk() && *back == *sum);
        break;
      }
      case StoreOp::kErase:
        values.erase(r->key);
        break;
      default:
        std::abort();  // the decoder returns known ops only
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Bytes in(data + 1, size - 1);
  if (data[0] & 1) {
    const StoreReader read = [&in](void* out, size_t k) { return in.read(out, k); };
    tide::Status s = readStoreHello(read, kToken);
    if (!s.isOk()) return 0;
    // Accepted: the bytes were the magic and exactly this token.
    uint32_t magic = 0, len = 0;
    std::memcpy(&magic, data + 1, 4);
    std::memcpy(&len, data + 5, 4);
    require(magic == kStoreMagic && len == kToken.size() &&
            std::memcmp(data + 9, kToken.data(), len) == 0);
    requests(in);
  } else {
    requests(in);
  }
  return 0;
}
