// OpenSSL's libcrypto (EVP ciphers) imports as it is; the Swift API lives in AESDecryption.
#ifndef CCRYPTO_SHIM_H
#define CCRYPTO_SHIM_H
#include <openssl/evp.h>
#endif
