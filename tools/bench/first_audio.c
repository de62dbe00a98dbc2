/* LD_PRELOAD shim for `make bench` (scenario 6): writes the CLOCK_MONOTONIC time of the first
 * ALSA write (snd_pcm_writei / writen / mmap_writei / mmap_writen) into $BENCH_FIRST_AUDIO_FILE,
 * then passes every call on unchanged. The same shim measures airtap and mpg123.
 *
 * mpg123 reaches libasound through its dlopen()ed output module (RTLD_LOCAL), where
 * dlsym(RTLD_NEXT) cannot see it: without the fallback below the shim called NULL and mpg123
 * died of SIGSEGV on its first write, so its "CPU per minute" covered 0.3 s of life, not the run. */
#define _GNU_SOURCE
#include <alsa/asoundlib.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int marked;

/* The real function: the next definition after the shim, else libasound's own (already loaded
 * by whoever calls us, so RTLD_NOLOAD finds it whatever scope it was loaded into). */
static void *real_symbol(const char *name) {
    void *sym = dlsym(RTLD_NEXT, name);
    if (sym) return sym;
    void *lib = dlopen("libasound.so.2", RTLD_LAZY | RTLD_NOLOAD);
    if (!lib) lib = dlopen("libasound.so.2", RTLD_LAZY);
    if (!lib) abort();
    sym = dlsym(lib, name);
    if (!sym) abort();
    return sym;
}

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
                              real_symbol(#name);                                   \
        if (size > 0) mark();                                                            \
        return real(pcm, buf, size);                                                     \
    }

WRAP(snd_pcm_writei, const void *)
WRAP(snd_pcm_writen, void **)
WRAP(snd_pcm_mmap_writei, const void *)
WRAP(snd_pcm_mmap_writen, void **)
