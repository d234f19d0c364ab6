"""`auditwheel repair` that leaves nothing outside the wheel but the C library.

auditwheel's manylinux policies let a wheel rely on the system's libstdc++, libgcc_s, libz and a
few more; kbench's wheel carries those too (snappy is C++), so that `ldd` of the installed
extension names only the C library (libc, libm, libpthread, libdl, librt) and the loader outside
the wheel.  (Linking Debian's static libsnappy-shared.a instead was tried: its build of snappy
compresses about a third slower than libsnappy.so's, benchmarks/README.md.)  The platform tag
is still the manylinux one auditwheel derives from the symbol versions used.

    python scripts/repair_wheel.py --wheel-dir dist build/kafka_kbench-...-linux_x86_64.whl

Made for auditwheel 6.8 (scripts/build-wheel.sh installs that version).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

import auditwheel.policy as policy
from auditwheel.main import main

#: The only libraries the repaired wheel may take from the system (the loader aside).
C_LIBRARY = frozenset({"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"})

if not hasattr(policy, "_fixup_musl_libc_soname"):
    sys.exit(
        f"repair_wheel: this auditwheel ({policy.__file__}) is not 6.8; install it with: pip install 'auditwheel==6.8.*'"
    )
_policy_whitelist = policy._fixup_musl_libc_soname


def _c_library_only(libc: object, arch: object, whitelist: Iterable[str]) -> frozenset[str]:
    return _policy_whitelist(libc, arch, [s for s in whitelist if s in C_LIBRARY])


policy._fixup_musl_libc_soname = _c_library_only

if __name__ == "__main__":
    sys.argv = ["auditwheel", "repair", *sys.argv[1:]]
    sys.exit(main())
