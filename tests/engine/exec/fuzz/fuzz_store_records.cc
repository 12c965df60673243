// libFuzzer target for the records ranks read from each other through the
// rendezvous store: the weight store's placement, hashes, commit and
// stored / read reports (store_records.h), a step's timing and events, a
// version switch and an elastic join (rank_records.h), a region descriptor,
// the shm control address, and the number parsers behind the executor's
// epoch and join lease (engine/core/parse.h). The first byte picks the
// decoder, the rest is its input. A record that decodes must encode to bytes
// that decode to the same fields; nothing may throw or crash.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/core/parse.h"
#include "engine/exec/executor/rank_records.h"
#include "engine/exec/weight_store/store_records.h"
#include "engine/transport/shm/shm_control.h"
#include "engine/transport/transport.h"

using namespace tide::exec;

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

template <typename T>
void requireDataLoss(const tide::Result<T>& r) {
  if (!r.isOk()) require(r.status().code() == tide::Code::kDataLoss);
}

bool sameTiming(const TimingRecord& a, const TimingRecord& b) {
  return a.tStart == b.tStart && a.tEnd == b.tEnd && a.bytesSent == b.bytesSent &&
         a.bytesLocal == b.bytesLocal && a.verifySeconds == b.verifySeconds &&
         a.bytesFull == b.bytesFull && a.bytesRead == b.bytesRead && a.elements == b.elements &&
         a.changed == b.changed && a.bytesVerified == b.bytesVerified &&
         a.stageOutSeconds == b.stageOutSeconds && a.stageInSeconds == b.stageInSeconds;
}

void storeRecord(uint8_t which, const std::string& text, uint32_t fragments) {
  switch (which % 5) {
    case 0: {
      auto p = decodePlacement(text, fragments);
      requireDataLoss(p);
      if (!p.isOk()) return;
      require(p->replicas.size() == fragments);
      auto again = decodePlacement(encodePlacement(*p), fragments);
      require(again.isOk() && again->replicas == p->replicas);
      return;
    }
    case 1: {
      auto h = decodeHashes(text);
      requireDataLoss(h);
      if (!h.isOk()) return;
      auto again = decodeHashes(encodeHashes(*h));
      require(again.isOk() && again->fragments == h->fragments && again->groups == h->groups);
      return;
    }
    case 2: {
      auto c = decodeCommit(text, fragments);
      requireDataLoss(c);
      if (!c.isOk()) return;
      auto again = decodeCommit(encodeCommit(*c), fragments);
      require(again.isOk() && again->manifestHash == c->manifestHash &&
              again->manifest == c->manifest &&
              again->placement.replicas == c->placement.replicas && again->groups == c->groups);
      return;
    }
    case 3: {
      const uint32_t nodes = 1 + fragments;
      auto r = decodeStoredReport(text, nodes);
      requireDataLoss(r);
      if (r.isOk())
        for (uint32_t n : r->lost) require(n < nodes);
      return;
    }
    default:
      requireDataLoss(decodeReadReport(text));
      return;
  }
}

void rankRecord(uint8_t which, const std::string& text) {
  switch (which % 5) {
    case 0: {
      auto t = decodeTiming(text);
      requireDataLoss(t);
      if (!t.isOk()) return;
      auto again = decodeTiming(encodeTiming(*t));
      require(again.isOk() && sameTiming(*again, *t));
      return;
    }
    case 1: {
      auto e = decodeEvents(text);
      requireDataLoss(e);
      if (e.isOk()) require(encodeEvents(*e) == text);  // one encoding per list of events
      return;
    }
    case 2: {
      auto s = decodeSwitch(text);
      requireDataLoss(s);
      if (!s.isOk()) return;
      auto again = decodeSwitch(encodeSwitch(*s));
      require(again.isOk() && again->reads == s->reads && again->torn == s->torn &&
              again->pauseSeconds == s->pauseSeconds && again->shadowBytes == s->shadowBytes);
      return;
    }
    case 3: {
      auto j = decodeJoinPull(text);
      requireDataLoss(j);
      if (!j.isOk()) return;
      auto again = decodeJoinPull(encodeJoinPull(*j));
      require(again.isOk() && again->version == j->version && again->bytes == j->bytes &&
              again->seconds == j->seconds);
      return;
    }
    default: {
      auto w = decodeWindow(text);
      requireDataLoss(w);
      if (!w.isOk()) return;
      auto again = decodeWindow(encodeWindow(*w));
      require(again.isOk() && again->tStart == w->tStart && again->tEnd == w->tEnd);
      return;
    }
  }
}

void otherRecord(uint8_t which, const std::string& text) {
  switch (which % 5) {
    case 0: {
      auto r = tide::transport::RemoteRegion::deserialize(text);
      if (r.isOk()) require(r->serialize() == text);
      return;
    }
    case 1: {
      auto a = tide::transport::shm::decodeControlAddress(text);
      if (!a.isOk()) return;
      auto again = tide::transport::shm::decodeControlAddress(encodeControlAddress(*a));
      require(again.isOk() && again->name == a->name && again->nonce == a->nonce);
      return;
    }
    case 2: {
      auto v = tide::parseUnsigned(text, "fuzz", 2 + static_cast<int>(which % 35));
      if (!v.isOk()) {
        require(v.status().code() == tide::Code::kInvalidArgument);
        return;
      }
      require(*tide::parseUnsigned(std::to_string(*v), "fuzz") == *v);
      return;
    }
    case 3: {
      auto v = tide::parseSigned(text, "fuzz");
      if (v.isOk()) require(*tide::parseSigned(std::to_string(*v), "fuzz") == *v);
      return;
    }
    default: {
      auto v = tide::parseDouble(text, "fuzz");
      if (v.isOk()) require(*v == *v && *v - *v == 0);  // finite
      return;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t which = data[0];
  const uint32_t fragments = data[1];
  const std::string text(reinterpret_cast<const char*>(data + 2), size - 2);
  switch (which / 5 % 3) {
    case 0:
      storeRecord(which, text, fragments);
      break;
    case 1:
      rankRecord(which, text);
      break;
    default:
      otherRecord(which, text);
      break;
  }
  return 0;
}
