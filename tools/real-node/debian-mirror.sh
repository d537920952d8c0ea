#!/usr/bin/env bash
# The Debian mirror this machine's apt uses, for images.sh's debootstrap and the root
# filesystem's own sources: the project names no mirror, it takes the one that works here.
# Prints two lines: the archive URI (for SUITE) and the security archive URI (SUITE-security).
# Reads /etc/apt/sources.list, then /etc/apt/sources.list.d/*.list and *.sources (deb822) in
# apt's order (by file name); the archive is the first `deb` source for SUITE, else the first
# that looks like a Debian archive (signed by Debian's archive keyring, or a path ending in
# /debian); the security archive is the first `deb` source for SUITE-security, else the
# archive's URI with -security appended (the layout of Debian's own mirror network).
# Usage: tools/real-node/debian-mirror.sh SUITE
# Env: KRT_DEBIAN_MIRROR, KRT_DEBIAN_SECURITY_MIRROR (overrides), KRT_APT_DIR (/etc/apt).
set -euo pipefail
suite=${1:?usage: debian-mirror.sh SUITE}
apt_dir=${KRT_APT_DIR:-/etc/apt}

# One line per enabled `deb` source: "<uri> <suite>[,<suite>...] <signed-by or ->".
sources() {
  local file
  shopt -s nullglob
  for file in "$apt_dir/sources.list" $(printf '%s\n' "$apt_dir"/sources.list.d/*.list "$apt_dir"/sources.list.d/*.sources | sort); do
    [ -f "$file" ] || continue
    case $file in
      *.sources) deb822 "$file" ;;
      *) one_line "$file" ;;
    esac
  done
}

# `deb [option=value ...] URI SUITE [COMPONENT ...]`
one_line() {
  awk '
    { sub(/#.*/, "") }
    $1 != "deb" { next }
    {
      i = 2; signed = "-"
      if ($i ~ /^\[/) {
        for (; i <= NF; i++) {
          if ($i ~ /^\[?signed-by=/) { signed = $i; sub(/^\[?signed-by=/, "", signed); sub(/\]$/, "", signed) }
          if ($i ~ /\]$/) { i++; break }
        }
      }
      if (i + 1 <= NF) print $i, $(i + 1), signed
    }' "$1"
}

# Stanzas of `Field: value` lines; continuation lines (a leading blank) belong to the field
# before them (an inline Signed-By key) and are skipped.
deb822() {
  awk '
    function flush() {
      if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no" && uris != "" && suites != "") {
        n = split(uris, u, " "); split(suites, s, " ")
        joined = s[1]; for (k = 2; k in s; k++) joined = joined "," s[k]
        for (j = 1; j <= n; j++) print u[j], joined, (signed == "" ? "-" : signed)
      }
      types = uris = suites = signed = enabled = ""; delete s
    }
    /^#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ { next }
    {
      field = tolower($1); value = $0
      sub(/^[^:]*:[ \t]*/, "", value); sub(/[ \t]+$/, "", value)
      if (field == "types:") types = value
      else if (field == "uris:") uris = value
      else if (field == "suites:") suites = value
      else if (field == "signed-by:") signed = value
      else if (field == "enabled:") enabled = value
    }
    END { flush() }' "$1"
}

first_for_suite() { # SUITE: the first source whose suites include it
  awk -v want="$1" '{ n = split($2, s, ","); for (i = 1; i <= n; i++) if (s[i] == want) { print $1; exit } }'
}

first_debian() {
  awk '$3 ~ /debian-archive-keyring/ || $1 ~ /\/debian\/?$/ { print $1; exit }'
}

all=$(sources)
mirror=${KRT_DEBIAN_MIRROR:-$(first_for_suite "$suite" <<<"$all")}
[ -n "$mirror" ] || mirror=$(first_debian <<<"$all")
if [ -z "$mirror" ]; then
  echo "debian-mirror.sh: no Debian source in $apt_dir's sources (set KRT_DEBIAN_MIRROR to a Debian mirror's URI)" >&2
  exit 1
fi
mirror=${mirror%/}
security=${KRT_DEBIAN_SECURITY_MIRROR:-$(first_for_suite "$suite-security" <<<"$all")}
security=${security%/}
printf '%s\n%s\n' "$mirror" "${security:-$mirror-security}"
