#!/usr/bin/env bash
# tests/repo_hygiene.sh: the repository stands on its own.
#
# Checks the tracked files (git ls-files), each check counted once:
#   outside-refs     no file refers to something outside the repository:
#                    `../shared`, `shared/DESIGN`, `shared/traces`
#   machine-paths    no file names a directory of the machine it was made on:
#                    /work/, /home/, /root/, /Users/ (anywhere, code included)
#   result-paths     committed results (BENCHMARKS.md, docs/benchmarks-history.md,
#                    crates/larder-sim/results.*, crates/larder-bench/results/**)
#                    hold no absolute path but the system's own: /usr/, /etc/,
#                    /proc/, /sys/, /dev/, /run/, /bin/, /sbin/, /lib/, and the
#                    admin listener's URL paths /api/ (so no /tmp/, /opt/, ...)
#   md-links         every relative link in a tracked Markdown file resolves to a
#                    file or directory of the repository
#   traces           the traces the benchmarks replay are shipped in traces/,
#                    with their licence and README
#
# A legitimate use a check would flag goes in ALLOW below: one entry per use,
# "path|text", matched against the file and the line (keep them precise).
# Prints each hit as file:line; ends with "N passed, M failed"; exits 1 on a
# failure. Needs bash, git, grep and sed; no network, no build.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SELF=tests/repo_hygiene.sh

# path|text: a line of that file holding that text is not a hit.
ALLOW=(
  # the package test checks that the unit's ProtectHome= hides these from larder
  'tests/package/helper.py|path.startswith(("/home/", "/root/", "/run/user/"))'
)

# Links to pages not in the repository yet: reported while missing, not
# failing. Empty now: every page linked is there.
PENDING_LINKS=(
)

# First path components of absolute paths that committed results may hold.
SYSTEM_ROOTS='usr|etc|proc|sys|dev|run|bin|sbin|lib|api'

PASSED=0
FAILED=0
verdict() {  # name hits
  if [ "$2" = 0 ]; then
    PASSED=$((PASSED + 1)); echo "ok     $1"
  else
    FAILED=$((FAILED + 1)); echo "FAILED $1 ($2)"
  fi
}

FILES=()
while IFS= read -r -d '' f; do
  [ -f "$f" ] && [ "$f" != "$SELF" ] && FILES+=("$f")
done < <(git ls-files -z)

allowed() {  # file line-text
  local entry
  for entry in "${ALLOW[@]+"${ALLOW[@]}"}"; do
    [ "$1" = "${entry%%|*}" ] && [[ "$2" == *"${entry#*|}"* ]] && return 0
  done
  return 1
}

# grep_check NAME ERE FILE...: a hit is a line matching ERE that ALLOW does not cover.
grep_check() {
  local name=$1 re=$2 hits=0 hit file rest line text
  shift 2
  while IFS= read -r hit; do
    file=${hit%%:*}; rest=${hit#*:}; line=${rest%%:*}; text=${rest#*:}
    allowed "$file" "$text" && continue
    echo "  $file:$line: ${text:0:160}"
    hits=$((hits + 1))
  done < <(if [ $# -gt 0 ]; then grep -nIHE -- "$re" "$@"; fi)
  verdict "$name" "$hits"
}

# outside-refs, machine-paths: every tracked text file
grep_check outside-refs '\.\./shared|shared/DESIGN|shared/traces' "${FILES[@]}"
grep_check machine-paths '/(work|home|root|Users)/' "${FILES[@]}"

# result-paths: absolute paths in committed results, whatever their root, unless a system one
result_paths() {
  local f hits=0 hit line text bad
  local re="(^|[[:space:]\"'\`(=,|])/[A-Za-z0-9._-]+/"
  for f in "${FILES[@]}"; do
    case "$f" in
      BENCHMARKS.md|docs/benchmarks-history.md|crates/larder-sim/results.*|crates/larder-bench/results/*) ;;
      *) continue ;;
    esac
    while IFS= read -r hit; do
      line=${hit%%:*}; text=${hit#*:}
      bad=$(grep -oE "$re" <<<"$text" | sed -E 's/^[^/]*//' | grep -vE "^/($SYSTEM_ROOTS)/$" | sort -u | tr '\n' ' ')
      [ -z "$bad" ] && continue
      allowed "$f" "$text" && continue
      echo "  $f:$line: $bad: ${text:0:140}"
      hits=$((hits + 1))
    done < <(grep -nIE -- "$re" "$f")
  done
  verdict result-paths "$hits"
}
result_paths

# md-links: [text](target) and ![alt](target) in tracked Markdown, outside code
md_links() {
  local f hits=0 dir n line link target pending p
  for f in "${FILES[@]}"; do
    [[ "$f" == *.md ]] || continue
    dir=$(dirname "$f")
    n=0
    local fence=0
    while IFS= read -r line || [ -n "$line" ]; do
      n=$((n + 1))
      if [[ "$line" =~ ^[[:space:]]*(\`\`\`|~~~) ]]; then fence=$((1 - fence)); continue; fi
      [ "$fence" = 1 ] && continue
      [[ "$line" == *"]("* ]] || continue
      # drop inline code spans, then take every (target) that follows a ]
      line=$(sed -E 's/`[^`]*`//g' <<<"$line")
      while IFS= read -r link; do
        target=${link#](}; target=${target%)}
        target=${target%% *}
        case "$target" in
          ''|http://*|https://*|mailto:*|\#*) continue ;;
        esac
        target=${target%%#*}
        [ -e "$dir/$target" ] && continue
        pending=0
        for p in "${PENDING_LINKS[@]+"${PENDING_LINKS[@]}"}"; do
          [ "$(realpath -m "$dir/$target")" = "$ROOT/$p" ] && pending=1
        done
        if [ "$pending" = 1 ]; then
          echo "  pending (not failing): $f:$n: $target"
          continue
        fi
        echo "  $f:$n: no such file: $target"
        hits=$((hits + 1))
      done < <(grep -oE '\]\([^)]+\)' <<<"$line")
    done < "$f"
  done
  verdict md-links "$hits"
}
md_links

# traces: shipped with their licence
traces() {
  local hits=0 f
  for f in traces/cache2k-web07.trace.xz traces/cache2k-web12.trace.xz traces/cache2k-orm-busy.trace.xz \
           traces/cache2k-LICENSE.txt traces/README.md; do
    if ! git ls-files --error-unmatch "$f" >/dev/null 2>&1; then
      echo "  $f: not tracked"
      hits=$((hits + 1))
    fi
  done
  if ! grep -q 'CC BY 4.0' traces/README.md 2>/dev/null; then
    echo "  traces/README.md does not state the traces' licence (CC BY 4.0)"
    hits=$((hits + 1))
  fi
  verdict traces "$hits"
}
traces

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
