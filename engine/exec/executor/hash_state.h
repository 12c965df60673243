#pragma once
// An XXH3-64 streaming state, owned (for the executor's sources only: they
// link xxHash privately).

#include <xxhash.h>

namespace tide::exec {

struct HashState {
  HashState() : s(XXH3_createState()) { XXH3_64bits_reset(s); }
  ~HashState() { XXH3_freeState(s); }
  HashState(const HashState&) = delete;
  HashState& operator=(const HashState&) = delete;
  XXH3_state_t* s;
};

}  // namespace tide::exec
