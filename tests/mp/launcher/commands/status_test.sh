#!/usr/bin/env bash
# `accel-launch status` and `accel-launch report` against a real one-machine job (2 fake workers
# that write progress), over its private Unix socket: the table and the JSON from the run directory,
# the job found from the log directory alone, a refused query without the job's token (the token
# the launcher generated), and the heat map drawn from the job's step-time CSV.
# Usage: status_test.sh <accel-launch> <fake_worker>
set -euo pipefail
launcher=$1
fake=$2
source "$(dirname "$0")/../../../testing/skip.sh"
command -v python3 >/dev/null || skip "python3 missing (reads the JSON)"
work=$(mktemp -d)
run_id=mp-status-$$
job=
cleanup() {
  [[ -n $job ]] && kill -9 "$job" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- launcher"; cat "$work/job.log"
  exit 1
}

env -u ACCEL_RDZV_TOKEN timeout -s KILL 60 "$launcher" --use_cpu --num_processes 2 \
  --run_id "$run_id" --log_dir "$work/logs" --status_interval 0.5 \
  --straggler_window 2 "$fake" --progress=600 --sleep=2 >"$work/job.log" 2>&1 &
job=$!
run_dir=$work/logs/$run_id

ranks_with_steps() {
  python3 -c 'import json,sys; r=json.load(sys.stdin)["ranks"]; print(len(r), sum(1 for x in r if x["step"] > 0))'
}
counts="0 0"
deadline=$(( SECONDS + 30 ))
while (( SECONDS < deadline )); do
  if json=$(env -u ACCEL_RDZV_TOKEN "$launcher" status "$run_dir" --json 2>"$work/err"); then
    counts=$(ranks_with_steps <<<"$json")
    [[ $counts == "2 2" ]] && break
  fi
  sleep 0.3
done
[[ $counts == "2 2" ]] || fail "status RUN_DIR --json never listed 2 ranks with steps ('$counts'): $(cat "$work/err")"
grep -q '"state": "running"' <<<"$json" || fail "no running rank in: $json"

# The table, the job found from the log directory alone.
table=$(env -u ACCEL_RDZV_TOKEN "$launcher" status --log_dir "$work/logs") || fail "status --log_dir failed"
echo "$table"
[[ $(grep -cE "^ *[01] " <<<"$table") -ge 2 ]] || fail "the table has no row per rank"

# A one-machine job's rendezvous is a Unix socket in a private directory (nothing on the
# network): the job file names it, and the directory is 0700 and ours.
endpoint=$(sed -n 's/^store_endpoint=//p' "$run_dir/job")
[[ $endpoint == unix:*/rdzv.sock ]] || fail "store endpoint '$endpoint' is not a Unix socket"
socket_dir=$(dirname "${endpoint#unix:}")
[[ $(stat -c '%a %u' "$socket_dir") == "700 $(id -u)" ]] ||
  fail "the socket's directory $socket_dir is $(stat -c '%a %u' "$socket_dir")"
# A wrong token (it overrides the token kept in the run directory): refused by the rendezvous
# (exit 3). A call without a token on the socket: server_auth_test.cc.
rc=0; out=$(ACCEL_RDZV_TOKEN=wrong "$launcher" status "$run_dir" 2>&1) || rc=$?
[[ $rc -eq 3 && $out == *refused* ]] || fail "wrong token: exit $rc, '$out'"
[[ $(stat -c %a "$run_dir/token") == 600 ]] || fail "the generated token file is not 0600"

wait "$job" || fail "the job failed"
job=

# After the job: its socket's name taken by another user (here: a directory of uid 65534's, a
# listener recording every byte), and a job file that still names a live process of ours (pid
# reuse). status must refuse before it sends anything: the token travels in each call's metadata
# on a Unix socket.
rm -rf "$socket_dir"
mkdir -m 755 "$socket_dir"
chown 65534 "$socket_dir"
python3 - "${endpoint#unix:}" "$work/squatter.log" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
s.settimeout(15)
with open(sys.argv[2], "wb") as log:
    while True:
        try:
            c, _ = s.accept()
        except OSError:
            break
        c.settimeout(2)
        try:
            while data := c.recv(4096):
                log.write(data)
                log.flush()
        except OSError:
            pass
PY
squatter=$!
for _ in $(seq 50); do [[ -S ${endpoint#unix:} ]] && break; sleep 0.1; done
stale=$work/stale
mkdir -m 700 "$stale"
sed "s/^launcher_pid=.*/launcher_pid=$$/" "$run_dir/job" >"$stale/job"
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$stale/token")
chmod 600 "$stale/job"
rc=0; out=$(env -u ACCEL_RDZV_TOKEN "$launcher" status "$stale" 2>&1) || rc=$?
kill "$squatter" 2>/dev/null || true
wait "$squatter" 2>/dev/null || true
rm -rf "$socket_dir"
[[ $rc -ne 0 && $out == *"not a private directory of yours"* ]] ||
  fail "status sent its query to a socket another user took: exit $rc, '$out'"
[[ ! -s $work/squatter.log ]] || fail "the squatter received $(wc -c <"$work/squatter.log") bytes"
echo "a socket name taken by another user: refused before anything was sent ($out)"
[[ -s $run_dir/step_times.csv ]] || fail "no step_times.csv"
report=$("$launcher" report "$work/logs") || fail "report failed: $report"
echo "$report"
png=$(sed -n 's/^wrote \([^ ]*\.png\).*/\1/p' <<<"$report")
[[ $(head -c 8 "$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "'$png' is not a PNG"
rc=0; "$launcher" report "$work/nothing" >/dev/null 2>&1 || rc=$?
[[ $rc -eq 2 ]] || fail "report without a CSV: exit $rc, expected 2"
echo "PASS"
