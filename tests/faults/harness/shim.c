/* Preloaded (LD_PRELOAD) into one broker by the fault suite: shifts and
 * skews its wall clock (CLOCK_REALTIME, gettimeofday, time) and slows its
 * fsync/fdatasync, as the nemesis asks through a shared control file.
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
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
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

static void setup(void) {
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    const char *path = getenv("KCORE_FAULTS_CONTROL");
    if (path == NULL)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *mapped = mmap(NULL, 4 * sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
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
    if (result == 0 && tv != NULL) {
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
