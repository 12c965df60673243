#include "engine/exec/chaos/chaos_protocol.h"

#include <sstream>

namespace tide::exec::chaos {

std::string Command::encode() const {
  std::ostringstream o;
  switch (kind) {
    case CommandKind::kEpoch:
      o << "epoch " << epoch << ' ' << version << ' ' << loseNode << ' ' << loseStep << ' '
        << (loseDuringImport ? 1 : 0);
      break;
    case CommandKind::kUpdate:
      o << "update " << epoch << ' ' << version;
      break;
    case CommandKind::kStop:
      o << "stop";
      break;
  }
  return o.str();
}

Result<Command> Command::decode(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  in >> word;
  Command c;
  bool ok = true;
  if (word == "epoch") {
    int imp = 0;
    c.kind = CommandKind::kEpoch;
    ok = static_cast<bool>(in >> c.epoch >> c.version >> c.loseNode >> c.loseStep >> imp);
    c.loseDuringImport = imp != 0;
  } else if (word == "update") {
    c.kind = CommandKind::kUpdate;
    ok = static_cast<bool>(in >> c.epoch >> c.version);
  } else if (word != "stop") {
    ok = false;
  }
  if (!ok) return TIDE_ERROR(Code::kDataLoss, "chaos: bad command '" + text + "'");
  return c;
}

std::string Reply::encode() const {
  std::ostringstream o;
  o << (ok ? "ok" : "fail") << ' ' << served << ' ' << digest << ' ' << generationReads << ' '
    << tornReads << ' ' << (reloaded ? 1 : 0) << ' ' << message;
  return o.str();
}

Result<Reply> Reply::decode(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  Reply r;
  int reloaded = 0;
  if (!(in >> word >> r.served >> r.digest >> r.generationReads >> r.tornReads >> reloaded) ||
      (word != "ok" && word != "fail")) {
    return TIDE_ERROR(Code::kDataLoss, "chaos: bad reply '" + text + "'");
  }
  r.ok = word == "ok";
  r.reloaded = reloaded != 0;
  std::getline(in, r.message);
  if (!r.message.empty() && r.message.front() == ' ') r.message.erase(0, 1);
  return r;
}

std::string commandPrefix(int n) {
  return "chaos/cmd/" + std::to_string(n) + "/";
}
std::string commandKey(int n) {
  return commandPrefix(n) + "command";
}
std::string replyKey(int n, int rank) {
  return commandPrefix(n) + "reply/r" + std::to_string(rank);
}
std::string repliesKey(int n) {
  return commandPrefix(n) + "replies";
}
std::string readyKey(int n) {
  return commandPrefix(n) + "ready";
}
std::string allReadyKey(int n) {
  return commandPrefix(n) + "ready-all";
}
std::string decisionKey(int n) {
  return commandPrefix(n) + "decision";
}
std::string epochPrefix(int epoch) {
  return "chaos/e" + std::to_string(epoch) + "/";
}
std::string abortKey(int epoch) {
  return epochPrefix(epoch) + "abort";
}

}  // namespace tide::exec::chaos
