#!/bin/sh
# version.sh: agorad's version from git, usable as a Debian version:
#   tag v1.2.3            -> 1.2.3
#   3 commits after it    -> 1.2.3+3.gabc1234
#   no tag yet            -> 0.0.0+<commits>.g<hash>
#   uncommitted changes   -> ...+dirty
# Outside a git checkout (a source tarball): $AGORAD_VERSION or 0.0.0+unknown.
# version.sh REV: the version a build of commit REV gets (never dirty).
set -e
cd "$(dirname "$0")/.."
rev=${1:-HEAD}
if [ "$rev" = HEAD ]; then dirty=--dirty; set -- --dirty; else dirty=; set -- "$rev"; fi
if ! d=$(git describe --tags --match 'v[0-9]*' "$@" 2>/dev/null); then
  if n=$(git rev-list --count "$rev" 2>/dev/null); then
    d="v0.0.0-$n-g$(git rev-parse --short=7 "$rev")"
    [ -z "$dirty" ] || git diff --quiet HEAD 2>/dev/null || d="$d-dirty"
  else
    echo "${AGORAD_VERSION:-0.0.0+unknown}"; exit 0
  fi
fi
# v1.2.3-4-gabc[-dirty] -> 1.2.3+4.gabc[.dirty]
echo "$d" | sed -e 's/^v//' -e 's/-\([0-9]*\)-g\([0-9a-f]*\)/+\1.g\2/' -e 's/-dirty$/.dirty/' -e 's/^\([^+]*\)\.dirty$/\1+dirty/'
