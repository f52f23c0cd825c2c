# sdk_stage.sh - sourced by the SDK example tests: installs BUILD_ROOT into
# $work/stage and points pkg-config at the staged singa-sdk.pc only, so that
# an example builds from the install as a user's out-of-tree plugin would.
# Needs $work, $build_root and a fail() function; sets $pc.

echo "== installing $build_root into $work/stage"
meson install -C "$build_root" --no-rebuild --destdir "$work/stage" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "meson install failed"; }

pc=$(find "$work/stage" -name singa-sdk.pc | head -n 1)
[ -n "$pc" ] || fail "the install has no singa-sdk.pc"
pcdir=$(dirname "$pc")
echo "== using $pc"
cat "$pc"

# A .pc file written for the final prefix points at /usr/local (or wherever);
# in a staging folder pkg-config must prepend the folder to its paths. A
# relocatable .pc (paths relative to ${pcfiledir}) needs nothing.
if grep -q 'pcfiledir' "$pc"; then
  unset PKG_CONFIG_SYSROOT_DIR || true
else
  PKG_CONFIG_SYSROOT_DIR="$work/stage"
  export PKG_CONFIG_SYSROOT_DIR
fi
PKG_CONFIG_PATH=$pcdir
PKG_CONFIG_LIBDIR=$pcdir
export PKG_CONFIG_PATH PKG_CONFIG_LIBDIR
