#ifndef CVORBIS_SHIM_H
#define CVORBIS_SHIM_H
// libvorbis's decoding API (and libogg's ogg_packet it takes): callable from Swift as is.
#include <vorbis/codec.h>
#endif
