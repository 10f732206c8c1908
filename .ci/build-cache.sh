# Sourced by the build scripts (test/kcp/build.sh, test/kube/build.sh,
# .ci/build-cli.sh): a per-user cache of the binaries they build, keyed by
# the same stamp that decides whether bin/ is current, so that a fresh clone
# on a machine that built them once copies them rather than compiling them
# again. DEPCTRL_BUILD_CACHE names the cache directory (default
# $XDG_CACHE_HOME/depctrl/builds, or ~/.cache/depctrl/builds); set it to
# "off" to build without it.

build_cache_dir() { # NAME STAMP
  local root=${DEPCTRL_BUILD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/depctrl/builds}
  [ "$root" = off ] && return 1
  echo "$root/$1-$2"
}

# build_cache_restore NAME STAMP OUT FILE...: copies every FILE from the
# cache entry into OUT and succeeds, or fails when the entry lacks one.
build_cache_restore() {
  local name=$1 stamp=$2 out=$3; shift 3
  local dir; dir=$(build_cache_dir "$name" "$stamp") || return 1
  local f
  for f in "$@"; do [ -x "$dir/$f" ] || return 1; done
  for f in "$@"; do
    cp -f "$dir/$f" "$out/$f.tmp.$$" && mv -f "$out/$f.tmp.$$" "$out/$f"
  done
  echo "$name: copied $* from the build cache $dir"
}

# build_cache_save NAME STAMP OUT FILE...: stores every FILE of OUT as the
# cache entry, whole or not at all; a failure only costs the next build.
build_cache_save() {
  local name=$1 stamp=$2 out=$3; shift 3
  local dir; dir=$(build_cache_dir "$name" "$stamp") || return 0
  [ -d "$dir" ] && return 0
  local tmp; tmp=$(mkdir -p "$(dirname "$dir")" && mktemp -d "$dir.tmp.XXXXXX") || return 0
  local f
  for f in "$@"; do cp "$out/$f" "$tmp/$f" || { rm -rf "$tmp"; return 0; }; done
  mv "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  echo "$name: stored $* in the build cache $dir"
}
