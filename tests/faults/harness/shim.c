/* Preloaded (LD_PRELOAD) into one broker by the fault suite: shifts and
 * skews its wall clock (CLOCK_REALTIME, gettimeofday, time), slows its
 * fsync/fdatasync and makes its log dir read-only, as the nemesis asks
 * through a shared control file. Read-only is emulated because a tmpfs
 * cannot be remounted read-only while files on it are open for writing
 * (mount answers "busy"), and a broker always holds its segments so.
 * The monotonic clocks and every sleep are left alone, as an NTP step or a
 * drifting oscillator would leave them (libfaketime 0.9.10 fakes those too
 * and breaks Python 3.11's sleeps, so the suite uses this instead).
 *
 * Control file (KCORE_FAULTS_CONTROL), four little-endian int64, read
 * through a shared mapping on every call:
 *   [0] offset_ns        added to the wall clock
 *   [1] drift_ppm        the wall clock runs (1 + drift_ppm / 1e6) as fast
 *   [2] drift_base_ns    real wall-clock time the drift started from
 *   [3] fsync_delay_us   sleep before every fsync / fdatasync
 *   [4] read_only        1: every write, open for writing, truncate,
 *                        rename, unlink or mkdir under KCORE_FAULTS_DATA_DIR
 *                        fails with EROFS, as on a file system remounted
 *                        read-only
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile const int64_t *control;
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *data_dir;

static void setup(void) {
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    data_dir = getenv("KCORE_FAULTS_DATA_DIR");
    const char *path = getenv("KCORE_FAULTS_CONTROL");
    if (path == NULL)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *mapped = mmap(NULL, 5 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (mapped != MAP_FAILED)
        control = (volatile const int64_t *)mapped;
}

static int64_t shifted(int64_t real_ns) {
    if (control == NULL)
        return real_ns;
    int64_t offset = control[0], ppm = control[1], base = control[2];
    int64_t drift = ppm != 0 ? (int64_t)((double)(real_ns - base) * (double)ppm / 1e6) : 0;
    return real_ns + offset + drift;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    pthread_once(&once, setup);
    int result = real_clock_gettime(id, ts);
    if (result == 0 && control != NULL && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        int64_t ns = shifted((int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec);
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return result;
}

int gettimeofday(struct timeval *tv, void *tz) {
    (void)tz;
    struct timespec ts;
    int result = clock_gettime(CLOCK_REALTIME, &ts);
    if (result == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return result;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

static void slow_down(void) {
    if (control != NULL && control[3] > 0)
        usleep((useconds_t)control[3]);
}

int fsync(int fd) {
    pthread_once(&once, setup);
    slow_down();
    return real_fsync(fd);
}

int fdatasync(int fd) {
    pthread_once(&once, setup);
    slow_down();
    return real_fdatasync(fd);
}

/* -- read-only log dir ------------------------------------------------------------- */
#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
#define WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND)

static int read_only(void) {
    pthread_once(&once, setup);
    return control != NULL && control[4] != 0 && data_dir != NULL && data_dir[0] != '\0';
}

static int under_data_dir(const char *path) {
    if (path == NULL)
        return 0;
    if (path[0] == '/')
        return strncmp(path, data_dir, strlen(data_dir)) == 0;
    char cwd[PATH_MAX];
    return getcwd(cwd, sizeof(cwd)) != NULL && strncmp(cwd, data_dir, strlen(data_dir)) == 0;
}

static int fd_under_data_dir(int fd) {
    char link[64], target[PATH_MAX];
    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = '\0';
    return strncmp(target, data_dir, strlen(data_dir)) == 0;
}

static int refuse(void) {
    errno = EROFS;
    return -1;
}

#define REFUSE_PATH(path) if (read_only() && under_data_dir(path)) return refuse()
#define REFUSE_FD(fd) if (read_only() && fd_under_data_dir(fd)) return refuse()

static mode_t mode_of(int flags, va_list args) {
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(args, int) : 0;
}

/* open and open64 (openat and openat64) are one function under two names:
 * both are interposed, each forwarding to its own next definition. */
#define OPEN_WRAPPER(name)                                                      \
    int name(const char *path, int flags, ...) {                                \
        va_list args;                                                           \
        va_start(args, flags);                                                  \
        mode_t mode = mode_of(flags, args);                                     \
        va_end(args);                                                           \
        if (flags & WRITE_FLAGS) REFUSE_PATH(path);                             \
        return NEXT(name)(path, flags, mode);                                   \
    }

#define OPENAT_WRAPPER(name)                                                    \
    int name(int dirfd, const char *path, int flags, ...) {                     \
        va_list args;                                                           \
        va_start(args, flags);                                                  \
        mode_t mode = mode_of(flags, args);                                     \
        va_end(args);                                                           \
        if ((flags & WRITE_FLAGS) && read_only()                                \
                && (under_data_dir(path) || fd_under_data_dir(dirfd)))          \
            return refuse();                                                    \
        return NEXT(name)(dirfd, path, flags, mode);                            \
    }

OPEN_WRAPPER(open)
OPEN_WRAPPER(open64)
OPENAT_WRAPPER(openat)
OPENAT_WRAPPER(openat64)

ssize_t write(int fd, const void *buffer, size_t count) {
    REFUSE_FD(fd);
    return NEXT(write)(fd, buffer, count);
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    REFUSE_FD(fd);
    return NEXT(pwrite)(fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    REFUSE_FD(fd);
    return NEXT(pwrite64)(fd, buffer, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int count) {
    REFUSE_FD(fd);
    return NEXT(writev)(fd, iov, count);
}

ssize_t pwritev(int fd, const struct iovec *iov, int count, off_t offset) {
    REFUSE_FD(fd);
    return NEXT(pwritev)(fd, iov, count, offset);
}

int ftruncate(int fd, off_t length) {
    REFUSE_FD(fd);
    return NEXT(ftruncate)(fd, length);
}

int ftruncate64(int fd, off_t length) {
    REFUSE_FD(fd);
    return NEXT(ftruncate64)(fd, length);
}

int rename(const char *from, const char *to) {
    REFUSE_PATH(from);
    return NEXT(rename)(from, to);
}

int renameat(int from_dir, const char *from, int to_dir, const char *to) {
    if (read_only() && (under_data_dir(from) || fd_under_data_dir(from_dir)))
        return refuse();
    return NEXT(renameat)(from_dir, from, to_dir, to);
}

int unlink(const char *path) {
    REFUSE_PATH(path);
    return NEXT(unlink)(path);
}

int unlinkat(int dirfd, const char *path, int flags) {
    if (read_only() && (under_data_dir(path) || fd_under_data_dir(dirfd)))
        return refuse();
    return NEXT(unlinkat)(dirfd, path, flags);
}

int mkdir(const char *path, mode_t mode) {
    REFUSE_PATH(path);
    return NEXT(mkdir)(path, mode);
}
