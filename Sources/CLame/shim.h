// LAME imports as it is ; the Swift API lives in LameEncoding.
#ifndef CLAME_SHIM_H
#define CLAME_SHIM_H
#include <lame/lame.h>
#endif
