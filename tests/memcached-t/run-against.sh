#!/usr/bin/env bash
# Run memcached's own test suite (t/*.t from Debian's memcached source package)
# against any memcached-compatible server binary.
#
#   tests/memcached-t/run-against.sh [options] <binary> [file...]
#
# Files are given as "getset", "getset.t" or "t/getset.t". Without files, the
# list in tests/memcached-t/passing.txt is run; a test in it that skips fails
# the run when CI or LARDER_REQUIRE_ALL=1 is set (otherwise: a note). Options:
#   --all             run every t/*.t
#   --others          run the t/*.t files that are NOT in passing.txt, one by one,
#                     print which pass, fail or skip; exit 0 whatever they do
#   --list FILE       read the file list from FILE (# comments allowed)
#   --dir DIR         where to build the harness (default tests/.work/mc-t)
#   --src DIR         memcached source tree holding t/ (default tests/.work/src/memcached-*)
#   --timeout SECS    per-file time limit (default 300)
#   --extra-args ARGS appended to every server command line (default "-o debugtime",
#                     or "" when the binary is called memcached: Debian's build has
#                     no debugtime)
#   --drop-opts LIST  "-o NAME" options to strip from the command lines the tests
#                     build (default "", or "relaxed_privileges" when the binary is
#                     called memcached: only memcached's debug build knows it)
#   --jobs N          prove -j N (default 1; the files sleep and race timers,
#                     so parallel runs can be flaky)
#   --tls             TLS mode (memcached's SSL_TEST=1, t/README-TLS.md): every
#                     server is started with -Z and the certificates of t/, every
#                     client connects with IO::Socket::SSL. The t/ssl_*.t files
#                     test only TLS (they skip without it), so a list run
#                     without --tls leaves them out and one with --tls runs
#                     them with the rest
#
# The harness directory gets a copy of t/, a memcached-debug wrapper that execs
# <binary> "$@" <extra args>, our own timedrun, and run-test (per-file time
# limit, kills the test's process group afterwards). MemcachedTest.pm takes the
# current directory as the build dir, so prove runs from there.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=$root/tests/.work/mc-t
src=
timeout=300
mode=list
list=$here/passing.txt
jobs=1
extra_set=0
extra=
drop_set=0
drop=

while [ $# -gt 0 ]; do
  case "$1" in
    --all) mode=all; shift ;;
    --others) mode=others; shift ;;
    --list) list=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --src) src=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --extra-args) extra=$2; extra_set=1; shift 2 ;;
    --drop-opts) drop=$2; drop_set=1; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --tls) export SSL_TEST=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "run-against.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { echo "usage: run-against.sh [options] <binary> [file...]" >&2; exit 2; }
bin=$1; shift
case "$bin" in /*) ;; */*) bin=$PWD/$bin ;; *) bin=$(command -v "$bin" || echo "$bin") ;; esac
[ -x "$bin" ] || { echo "run-against.sh: $bin is not an executable" >&2; exit 2; }
if [ $extra_set = 0 ]; then
  case "$(basename "$bin")" in memcached*) extra= ;; *) extra="-o debugtime" ;; esac
fi
if [ $drop_set = 0 ]; then
  case "$(basename "$bin")" in memcached*) drop=relaxed_privileges ;; *) drop= ;; esac
fi

if [ -z "$src" ]; then
  for d in "$root"/tests/.work/src/memcached-*/; do
    [ -d "$d/t" ] && src=${d%/}
  done
fi
[ -n "$src" ] && [ -d "$src/t" ] || {
  echo "run-against.sh: no memcached source with t/ (run scripts/test, or apt-get source memcached into tests/.work/src)" >&2
  exit 2
}
command -v prove >/dev/null || { echo "run-against.sh: prove not found (apt-get install perl)" >&2; exit 2; }

# --- build the harness directory -------------------------------------------
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -rf "$dir/t"
cp -a "$src/t" "$dir/t"
# --- later memcached's own corrections of its t/ files ---------------------
# Where memcached changed a behaviour after the release whose t/ files these
# are, and changed its t/ file with it, the harness's copy gets the same
# change for a server that has the newer behaviour: larder follows the newest
# memcached (issue #27, docs/differences.md), a memcached binary as its
# version says. Each change is a count or an expected line, named with the
# memcached release whose t/ file has it; none applies to 1.6.18 or 1.6.38
# themselves, which must still pass their own files unchanged.
server_version=99.99.99   # larder: the newest
case "$(basename "$bin")" in
  memcached*) server_version=$("$bin" -V 2>/dev/null | awk '{print $2}') ;;
esac
has() {  # has VERSION: the server under test behaves as memcached VERSION does
  [ "$(printf '%s\n' "$server_version" "$1" | sort -V | head -1)" = "$1" ]
}
correct() {  # correct FILE RELEASE WHAT PERL: apply PERL (perl -pi) to t/FILE
  local f=$dir/t/$1
  [ -f "$f" ] || return 0
  local before; before=$(md5sum <"$f")
  perl -pi -e "$4" "$f"
  [ "$(md5sum <"$f")" != "$before" ] && echo "run-against.sh: t/$1: $3 (as memcached $2's t/$1 has it)"
  return 0
}
if [ -n "${SSL_TEST:-}" ] && has 1.6.30; then
  # 1.6.30 added a third TLS stat, ssl_proto_errors; t/stats.t (1.6.18 to
  # 1.6.40) still expects two over TLS, so memcached 1.6.38 fails its own
  # file in TLS mode. 1.6.41 corrected the count.
  correct stats.t 1.6.41 "TLS stats count 85 -> 86 (ssl_proto_errors)" \
    's/is\(scalar\(keys\(%\$stats\)\), 85,/is(scalar(keys(%\$stats)), 86,/'
fi
if has 1.6.25; then
  # 1.6.25's flush_all unlinks what was used in its own second at once, so
  # reading that item is a plain miss; t/stats.t moved the clock before it.
  # (1.6.25 and later files have the move already.)
  grep -q 'mem_move_time($sock, 3); # need to wait' "$dir/t/stats.t" 2>/dev/null ||
    correct stats.t 1.6.25 "clock moved 3 s before flush_all" \
      's/^is\(scalar <\$sock>, "STORED\\r\\n", "set item to flush"\);\n/$&mem_move_time(\$sock, 3);\n/'
fi
if has 1.6.40; then
  # 1.6.40 added slab_reassign_last_busy_status to stats.
  correct stats.t 1.6.45 "stats count +1 (slab_reassign_last_busy_status)" \
    's/is\(scalar\(keys\(%\$stats\)\), (83|86),/"is(scalar(keys(%\$stats)), ".($1+1).","/e'
  # 1.6.40's shutdown refusal is a SERVER_ERROR.
  correct shutdown.t 1.6.45 "shutdown refusal is SERVER_ERROR" \
    's/"ERROR: shutdown not enabled\\r\\n"/"SERVER_ERROR: shutdown not enabled\\r\\n"/'
  # 1.6.40's request parser: a cas line without its unique is a bad
  # format and its data block is swallowed (one reply, not two ERRORs).
  correct cas.t 1.6.45 "cas empty: one CLIENT_ERROR, block swallowed (1 test fewer)" \
    's/^is\(scalar <\$sock>, "ERROR\\r\\n", "cas empty, throw error"\);/is(scalar <\$sock>, "CLIENT_ERROR bad command line format\\r\\n", "cas empty, throw error");/; $_ = "" if /^# cant parse barval2|"error out on barval2 parsing"/; s/tests => (\d+);/"tests => ".($1-1).";"/e'
  # ... which ignores what follows delete's key: 1.6.45's t/issue_3.t
  # dropped the usage error and the add that relied on it (2 tests fewer).
  correct issue_3.t 1.6.45 "delete ignores tokens after the key (2 tests fewer)" \
    'BEGIN { undef $/ } s/print \$sock "delete \$key 10\\r\\n";\nis \(scalar <\$sock>, "CLIENT_ERROR bad command line format\."\n\s*\. "  Usage: delete <key> \[noreply\]\\r\\n", "invalid delete"\);\n\n//; s/print \$sock "add \$key 0 0 1\\r\\nx\\r\\n";\nis \(scalar <\$sock>, "NOT_STORED\\r\\n", "Failed to add after failed silent delete\."\);\n\n//; s/tests => (\d+);/"tests => ".($1-2).";"/e'
  # ... and answers a line under 4 bytes (` \n`) with a bad format.
  correct metaget.t 1.6.45 "blank command is a bad format" \
    's/^(\s*is\(scalar <\$sock>, )"ERROR\\r\\n"(, "error from blank command"\);)/$1"CLIENT_ERROR bad command line format\\r\\n"$2/'
fi
if has 1.6.43; then
  # 1.6.43 begins every lru_crawler dump with OK.
  correct lru-crawler.t 1.6.45 "metadump begins with OK (2 more tests)" \
    's/^(\s*)print \$sock "lru_crawler metadump (all|hash)\\r\\n";\n/$&$1is(scalar <\$sock>, "OK\\r\\n");\n/; s/tests => (\d+);/"tests => ".($1+2).";"/e'
fi
rm -rf "$dir/doc"
[ -d "$src/doc" ] && cp -a "$src/doc" "$dir/doc"   # line-lengths.t reads doc/protocol.txt
cp "$here/timedrun" "$here/run-test" "$dir/"
chmod +x "$dir/timedrun" "$dir/run-test"
{
  echo '#!/usr/bin/env bash'
  echo "# generated by tests/memcached-t/run-against.sh: the server under test"
  printf 'drop=%q\n' " $drop "
  echo 'args=()'
  echo 'while [ $# -gt 0 ]; do'
  echo '  if [ "$1" = -o ] && [ $# -ge 2 ] && [[ "$drop" == *" $2 "* ]]; then shift 2; continue; fi'
  echo '  args+=("$1"); shift'
  echo 'done'
  printf 'exec %q "${args[@]}"' "$bin"
  [ -n "$extra" ] && printf ' %s' "$extra"
  echo
} >"$dir/memcached-debug"
chmod +x "$dir/memcached-debug"

# --- pick the files ----------------------------------------------------------
norm() { local f=${1#t/}; f=${f%.t}; echo "$f"; }
listed() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$1" | grep -v '^$' || true; }
all_files() { (cd "$dir/t" && ls -1 *.t | sed 's/\.t$//'); }

files=()
if [ $# -gt 0 ]; then
  for f in "$@"; do files+=("$(norm "$f")"); done
elif [ $mode = all ]; then
  mapfile -t files < <(all_files)
elif [ $mode = others ]; then
  mapfile -t files < <(all_files | grep -vxF -f <(listed "$list") || true)
else
  mapfile -t files < <(listed "$list")
  if [ -z "${SSL_TEST:-}" ]; then
    # TLS-only files: run by the --tls pass (see --tls above)
    mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -v '^ssl_' || true)
  else
    # t/binary-sasl.t calls send() on its socket, which IO::Socket::SSL does
    # not implement: in TLS mode it dies after 4 tests against memcached
    # 1.6.18 itself ("Use of send() not implemented in IO::Socket::SSL").
    # It runs in the plain pass.
    mapfile -t files < <(printf '%s\n' "${files[@]}" | grep -vx 'binary-sasl' || true)
  fi
fi
for f in "${files[@]}"; do
  [ -f "$dir/t/$f.t" ] || { echo "run-against.sh: no such test file t/$f.t" >&2; exit 2; }
done

# t/binary-sasl.t only runs with RUN_SASL_TESTS set (else it skips, which
# CI counts as a failure); it needs saslpasswd2 (Debian sasl2-bin, which
# scripts/test installs) and the server's -S.
export RUN_SASL_TESTS=${RUN_SASL_TESTS:-1}

cd "$dir"
echo "memcached t/ suite${SSL_TEST:+ (TLS mode)}: ${#files[@]} file(s) against $bin${extra:+ (+ $extra)}, ${timeout}s per file"
# A value of CI / LARDER_REQUIRE_ALL that counts as set (as in larder-testkit).
is_set() { [ -n "$1" ] && [ "$1" != 0 ] && [ "${1,,}" != false ]; }

if [ $mode != others ]; then
  args=()
  for f in "${files[@]}"; do args+=("t/$f.t"); done
  # A file or test that skips (its environment lacks something: issue_67.t
  # skips four tests when something else holds 127.0.0.1:11211) still counts
  # as a pass for prove. --directives prints those skips; under CI or with
  # LARDER_REQUIRE_ALL=1 (scripts/test sets it) they fail the run.
  out=$(mktemp)
  trap 'rm -f "$out"' EXIT
  rc=0
  prove --directives -j "$jobs" --exec "$dir/run-test $timeout perl" "${args[@]}" 2>&1 | tee "$out" || rc=$?
  # Skips the test files hard-code (tests/memcached-t/unconditional-skips.txt)
  # say nothing about this machine: they are left out of the check.
  allowed=$here/unconditional-skips.txt
  if grep -Ei '# skip|skipped:' "$out" | grep -vFf <(grep -v '^#' "$allowed") | grep -q .; then
    if is_set "${CI:-}" || is_set "${LARDER_REQUIRE_ALL:-}"; then
      echo "run-against.sh: listed files skipped tests (above); with CI or LARDER_REQUIRE_ALL=1 that fails" >&2
      [ $rc != 0 ] || rc=1
    else
      echo "run-against.sh: note: listed files skipped tests (above)" >&2
    fi
  fi
  exit $rc
fi

# --others: one prove per file, report, never fail.
pass=() fail=() skip=()
mkdir -p "$dir/logs"
for f in "${files[@]}"; do
  log=$dir/logs/$f.log
  start=$SECONDS
  if prove --exec "$dir/run-test $timeout perl" "t/$f.t" >"$log" 2>&1; then
    if grep -q "skipped:" "$log"; then skip+=("$f"); r=skip; else pass+=("$f"); r=PASS; fi
  else
    fail+=("$f"); r=FAIL
  fi
  printf '  %-28s %-4s %3ds\n' "$f" "$r" $((SECONDS - start))
done
echo "not on the list, passing now (${#pass[@]}): ${pass[*]:-none}"
echo "not on the list, skipped (${#skip[@]}): ${skip[*]:-none}"
echo "not on the list, failing (${#fail[@]}): ${fail[*]:-none}  (logs in $dir/logs)"
exit 0
