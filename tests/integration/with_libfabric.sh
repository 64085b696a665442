#!/bin/sh
# Runs a command where libfabric's tcp;ofi_rxm provider exists; exits 77
# (skipped), saying why, where it does not.
if ! command -v ldconfig >/dev/null 2>&1 || ! ldconfig -p 2>/dev/null | grep -q 'libfabric\.so\.1 '; then
  echo "skipped: libfabric.so.1 is not installed (Debian: libfabric1)"
  exit 77
fi
exec "$@"
