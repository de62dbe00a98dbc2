#ifndef COPUS_SHIM_H
#define COPUS_SHIM_H
// libopus's decoder API: callable from Swift as is (the variadic opus_decoder_ctl is not needed).
#include <opus.h>
#endif
