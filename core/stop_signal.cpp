#include "core/stop_signal.h"

#include <atomic>
#include <csignal>
#include <initializer_list>

namespace vispec {

namespace {
std::atomic<int> g_signal{0};
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int sig) {  // async-signal-safe: lock-free atomics only
  g_signal.store(sig);
  g_stop.store(true);
}
}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGTERM, SIGUSR1, SIGINT}) sigaction(sig, &sa, nullptr);
}

bool stop_requested() { return g_stop.load(); }
int stop_signal_number() { return g_signal.load(); }
void request_stop() { g_stop.store(true); }

}  // namespace vispec
