// libmpg123 imports as it is; the Swift API lives in MPG123Decoding.
#ifndef CMPG123_SHIM_H
#define CMPG123_SHIM_H
#include <sys/types.h>
#include <mpg123.h>
#endif
