/* Wine 8 (Debian 12) lacks bcryptprimitives.dll, which Rust >= 1.78 std
 * imports for ProcessPrng. This stand-in forwards to RtlGenRandom so that
 * Windows test binaries run under wine; it is never shipped. */
#include <windows.h>
#define SystemFunction036 NTAPI SystemFunction036
#include <ntsecapi.h>
#undef SystemFunction036
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!RtlGenRandom(data, chunk)) return FALSE;
        data += chunk; len -= chunk;
    }
    return TRUE;
}
