#include "io/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <cstdio>
#include <mutex>

#include "core/check.h"
#include "core/exit_codes.h"

namespace vispec {

namespace {

// The live mappings, for the SIGBUS handler. A fixed table, so that the handler reads it without locks or
// allocation: a slot is free (0), being filled or emptied (1), or live (2). Loading maps one file at a time
// per thread, so 64 slots are far more than are ever live; a mapping that finds no slot is unguarded (a fault
// in it is a crash, as before) and says so once.
constexpr int kSlots = 64;
constexpr size_t kPathBytes = 1024;
struct Slot {
  std::atomic<int> state{0};
  uintptr_t begin = 0, end = 0;
  char path[kPathBytes] = {};
};
Slot g_slots[kSlots];
struct sigaction g_previous {};

// The handler's message, built in a fixed buffer and written with one write (mpirun forwards each write).
struct Message {
  char text[kPathBytes + 256];
  size_t length = 0;
  void add(const char* s) {
    while (*s && length + 1 < sizeof text) text[length++] = *s++;
  }
  void add_number(uint64_t n) {
    char digits[24];
    int i = sizeof digits;
    digits[--i] = '\0';
    do digits[--i] = char('0' + n % 10);
    while ((n /= 10) && i > 0);
    add(digits + i);
  }
};

// Async-signal-safe: atomics, write and _exit only.
extern "C" void on_sigbus(int, siginfo_t* info, void*) {
  const auto address = reinterpret_cast<uintptr_t>(info->si_addr);
  for (auto& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) != 2 || address < slot.begin || address >= slot.end) continue;
    Message m;
    m.add("vispec: error: ");
    m.add(slot.path);
    m.add(": cannot read byte ");
    m.add_number(address - slot.begin);
    m.add(" of the mapped file: Input/output error, or the file was truncated while in use\n");
    (void)!::write(STDERR_FILENO, m.text, m.length);
    ::_exit(kExitUserError);
  }
  // Not ours: give SIGBUS back to the handler that was there before; the faulting instruction runs again on
  // return and faults into it (the default one dumps core, an MPI library's prints its stack first).
  ::sigaction(SIGBUS, &g_previous, nullptr);
}

// Installs on_sigbus unless it is already SIGBUS's handler, keeping the one it replaces (a library such as
// MPI may have installed its own since the last call).
void install_sigbus_handler() {
  static std::mutex mutex;
  const std::lock_guard<std::mutex> lock(mutex);
  struct sigaction current {};
  ::sigaction(SIGBUS, nullptr, &current);
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigbus) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGBUS, &sa, &g_previous);
}

// The slot now guarding [data, data + size), or -1.
int guard(const void* data, uint64_t size, const std::string& path) {
  install_sigbus_handler();
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    g_slots[i].begin = reinterpret_cast<uintptr_t>(data);
    g_slots[i].end = g_slots[i].begin + size;
    std::strncpy(g_slots[i].path, path.c_str(), kPathBytes - 1);
    g_slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  static std::once_flag warned;
  std::call_once(warned, [] {
    std::fputs(
        "vispec: warning: over 64 files mapped at once; a read error in the "
        "newest ones is a crash, not an error line\n",
        stderr);
  });
  return -1;
}

void unguard(int slot) {
  if (slot < 0) return;
  g_slots[slot].state.store(1, std::memory_order_release);
  g_slots[slot].state.store(0, std::memory_order_release);
}

}  // namespace

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VISPEC_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    VISPEC_FAIL(path, ": cannot stat: ", std::strerror(err));
  }
  size_ = uint64_t(st.st_size);
  void* data = nullptr;
  if (size_ > 0) data = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);  // the mapping stays valid without the descriptor
  VISPEC_CHECK(data != MAP_FAILED, path, ": mmap failed: ", std::strerror(err));
  const uint64_t n = size_;
  const int slot = data ? guard(data, n, path) : -1;
  mapping_ = std::shared_ptr<void>(data, [n, slot](void* p) {
    unguard(slot);  // before the range can be mapped again by something else
    if (p) ::munmap(p, n);
  });
}

}  // namespace vispec
