/* A fault-injection library for the I/O tests (tests/io_faults.sh), loaded with LD_PRELOAD:
 *
 *   VISPEC_TEST_EIO=TEXT    every read, pread and readv of a file whose path contains TEXT fails with EIO
 *                           (a disk that returns errors: the read must be an error naming the file, never a
 *                           shorter file or a torn line); a mapping of such a file (mmap) holds its first
 *                           half only, and touching the second half raises SIGBUS, as a page the disk cannot
 *                           read does
 *   VISPEC_TEST_NOLOCK=1    every flock fails with ENOLCK (an NFS mount without a lock manager)
 *
 * Unset, each call goes straight to the C library's. Nothing here is built into vispec itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

/* Whether fd is a file whose path contains $VISPEC_TEST_EIO. */
static int failing(int fd) {
  const char* text = getenv("VISPEC_TEST_EIO");
  if (!text || !*text) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, text) != NULL;
}

typedef ssize_t (*read_fn)(int, void*, size_t);
typedef ssize_t (*pread_fn)(int, void*, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec*, int);
typedef int (*flock_fn)(int, int);

/* The C library's own function of that name (looked up once). */
#define REAL(name, type) \
  static type real_##name; \
  if (!real_##name) real_##name = (type)dlsym(RTLD_NEXT, #name)

ssize_t read(int fd, void* buf, size_t n) {
  REAL(read, read_fn);
  if (failing(fd)) return errno = EIO, -1;
  return real_read(fd, buf, n);
}

ssize_t pread(int fd, void* buf, size_t n, off_t offset) {
  REAL(pread, pread_fn);
  if (failing(fd)) return errno = EIO, -1;
  return real_pread(fd, buf, n, offset);
}

ssize_t pread64(int fd, void* buf, size_t n, off_t offset) {
  REAL(pread64, pread_fn);
  if (failing(fd)) return errno = EIO, -1;
  return real_pread64(fd, buf, n, offset);
}

ssize_t readv(int fd, const struct iovec* iov, int count) {
  REAL(readv, readv_fn);
  if (failing(fd)) return errno = EIO, -1;
  return real_readv(fd, iov, count);
}

typedef void* (*mmap_fn)(void*, size_t, int, int, int, off_t);

/* A private copy of the file's first len / 2 bytes (whole pages), mapped len bytes long: the pages past the
 * copy's end raise SIGBUS when touched. */
static void* half_mapping(int fd, size_t len, off_t offset) {
  REAL(pread, pread_fn);
  REAL(mmap, mmap_fn);
  const long page = sysconf(_SC_PAGESIZE);
  const size_t half = len / 2 / page * page;
  const int copy = memfd_create("vispec-test-half", MFD_CLOEXEC);
  if (copy < 0 || ftruncate(copy, (off_t)half) != 0) return MAP_FAILED;
  char buffer[1 << 16];
  for (size_t done = 0; done < half;) {
    const size_t want = half - done < sizeof buffer ? half - done : sizeof buffer;
    const ssize_t got = real_pread(fd, buffer, want, offset + (off_t)done);
    if (got <= 0 || write(copy, buffer, (size_t)got) != got) return close(copy), MAP_FAILED;
    done += (size_t)got;
  }
  void* p = real_mmap(NULL, len, PROT_READ, MAP_PRIVATE, copy, 0);
  close(copy);
  return p;
}

void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  REAL(mmap, mmap_fn);
  if (fd >= 0 && !(prot & PROT_WRITE) && failing(fd)) return half_mapping(fd, len, offset);
  return real_mmap(addr, len, prot, flags, fd, offset);
}

void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, len, prot, flags, fd, offset);
}

int flock(int fd, int operation) {
  REAL(flock, flock_fn);
  const char* nolock = getenv("VISPEC_TEST_NOLOCK");
  if (nolock && *nolock == '1') return errno = ENOLCK, -1;
  return real_flock(fd, operation);
}
