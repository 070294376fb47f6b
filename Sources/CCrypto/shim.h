// OpenSSL's libcrypto (libssl-dev, which libpq-dev depends on): scrypt, AES-256-CTR and a constant-time
// comparison, for Firebase Auth's password hashes.
#include <openssl/crypto.h>
#include <openssl/evp.h>
