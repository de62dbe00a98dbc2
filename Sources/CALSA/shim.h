// What Swift cannot call in libasound: the variadic error handler.
#ifndef CALSA_SHIM_H
#define CALSA_SHIM_H
#include <alsa/asoundlib.h>

static void calsa_quiet_error_handler(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
// ALSA prints its own diagnostics to stderr; airtap reports errors itself, in one line.
static inline void calsa_silence_errors(void) { snd_lib_error_set_handler(calsa_quiet_error_handler); }
#endif
