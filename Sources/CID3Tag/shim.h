// libid3tag imports as it is; the Swift API lives in ID3Tagging.
#ifndef CID3TAG_SHIM_H
#define CID3TAG_SHIM_H
#include <id3tag.h>
#endif
