#ifndef CEBUR128_SHIM_H
#define CEBUR128_SHIM_H
// libebur128 (EBU R128 loudness): callable from Swift as is.
#include <ebur128.h>
#endif
