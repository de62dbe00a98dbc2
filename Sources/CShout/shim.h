// libshout imports as it is (no variadics or macros airtap needs); the Swift API lives in ShoutSource.
#ifndef CSHOUT_SHIM_H
#define CSHOUT_SHIM_H
#include <shout/shout.h>
#endif
