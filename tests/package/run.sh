#!/usr/bin/env bash
# tests/package/run.sh: build larder's Debian package with scripts/package and
# check it the way an operator meets it, on this machine (as root, without
# systemd running: CI containers):
#
#   - the .deb: fields, files, modes, conffiles, maintainer scripts;
#   - dpkg -i: binary, unit, wrapper, man page, the user "larder", the unit
#     enabled (symlink) though systemd is not running; systemd-analyze verify
#     and security of the unit;
#   - larder.service's ExecStart, parsed from the installed unit, run exactly
#     as systemd would run it, as far as that goes without systemd: as User=
#     and Group= (setpriv, no capabilities, NoNewPrivileges), LimitNOFILE=,
#     UMask=, a clean environment, in /, with MemoryDenyWriteExecute= in its
#     kernel form (prctl PR_SET_MDWE), on the shipped /etc/larder.conf copied
#     with only its -p line changed to a free port; traced with strace -f, and
#     the trace checked against what the unit's sandbox allows
#     (SystemCallFilter=, RestrictAddressFamilies=, W^X, ProcSubset=pid,
#     PrivateDevices=, ProtectHome=, ProtectSystem=strict); a set/get/delete
#     and stats over TCP; SIGTERM (what "systemctl stop" sends) ends it with
#     status 0;
#   - a copy of a Debian-style memcached.conf (-d, logfile, -u memcache, -P)
#     starts larder in the foreground; a conf with -k stops it naming -k
#     (exit 64); the wrapper reads a file of edge cases into the same command
#     line as Debian's own systemd-memcached-wrapper (memcached package);
#   - dpkg -i again over an edited /etc/larder.conf keeps the edit;
#   - dpkg -r: program gone, conf and user kept; dpkg -P: conf, user, group,
#     unit enablement gone; a "larder" user that existed before the package
#     is left alone by purge;
#   - lintian, if installed: its output is shown, never counted.
#
# Prints "ok"/"FAIL" lines, then "N passed, M failed"; exits 1 if any failed.
# Cleans up after itself (servers it started, the package, users it created)
# and can be run again on the same machine: a larder package or test user
# left by an interrupted run is purged first.
#
#   tests/package/run.sh     LARDER_BIN=path: package that binary instead of
#                            building it (scripts/test sets it);
#                            LARDER_PACKAGE_TEST_KEEP=1: keep the work directory
#                            (the .deb, logs, strace logs) and print its path
set -uo pipefail

# Debian packages this test needs beyond the Rust toolchain (scripts/test's
# apt list): dpkg-deb, dpkg-shlibdeps, strip, systemd-analyze, deb-systemd-helper,
# adduser, setpriv/prlimit, strace, groff, python3; memcached for its wrapper.
APT_PACKAGES=(dpkg-dev binutils systemd init-system-helpers adduser util-linux strace groff-base python3 memcached)

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
UNIT=/lib/systemd/system/larder.service
CONF=/etc/larder.conf
WRAPPER=/usr/share/larder/larder-conf-to-args
DEBIAN_WRAPPER=/usr/share/memcached/scripts/systemd-memcached-wrapper
TEST_GECOS="larder package test user"
export DEBIAN_FRONTEND=noninteractive
T0=$(date +%s)

PASS=0 FAIL=0
ok() { PASS=$((PASS + 1)); echo "ok   $*"; }
bad() { FAIL=$((FAIL + 1)); echo "FAIL $*"; }
check() { local d=$1; shift; if "$@"; then ok "$d"; else bad "$d"; fi; }
step() { printf '\n== %s (%ss)\n' "$*" "$(($(date +%s) - T0))"; }
summary() {
  printf '\npackage test: %ss\n' "$(($(date +%s) - T0))"
  echo "$PASS passed, $FAIL failed"
  [ "$FAIL" = 0 ]
}
require_all() { [ "${LARDER_REQUIRE_ALL:-0}" = 1 ] || [ "${CI:-}" = true ]; }

# --- state cleaned up on every exit ---------------------------------------
TMP=
BG_PIDS=()
TEST_USER=0
cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do
    [ -n "$p" ] || continue
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${BG_PIDS[@]}"; do
    [ -n "$p" ] || continue
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null || true
  done
  if installed_state | grep -q .; then dpkg -P larder >/dev/null 2>&1 || true; fi
  if [ "$TEST_USER" = 1 ] && getent passwd larder >/dev/null; then
    userdel larder 2>/dev/null || true
    groupdel larder 2>/dev/null || true
  fi
  if [ -n "$TMP" ]; then
    if [ "${LARDER_PACKAGE_TEST_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# dpkg's abbreviated status of larder ("ii", "rc"), empty if not known
installed_state() {
  dpkg-query -W -f='${db:Status-Abbrev}' larder 2>/dev/null | awk '$1 !~ /^u/ && $1 != "" {print $1}'
}

# --- preconditions ---------------------------------------------------------
step "preconditions"
if [ "$(id -u)" != 0 ]; then bad "runs as root (dpkg -i, setpriv)"; summary; exit 1; fi
pid1=$(cat /proc/1/comm 2>/dev/null)
if [ -d /run/systemd/system ]; then
  bad "no systemd running (PID 1 is $pid1): on a systemd machine postinst would start larder.service on 11211; run this in a container"
  summary; exit 1
fi
ok "root, and systemd is not running (PID 1 is $pid1)"
missing=()
for c in dpkg-deb dpkg-shlibdeps strip systemd-analyze deb-systemd-helper adduser setpriv prlimit strace groff /usr/bin/python3 cargo; do
  command -v "$c" >/dev/null || missing+=("$c")
done
if [ ${#missing[@]} -gt 0 ]; then
  bad "tools present (missing: ${missing[*]}; apt-get install ${APT_PACKAGES[*]})"; summary; exit 1
fi
ok "tools present"

# Leftovers of an interrupted run: the package (ours by name) and the test's user.
if installed_state | grep -q .; then
  echo "larder package left installed ($(installed_state)): purging it first"
  dpkg -P larder >/dev/null || true
fi
if getent passwd larder >/dev/null && [ "$(getent passwd larder | cut -d: -f5)" = "$TEST_GECOS" ]; then
  echo "test user larder left by an earlier run: removing it"
  userdel larder || true
  groupdel larder 2>/dev/null || true
fi
if getent passwd larder >/dev/null; then
  bad "no user larder before the test (one exists, not made by the package or this test: $(getent passwd larder))"
  summary; exit 1
fi
ok "no larder package or user left from before"

TMP=$(mktemp -d /tmp/larder-package-test.XXXXXX)
chmod 0755 "$TMP"
install -m 0644 "$HERE/helper.py" "$TMP/helper.py"
H() { /usr/bin/python3 "$TMP/helper.py" "$@"; }

# --- build -----------------------------------------------------------------
step "build: scripts/package"
version=$(awk '/^\[/ {s=$0} s=="[workspace.package]" && $1=="version" {gsub(/"/,"",$3); print $3; exit}' "$ROOT/Cargo.toml")
if ! "$ROOT/scripts/package" --out "$TMP" >"$TMP/package.out" 2>"$TMP/package.err"; then
  bad "scripts/package builds a .deb"; tail -30 "$TMP/package.err"; summary; exit 1
fi
DEB=$(tail -n 1 "$TMP/package.out")
check "scripts/package builds $(basename "$DEB")" test -s "$DEB"

step "the .deb"
field() { dpkg-deb -f "$DEB" "$1"; }
check "Package: larder" test "$(field Package)" = larder
check "Version: $(field Version) is Cargo.toml's $version" test "$(field Version)" = "${version//-/\~}"
check "Architecture: $(field Architecture)" test "$(field Architecture)" = "$(dpkg --print-architecture)"
check "Section: web" test "$(field Section)" = web
check "Depends: $(field Depends)" bash -c '[[ "$1" == *libc6* && "$1" == *adduser* ]]' _ "$(field Depends)"
check "Suggests: $(field Suggests)" bash -c '[[ "$1" == *libsasl2-2* ]]' _ "$(field Suggests)"
dpkg-deb -c "$DEB" | awk '$1 !~ /^d/ {print $1, $2, $6}' | sort -k3 >"$TMP/contents"
cat >"$TMP/contents.want" <<'EOF'
-rw-r--r-- root/root ./etc/larder.conf
-rw-r--r-- root/root ./lib/systemd/system/larder.service
-rwxr-xr-x root/root ./usr/bin/larder
-rw-r--r-- root/root ./usr/share/doc/larder/changelog.gz
-rw-r--r-- root/root ./usr/share/doc/larder/copyright
-rw-r--r-- root/root ./usr/share/doc/larder/install.md
-rwxr-xr-x root/root ./usr/share/larder/larder-conf-to-args
-rw-r--r-- root/root ./usr/share/man/man1/larder.1.gz
EOF
if diff "$TMP/contents.want" "$TMP/contents" >"$TMP/contents.diff"; then
  ok "contents: $(wc -l <"$TMP/contents") files, owners and modes as expected"
else
  bad "contents differ from the expected list:"; cat "$TMP/contents.diff"
fi
mkdir -p "$TMP/control"
dpkg-deb -e "$DEB" "$TMP/control"
check "conffiles: /etc/larder.conf" test "$(cat "$TMP/control/conffiles")" = /etc/larder.conf
for s in postinst prerm postrm; do
  check "$s: executable, sh -n clean" bash -c '[ -x "$1" ] && sh -n "$1"' _ "$TMP/control/$s"
done

# --- install ---------------------------------------------------------------
step "dpkg -i"
if dpkg -i "$DEB" </dev/null >"$TMP/dpkg-i.log" 2>&1; then ok "dpkg -i exits 0"; else bad "dpkg -i"; cat "$TMP/dpkg-i.log"; fi
check "dpkg status: installed ($(installed_state))" test "$(installed_state)" = ii
check "/usr/bin/larder --version says $version" bash -c '/usr/bin/larder --version | grep -q "^larder $1 "' _ "$version"
check "$UNIT, $WRAPPER, $CONF installed" test -f "$UNIT" -a -x "$WRAPPER" -a -f "$CONF"
pw=$(getent passwd larder)
check "user larder created: $pw" bash -c '
  IFS=: read -r name _ uid gid _ home shell <<<"$1"
  [ "$name" = larder ] && [ "$uid" -lt 1000 ] && [ "$home" = /nonexistent ] && [ ! -e /nonexistent ] &&
  [ "$shell" = /usr/sbin/nologin ] && [ "$(getent group "$gid" | cut -d: -f1)" = larder ]' _ "$pw"
check "unit enabled without systemd (multi-user.target.wants symlink)" \
  test "$(readlink /etc/systemd/system/multi-user.target.wants/larder.service)" = "$UNIT"
check "man page: larder.1.gz renders without groff warnings" bash -c '
  zcat /usr/share/man/man1/larder.1.gz | groff -man -Tutf8 -ww -z 2>&1 | { ! grep -q .; } &&
  zcat /usr/share/man/man1/larder.1.gz | grep -q "max\\\\-item\\\\-size"'

step "systemd-analyze"
if systemd-analyze verify "$UNIT" >"$TMP/verify.log" 2>&1 && ! grep -q . "$TMP/verify.log"; then
  ok "systemd-analyze verify $UNIT: no findings"
else
  bad "systemd-analyze verify $UNIT:"; cat "$TMP/verify.log"
fi
systemd-analyze security --offline=yes --no-pager "$UNIT" >"$TMP/security.log" 2>&1
exposure=$(sed -n 's/.*Overall exposure level for larder.service: \([0-9.]*\).*/\1/p' "$TMP/security.log")
echo "systemd-analyze security: overall exposure ${exposure:-?} (0 best, 10 worst); open points:"
grep '^✗' "$TMP/security.log" | awk '{print "    " $2}' | paste -sd' ' -
check "systemd-analyze security --offline: exposure ${exposure:-?} <= 2.0" \
  awk -v e="${exposure:-99}" 'BEGIN { exit !(e + 0 <= 2.0) }'

# --- run ExecStart as the unit would ---------------------------------------
step "ExecStart, as larder.service runs it"
if ! H unit "$UNIT" >"$TMP/unit.sh"; then bad "parse $UNIT"; summary; exit 1; fi
# shellcheck disable=SC1091
. "$TMP/unit.sh"
EXEC=()
for ((i = 0; i < U_EXEC_N; i++)); do v=U_EXEC_$i; EXEC+=("${!v}"); done
echo "ExecStart: ${EXEC[*]}"
echo "User=$U_User Group=$U_Group LimitNOFILE=$U_LimitNOFILE UMask=$U_UMask NoNewPrivileges=$U_NoNewPrivileges MemoryDenyWriteExecute=$U_MemoryDenyWriteExecute"
check "ExecStart names $CONF once" bash -c 'n=0; for a in "$@"; do [ "$a" = /etc/larder.conf ] && n=$((n+1)); done; [ $n = 1 ]' _ "${EXEC[@]}"

PATH_ENV=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
uid=$(id -u larder)
# unit_cmd CONFCOPY: the command line that runs ExecStart with CONFCOPY as the
# unit's process would be, into the array CMD
unit_cmd() {
  local a argv=() ids=()
  for a in "${EXEC[@]}"; do [ "$a" = "$CONF" ] && argv+=("$1") || argv+=("$a"); done
  ids=(--reuid="${U_User:-root}" --regid="${U_Group:-${U_User:-root}}" --init-groups)
  [ "$U_NoNewPrivileges" = yes ] && ids+=(--no-new-privs)
  [ -z "$U_CapabilityBoundingSet" ] && ids+=(--inh-caps=-all --bounding-set=-all)
  CMD=(env -i PATH=$PATH_ENV HOME=/nonexistent USER="$U_User" LOGNAME="$U_User" SHELL=/usr/sbin/nologin
       RUNTIME_DIRECTORY=/run/$U_RuntimeDirectory
       prlimit --nofile="$NOFILE:$NOFILE" setpriv "${ids[@]}")
  if [ "$U_MemoryDenyWriteExecute" = yes ]; then
    CMD+=(/usr/bin/python3 "$TMP/helper.py" mdwe-exec "${argv[@]}")
  else
    CMD+=("${argv[@]}")
  fi
}
# start_unit CONFCOPY LOG [strace...]: sets STARTED (the pid we wait for)
start_unit() {
  local conf=$1 log=$2; shift 2
  unit_cmd "$conf"
  (cd "${U_WorkingDirectory:-/}" && umask "${U_UMask:-0022}" && exec "$@" "${CMD[@]}" </dev/null >"$log" 2>&1) &
  STARTED=$!
  BG_PIDS+=("$STARTED")
}
# stop PID WAITPID: SIGTERM, as systemctl stop; the exit status of WAITPID in RC
stop_unit() {
  kill -TERM "$1" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$2" 2>/dev/null && kill -KILL "$2"
  wait "$2"; RC=$?
}
# LimitNOFILE=: systemd sets it from PID 1; here root may lack
# CAP_SYS_RESOURCE (containers), so at most the hard limit we have.
NOFILE=$U_LimitNOFILE
hard=$(ulimit -Hn)
if [ "$hard" != unlimited ] && [ "$hard" -lt "$NOFILE" ] && ! prlimit --nofile="$NOFILE:$NOFILE" true 2>/dev/null; then
  echo "LimitNOFILE=$NOFILE applied as $hard: this machine's hard limit, which root here cannot raise"
  NOFILE=$hard
fi
# The runtime directory systemd would make (RuntimeDirectory=, mode, owner).
install -d -o "$U_User" -g "$U_Group" -m "${U_RuntimeDirectoryMode:-0755}" "/run/$U_RuntimeDirectory"

port=$(H free-port)
sed "s/^-p 11211\$/-p $port/" "$CONF" >"$TMP/larder.conf"
chmod 0644 "$TMP/larder.conf"
check "conf copy differs from $CONF only in its -p line" \
  bash -c '[ "$(diff "$1" "$2" | grep -c "^[<>]")" = 2 ]' _ "$CONF" "$TMP/larder.conf"
runuser -u larder -- "$WRAPPER" --print "$TMP/larder.conf" >"$TMP/expected.argv"
echo "command line from the conf: $(paste -sd' ' "$TMP/expected.argv")"

start_unit "$TMP/larder.conf" "$TMP/run1.log" strace -f -qq -s 256 -o "$TMP/trace.log"
tracer=$STARTED
if H wait-port "$port" 30; then
  ok "larder from ExecStart accepts on 127.0.0.1:$port (under strace -f)"
else
  bad "larder from ExecStart did not start:"; cat "$TMP/run1.log"
fi
lpid=$(cat "/proc/$tracer/task/$tracer/children" 2>/dev/null | awk '{print $1}')
if [ -n "$lpid" ] && [ -d "/proc/$lpid" ]; then
  check "the process is /usr/bin/larder (the wrapper exec'd it: one pid)" test "$(readlink "/proc/$lpid/exe")" = /usr/bin/larder
  check "its argv is the wrapper's reading of the conf" \
    bash -c 'diff <(tr "\0" "\n" <"/proc/$1/cmdline") "$2"' _ "$lpid" "$TMP/expected.argv"
  st=/proc/$lpid/status
  check "runs as larder ($(awk '/^Uid:/ {print $2"/"$3"/"$4"/"$5}' "$st") = $uid)" \
    bash -c 'awk -v u="$2" "/^Uid:/ {exit !(\$2==u && \$3==u && \$4==u && \$5==u)}" "$1"' _ "$st" "$uid"
  check "NoNewPrivs: 1, no capabilities (effective, permitted, bounding)" bash -c '
    grep -q "^NoNewPrivs:[[:space:]]*1" "$1" &&
    grep -q "^CapEff:[[:space:]]*0*$" "$1" && grep -q "^CapPrm:[[:space:]]*0*$" "$1" && grep -q "^CapBnd:[[:space:]]*0*$" "$1"' _ "$st"
  check "open files limit $NOFILE (LimitNOFILE=$U_LimitNOFILE)" \
    bash -c 'grep -q "^Max open files *$2 *$2 " "/proc/$1/limits"' _ "$lpid" "$NOFILE"
  if talk=$(H talk "$port"); then
    ok "set/get/delete/stats over TCP: $talk"
    check "stats pid is that process" bash -c '[[ "$1" == "pid=$2 "* ]]' _ "$talk" "$lpid"
  else
    bad "set/get/delete/stats over TCP"
  fi
  stop_unit "$lpid" "$tracer"
  check "SIGTERM (systemctl stop) ends it with status 0 (got $RC)" test "$RC" = 0
else
  bad "found larder's pid under strace"
fi
echo "its output (the journal's):"; sed 's/^/    /' "$TMP/run1.log"
check "no output at start-up and stop with the shipped conf" bash -c '! grep -v "PR_SET_MDWE" "$1" | grep -q .' _ "$TMP/run1.log"
if H trace-check "$TMP/trace.log" "$UNIT" "$WRAPPER" >"$TMP/trace-check.out" 2>&1; then
  ok "trace: every call within the unit's sandbox"
else
  bad "trace: calls the unit's sandbox refuses"
fi
sed 's/^/    /' "$TMP/trace-check.out" | cut -c1-400

step "the conf's -s and -e lines (Unix socket, warm restart in /run/larder)"
# What an operator gets by uncommenting them: both live in the unit's
# RuntimeDirectory, the one place ProtectSystem=strict leaves writable.
sed 's/^# \(-[sea] \)/\1/' "$CONF" >"$TMP/warm.conf"
chmod 0644 "$TMP/warm.conf"
sock=$(sed -n 's/^-s //p' "$TMP/warm.conf")
snap=$(sed -n 's/^-e //p' "$TMP/warm.conf")
echo "options added: $(diff "$CONF" "$TMP/warm.conf" | sed -n 's/^> //p' | paste -sd' ' -)"
start_unit "$TMP/warm.conf" "$TMP/warm1.log" strace -f -qq -s 256 -o "$TMP/trace-warm.log"
tracer=$STARTED
if [ -n "$sock" ] && [ -n "$snap" ] && H wait-unix "$sock" 30; then
  ok "larder listens on $sock"
  lpid=$(cat "/proc/$tracer/task/$tracer/children" 2>/dev/null | awk '{print $1}')
  check "set over $sock" test "$(H kv "$sock" set warm:key kept-across-restart)" = STORED
  stop_unit_sig() { kill -"$1" "$2" 2>/dev/null; for _ in $(seq 100); do kill -0 "$3" 2>/dev/null || break; sleep 0.1; done; wait "$3"; RC=$?; }
  stop_unit_sig USR1 "$lpid" "$tracer"
  check "SIGUSR1 (systemctl kill -s SIGUSR1) stops it with status 0 (got $RC) and saves $snap" \
    bash -c '[ "$1" = 0 ] && [ -s "$2" ]' _ "$RC" "$snap"
  if H trace-check "$TMP/trace-warm.log" "$UNIT" "$WRAPPER" >"$TMP/trace-warm.out" 2>&1; then
    ok "trace: socket and snapshot within the unit's sandbox"
  else
    bad "trace: socket or snapshot outside the unit's sandbox"; grep FAIL "$TMP/trace-warm.out"
  fi
  start_unit "$TMP/warm.conf" "$TMP/warm2.log"
  run=$STARTED
  if H wait-unix "$sock" 15; then
    check "the next start serves the saved item" test "$(H kv "$sock" get warm:key)" = kept-across-restart
    stop_unit "$run" "$run"
  else
    bad "restart with $snap:"; cat "$TMP/warm2.log"
  fi
else
  bad "larder with -s/-e from the conf did not start:"; cat "$TMP/warm1.log"
fi
echo "its output:"; sed 's/^/    /' "$TMP/warm1.log" "$TMP/warm2.log" 2>/dev/null

step "other configurations"
# A Debian-style memcached.conf (-d, logfile, -u memcache, -P) copied as it is.
port=$(H free-port)
sed "s/^-p 11211\$/-p $port/" "$HERE/fixtures/memcached-style.conf" >"$TMP/mc-style.conf"
chmod 0644 "$TMP/mc-style.conf"
start_unit "$TMP/mc-style.conf" "$TMP/run2.log"
run2=$STARTED
if H wait-port "$port" 15 && H talk "$port" >/dev/null; then
  ok "a Debian memcached.conf (with -d, logfile, -u memcache, -P) serves"
  check "in the foreground: the started process is larder itself" test "$(readlink "/proc/$run2/exe")" = /usr/bin/larder
  stop_unit "$run2" "$run2"
  check "and stops on SIGTERM with status 0 (got $RC)" test "$RC" = 0
else
  bad "a Debian memcached.conf starts larder:"; cat "$TMP/run2.log"
fi
# A flag larder refuses stops start-up, naming it.
install -m 0644 "$HERE/fixtures/refused.conf" "$TMP/refused.conf"
start_unit "$TMP/refused.conf" "$TMP/run3.log"
wait "$STARTED"; RC=$?
check "-k in the conf: start-up fails with exit 64 (got $RC): $(head -1 "$TMP/run3.log")" \
  bash -c '[ "$1" = 64 ] && grep -q -- "-k" "$2"' _ "$RC" "$TMP/run3.log"
# The wrapper against Debian's own, on a file of edge cases.
if [ -x "$DEBIAN_WRAPPER" ] && [ -x /usr/bin/memcached ]; then
  strace -f -qq -s 4096 -e trace=execve -o "$TMP/mc-wrapper.trace" \
    perl "$DEBIAN_WRAPPER" "$HERE/fixtures/wrapper-cases.conf" >/dev/null 2>&1
  H execve-argv "$TMP/mc-wrapper.trace" /usr/bin/memcached | tail -n +2 >"$TMP/argv.debian"
  "$WRAPPER" --print "$HERE/fixtures/wrapper-cases.conf" 2>/dev/null | tail -n +2 >"$TMP/argv.larder"
  if [ -s "$TMP/argv.debian" ] && diff "$TMP/argv.debian" "$TMP/argv.larder"; then
    ok "wrapper reads fixtures/wrapper-cases.conf into Debian's wrapper's command line ($(wc -l <"$TMP/argv.larder") words)"
  else
    bad "wrapper and Debian's systemd-memcached-wrapper disagree on fixtures/wrapper-cases.conf"
  fi
elif require_all; then
  bad "Debian's memcached wrapper present ($DEBIAN_WRAPPER; apt-get install memcached)"
else
  echo "SKIPPED: comparison with Debian's wrapper: $DEBIAN_WRAPPER missing (apt-get install memcached)"
fi

# --- upgrade in place, remove, purge ---------------------------------------
step "dpkg -i again over an edited conf"
echo "# edited by the package test" >>"$CONF"
uid_before=$(id -u larder)
if dpkg -i "$DEB" </dev/null >"$TMP/dpkg-i2.log" 2>&1; then ok "dpkg -i over the installed package"; else bad "dpkg -i again"; cat "$TMP/dpkg-i2.log"; fi
check "the edited $CONF is kept" grep -q "edited by the package test" "$CONF"
check "the same user (uid $uid_before)" test "$(id -u larder)" = "$uid_before"

step "dpkg -r"
if dpkg -r larder </dev/null >"$TMP/dpkg-r.log" 2>&1; then ok "dpkg -r exits 0"; else bad "dpkg -r"; cat "$TMP/dpkg-r.log"; fi
check "dpkg status: config-files ($(installed_state))" test "$(installed_state)" = rc
check "binary, unit, wrapper and man page gone" \
  bash -c '! [ -e /usr/bin/larder ] && ! [ -e "$1" ] && ! [ -e "$2" ] && ! [ -e /usr/share/man/man1/larder.1.gz ]' _ "$UNIT" "$WRAPPER"
check "$CONF kept, with the edit" grep -q "edited by the package test" "$CONF"
check "user larder kept" bash -c 'getent passwd larder >/dev/null'

step "dpkg -P"
if dpkg -P larder </dev/null >"$TMP/dpkg-p.log" 2>&1; then ok "dpkg -P exits 0"; else bad "dpkg -P"; cat "$TMP/dpkg-p.log"; fi
check "dpkg no longer knows larder" test -z "$(installed_state)"
check "$CONF gone" test ! -e "$CONF"
check "user and group larder gone" bash -c '! getent passwd larder && ! getent group larder'
check "enablement gone (symlink, deb-systemd-helper state)" bash -c '
  ! [ -e /etc/systemd/system/multi-user.target.wants/larder.service ] &&
  ! ls /var/lib/systemd/deb-systemd-helper-enabled/ 2>/dev/null | grep -q larder'
check "/var/lib/larder and /run/larder gone" test ! -e /var/lib/larder -a ! -e /run/larder

step "a larder user that was there before the package"
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
  --comment "$TEST_GECOS" larder && TEST_USER=1
if dpkg -i "$DEB" </dev/null >"$TMP/dpkg-i3.log" 2>&1 && dpkg -P larder </dev/null >"$TMP/dpkg-p3.log" 2>&1; then
  ok "dpkg -i, dpkg -P with the user already there"
else
  bad "dpkg -i/-P with the user already there"; cat "$TMP/dpkg-i3.log" "$TMP/dpkg-p3.log" 2>/dev/null
fi
check "purge leaves the user it did not create" \
  test "$(getent passwd larder | cut -d: -f5)" = "$TEST_GECOS"
userdel larder && groupdel larder 2>/dev/null; getent group larder >/dev/null && groupdel larder
TEST_USER=0

if command -v lintian >/dev/null; then
  step "lintian (shown, not counted)"
  lintian --tag-display-limit 0 "$DEB" >"$TMP/lintian.log" 2>&1
  grep -v "running with root privileges" "$TMP/lintian.log" | sed 's/^/    /'
  grep -qE '^[EW]: ' "$TMP/lintian.log" || echo "    no errors or warnings"
fi

summary
