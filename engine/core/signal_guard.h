#pragma once
// SignalGuard: installs one handler for SIGINT and SIGTERM and restores the
// handlers it replaced when it goes away (on every return and throw).

#include <signal.h>

namespace tide {

class SignalGuard {
 public:
  // `flags`: sigaction's sa_flags (SA_RESTART: interrupted calls resume).
  explicit SignalGuard(void (*handler)(int), int flags = SA_RESTART) {
    struct sigaction sa {};
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    ::sigaction(SIGINT, &sa, &oldInt_);
    ::sigaction(SIGTERM, &sa, &oldTerm_);
  }
  ~SignalGuard() {
    ::sigaction(SIGINT, &oldInt_, nullptr);
    ::sigaction(SIGTERM, &oldTerm_, nullptr);
  }
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;

 private:
  struct sigaction oldInt_ {};
  struct sigaction oldTerm_ {};
};

}  // namespace tide
