#ifndef CCHROMAPRINT_SHIM_H
#define CCHROMAPRINT_SHIM_H
#include <chromaprint.h>
#endif
