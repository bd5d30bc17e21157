#!/usr/bin/env bash
# Installs, as root on a Debian machine, what `npm run build:prebuilds` and `npm run test:arm64` need:
# the Rust standard library for each prebuilt target, zig and cargo-zigbuild (PyPI) to link for them,
# qemu-user-static to run arm64 programs, musl-tools for test:musl's probe, and Debian's arm64
# package lists, from which test:arm64 unpacks an arm64 C library into a directory of its own. Nothing arm64 is installed system-wide:
# Debian's nodejs:arm64 would replace the host's node. Safe to run again.
set -euo pipefail

rustup target add \
  aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl \
  aarch64-apple-darwin x86_64-apple-darwin

python3 -m pip install --quiet --disable-pip-version-check ziglang==0.17.1 cargo-zigbuild==0.24.1

if ! dpkg --print-foreign-architectures | grep -qx arm64; then dpkg --add-architecture arm64; fi
if ! command -v qemu-aarch64-static >/dev/null || ! command -v musl-gcc >/dev/null ||
  ! apt-cache show libc6:arm64 >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends qemu-user-static musl-tools >/dev/null
fi
