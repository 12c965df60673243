#pragma once
// How the soak driver and its long-lived rank processes talk, through the
// run's rendezvous store. The driver posts numbered commands; every rank
// runs them in order and replies to each:
//
//   epoch E V   build a new transport and executor (store prefix
//               chaos/e<E>/) starting at version V: after a failed update,
//               and for ranks the driver restarted. An inference rank keeps
//               the shard it serves; a restarted one loads V from its
//               checkpoint (the generator); a store run reloads V from the store.
//   update S    run update S (version S-1 -> S). Once a rank has verified
//               it, it waits at the commit gate: it counts itself ready,
//               and the driver answers commit when every rank was ready,
//               abort when one failed, died or the update ran out of time
//               (then it also publishes the epoch's abort key, so that ranks
//               blocked on a dead peer leave at once). Commit is all or nothing.
//   stop        tear down and exit.
//
// A reply carries the outcome, the version the rank serves and the digest
// of its shard (shard_digest.h), which the driver checks against the
// generator on its own, and what emulated generation read since the last reply.

#include <cstdint>
#include <string>

#include "engine/core/status.h"

namespace tide::exec::chaos {

enum class CommandKind : uint8_t { kEpoch, kUpdate, kStop };

struct Command {
  CommandKind kind = CommandKind::kStop;
  int epoch = 0;
  int version = 0;  // epoch: the start version; update: the step
  // epoch, store runs: the store-node fault of this epoch (-1: none).
  int loseNode = -1;
  int loseStep = 0;
  bool loseDuringImport = false;
  std::string encode() const;
  static Result<Command> decode(const std::string& text);
};

struct Reply {
  bool ok = false;
  int served = -1;               // the version the rank serves (-1: none, or no inference shard)
  uint64_t digest = 0;           // of the shard it serves
  uint64_t generationReads = 0;  // since the rank's last reply
  uint64_t tornReads = 0;
  bool reloaded = false;  // epoch: it loaded the version from its checkpoint
  std::string message;    // why it failed
  std::string encode() const;
  static Result<Reply> decode(const std::string& text);
};

// Keys, all under "chaos/".
std::string commandPrefix(int n);  // everything of command n
std::string commandKey(int n);
std::string replyKey(int n, int rank);
std::string repliesKey(int n);   // counter of replies
std::string readyKey(int n);     // counter of ranks at the commit gate
std::string allReadyKey(int n);  // set by the last rank to arrive there
std::string decisionKey(int n);  // "commit" | "abort"
std::string epochPrefix(int epoch);
std::string abortKey(int epoch);  // its value says why

// The environment variable that tells a restarted rank its first command.
inline constexpr const char* kFirstCommandEnv = "TIDE_CHAOS_FIRST_COMMAND";

}  // namespace tide::exec::chaos
