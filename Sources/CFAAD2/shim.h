// FAAD2 imports as it is; the Swift API lives in AACDecoding.
#ifndef CFAAD2_SHIM_H
#define CFAAD2_SHIM_H
#include <neaacdec.h>
#endif
