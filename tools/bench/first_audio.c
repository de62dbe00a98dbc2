/* LD_PRELOAD shim for `make bench` (scenario 6): writes the CLOCK_MONOTONIC time of the first
 * ALSA write (snd_pcm_writei / writen / mmap_writei / mmap_writen) into $BENCH_FIRST_AUDIO_FILE,
 * then passes every call on unchanged. The same shim measures airtap and mpg123. */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int marked;

static void mark(void) {
    if (__atomic_exchange_n(&marked, 1, __ATOMIC_SEQ_CST)) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    const char *path = getenv("BENCH_FIRST_AUDIO_FILE");
    if (!path) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "%lld.%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
    fclose(f);
}

#define WRAP(name, buftype)                                                              \
    snd_pcm_sframes_t name(snd_pcm_t *pcm, buftype buf, snd_pcm_uframes_t size) {        \
        static snd_pcm_sframes_t (*real)(snd_pcm_t *, buftype, snd_pcm_uframes_t);       \
        if (!real) real = (snd_pcm_sframes_t (*)(snd_pcm_t *, buftype, snd_pcm_uframes_t)) \
                              dlsym(RTLD_NEXT, #name);                                   \
        if (size > 0) mark();                                                            \
        return real(pcm, buf, size);                                                     \
    }

WRAP(snd_pcm_writei, const void *)
WRAP(snd_pcm_writen, void **)
WRAP(snd_pcm_mmap_writei, const void *)
WRAP(snd_pcm_mmap_writen, void **)
