#!/usr/bin/env bash
# A second local user attacks a victim's jobs on the same machine (issue 24, the local half).
# The test creates two Unix users, a victim and a stranger (useradd; removed at the end), and acts
# as each with setpriv. The stranger runs a real TCP server that records every byte it receives.
# Attacks, on a starting job (planted before the launch) and on a running one:
#    1. a planted job file naming the stranger's server, a victim's file as token_file and
#       launcher_pid 1, read by `status RUN_DIR` and `status --run_id`;
#    2. the same job file naming the victim's own running launcher as launcher_pid, also under a
#       shared log_dir (`status --log_dir`);
#    3. `status --run_id` and `status` of the victim's real running job while a planted
#       directory with that run id (the predictable name) is present;
#    4. a pre-created run directory with mode 0777 under a shared log_dir, holding symlinks to the
#       victim's files (job, token, attempt_0) and pre-created temporary files;
#    5. the predictable scratch name (TMPDIR/accel-<run_id>-m0) pre-created 0777 with symlinks and
#       token.tmp.<pid> / job.tmp.<pid> files for a range of pids, before a job without log_dir;
#    6. a group-readable token file of the victim's;
#    7. a token file owned by the stranger (readable by all, a strong token);
#    8. reading the running job's logs, token and job file, and writing into its run directory
#       (forged error.json / progress);
#    9. the config token file: `accel-launch config default` into a shared directory where
#       rdzv_token.tmp.<pid> symlinks are planted.
# Each is refused with a clear message or has no effect; the victim's files are unchanged, the
# stranger's planted files are unchanged and hold nothing of the victim's, and the stranger's
# server received nothing at all.
# Needs root (useradd, setpriv): exit 77 = skipped, with the reason.
# Usage: local_attack_test.sh <accel-launch> <fake_worker>
set -euo pipefail
launcher=$1
fake=$2
source "$(dirname "$0")/../../../testing/skip.sh"
[[ $(id -u) -eq 0 ]] || skip "needs root to create the two users (uid $(id -u))"
for tool in useradd userdel setpriv python3; do
  command -v "$tool" >/dev/null || skip "$tool missing"
done

victim=accv$$
stranger=accs$$
work=$(mktemp -d)
chmod 0755 "$work"
listener=
jobs_started=()
cleanup() {
  for p in "${jobs_started[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  if [[ -n $listener ]]; then kill "$listener" 2>/dev/null || true; wait "$listener" 2>/dev/null || true; fi
  # userdel refuses a user with a process left: each is waited for above.
  userdel "$victim" 2>/dev/null || echo "warning: could not remove user $victim"
  userdel "$stranger" 2>/dev/null || echo "warning: could not remove user $stranger"
  rm -rf "$work"
}
trap cleanup EXIT
useradd -M -U -s /usr/sbin/nologin "$victim"
useradd -M -U -s /usr/sbin/nologin "$stranger"
vuid=$(id -u "$victim"); suid=$(id -u "$stranger")
as() {  # as USER CMD...: run as that user, in a clean environment (no ACCEL_* of ours)
  local who=$1; shift
  setpriv --reuid "$(id -u "$who")" --regid "$(id -g "$who")" --clear-groups \
    env -i PATH=/usr/bin:/bin HOME="$work/home-$who" TMPDIR="$work/tmp" "$@"
}
# In the background: `(as_exec USER CMD...) &` makes $! the command's own pid (kill, wait).
as_exec() {
  local who=$1; shift
  exec setpriv --reuid "$(id -u "$who")" --regid "$(id -g "$who")" --clear-groups \
    env -i PATH=/usr/bin:/bin HOME="$work/home-$who" TMPDIR="$work/tmp" "$@"
}
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do [[ -f $f ]] && { echo "--- $f"; tail -n 20 "$f"; }; done
  exit 1
}
# expect_refused NAME EXPECTED_TEXT RC_FILE OUT_FILE: the attack's outcome was a refusal.
expect_refused() {
  local name=$1 text=$2 rc=$3 out=$4
  [[ $rc -ne 0 ]] || fail "$name: exit 0 (expected a refusal): $(cat "$out")"
  grep -qF -- "$text" "$out" || fail "$name: no '$text' in: $(cat "$out")"
  echo "ok: $name: refused (exit $rc): $(grep -F -- "$text" "$out" | head -1 | cut -c1-200)"
}

# The binaries, where both users can run them whatever the checkout's permissions (both link
# only system libraries).
mkdir -p "$work/bin"
cp "$launcher" "$work/bin/accel-launch"
cp "$fake" "$work/bin/fake_worker"
chmod 0755 "$work/bin" "$work/bin/accel-launch" "$work/bin/fake_worker"
launcher=$work/bin/accel-launch
fake=$work/bin/fake_worker

mkdir -p "$work/tmp" "$work/shared_logs" "$work/shared_cfg" "$work/home-$victim" \
  "$work/home-$stranger" "$work/victim" "$work/stranger"
chmod 1777 "$work/tmp" "$work/shared_logs" "$work/shared_cfg"  # like /tmp
chown "$victim:" "$work/home-$victim" "$work/victim"
chown "$stranger:" "$work/home-$stranger" "$work/stranger"
chmod 0700 "$work/home-$victim" "$work/victim"
chmod 0755 "$work/stranger"

# The victim's secrets: a private file and a strong token file.
secret="VICTIM-SECRET-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
as "$victim" sh -c "umask 077; echo '$secret' > '$work/victim/secret'; echo '$token' > '$work/victim/token'"
victim_sum=$(cat "$work/victim/secret" "$work/victim/token" | sha256sum)

# The stranger's server: records every connection and every byte to $work/stranger/received.
cat > "$work/stranger/server.py" <<'EOF'
import socket, sys, threading
out = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
open(sys.argv[2], "w").write(str(s.getsockname()[1]))
lock = threading.Lock()
def serve(c):
    while True:
        data = c.recv(65536)
        if not data:
            break
        with lock, open(out, "ab") as f:
            f.write(data)
while True:
    c, _ = s.accept()
    with lock, open(out, "ab") as f:
        f.write(b"<connection>")
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
as "$stranger" sh -c ": > '$work/stranger/received'"
(as_exec "$stranger" python3 "$work/stranger/server.py" "$work/stranger/received" \
  "$work/stranger/port") >"$work/listener.log" 2>&1 &
listener=$!
for _ in $(seq 50); do [[ -s $work/stranger/port ]] && break; sleep 0.1; done
port=$(cat "$work/stranger/port")
echo "stranger's server on 127.0.0.1:$port"

# plant_job DIR PID: a job file of the stranger's naming their server and a victim's file.
plant_job() {
  as "$stranger" sh -c "mkdir -p '$1' && chmod 0777 '$1' && printf '%s\n' run_id=x \
    store_endpoint=127.0.0.1:$port machine_rank=0 num_machines=1 \
    token_file=$work/victim/secret tls_ca_file= launcher_pid=$2 > '$1/job' && chmod 0666 '$1/job'"
}
snapshot() { (cd "$work/stranger" && find . -printf '%p %s %l\n' | sort; cat "$work"/tmp/accel-x-m0/* 2>/dev/null) | sha256sum; }

# ---- The victim's running job (no log_dir: a scratch run directory), run id known to all.
run_id=victim-run-$$
(as_exec "$victim" timeout -s KILL 120 "$launcher" --use_cpu --num_processes 2 --run_id "$run_id" \
  --status_interval 0.5 --hang_timeout 0 "$fake" --progress=600 --sleep=60) >"$work/job.log" 2>&1 &
jobs_started+=($!)
job_pid=
for _ in $(seq 100); do
  job_pid=$(pgrep -u "$vuid" -f "accel-launch.*$run_id" | head -1 || true)
  run_dir=$(ls -d "$work/tmp/accel-$run_id-m0"* 2>/dev/null | head -1 || true)
  [[ -n $job_pid && -n $run_dir && -f $run_dir/job ]] && break
  sleep 0.2
done
[[ -n $run_dir && -f $run_dir/job ]] || fail "the victim's job never wrote its job file"
echo "victim's job: launcher pid $job_pid, run directory $run_dir"
[[ $(stat -c %a "$run_dir") == 700 && $(stat -c %U "$run_dir") == "$victim" ]] ||
  fail "run directory is $(stat -c '%a %U' "$run_dir"), not 700 $victim"
[[ $(stat -c %a "$run_dir/job") == 600 && $(stat -c %a "$run_dir/token") == 600 ]] ||
  fail "job/token files are not 0600"

# 1. A planted job file (stranger's server, victim's secret as token_file, launcher_pid 1).
plant_job "$work/tmp/accel-x-m0" 1
for args in "$work/tmp/accel-x-m0" "--run_id x"; do
  rc=0; as "$victim" "$launcher" status $args >"$work/out" 2>&1 || rc=$?
  expect_refused "1. planted job file (status $args)" "owned by uid $suid, not by you" "$rc" "$work/out"
done
# 2. The same, naming the victim's real running launcher.
plant_job "$work/tmp/accel-x-m0" "$job_pid"
rc=0; as "$victim" "$launcher" status "$work/tmp/accel-x-m0" >"$work/out" 2>&1 || rc=$?
expect_refused "2. planted job file with the victim's live launcher pid" \
  "owned by uid $suid, not by you" "$rc" "$work/out"
as "$stranger" mkdir -p "$work/shared_logs/evil"
plant_job "$work/shared_logs/evil" "$job_pid"
rc=0; as "$victim" "$launcher" status --log_dir "$work/shared_logs" >"$work/out" 2>&1 || rc=$?
expect_refused "2b. planted job file under a shared log_dir" "not by you" "$rc" "$work/out"

# 3. status --run_id of the real job while the predictable name is planted.
plant_job "$work/tmp/accel-$run_id-m0" "$job_pid"
# The job publishes its status every 0.5 s: until the first publication, status says so.
for _ in $(seq 20); do
  rc=0; as "$victim" "$launcher" status --run_id "$run_id" --json >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc -ne 0 ]] && grep -q "no status published yet" "$work/err" || break
  sleep 0.25
done
[[ $rc -eq 0 ]] || fail "3. status --run_id of the real job: exit $rc: $(cat "$work/err")"
grep -q '"ranks"' "$work/out" || fail "3. status --run_id printed no ranks: $(cat "$work/out")"
echo "ok: 3. status --run_id found the victim's own job beside the planted directory"
rc=0; as "$victim" "$launcher" status >"$work/out" 2>&1 || rc=$?
[[ $rc -eq 0 ]] || fail "3b. status (the one live job) with planted directories: exit $rc: $(cat "$work/out")"
echo "ok: 3b. status found the victim's own job, the planted ones ignored"

# 8. The running job's files, by the stranger.
for f in "$run_dir/token" "$run_dir/job" "$run_dir/attempt_0/rank_0/progress"; do
  if as "$stranger" cat "$f" >/dev/null 2>&1; then fail "8. the stranger read $f"; fi
done
if as "$stranger" ls "$run_dir" >/dev/null 2>&1; then fail "8. the stranger listed $run_dir"; fi
for f in "$run_dir/attempt_0/rank_0/error.json" "$run_dir/x"; do
  if as "$stranger" sh -c "echo forged > '$f'" 2>/dev/null; then fail "8. the stranger wrote $f"; fi
done
echo "ok: 8. the running job's token, job file and progress cannot be read, nor error.json forged"
kill -TERM "$job_pid" 2>/dev/null || true
wait "${jobs_started[0]}" 2>/dev/null || true
[[ ! -e $run_dir ]] || fail "the scratch run directory $run_dir was not removed"

# 4. A pre-created run directory (0777) under a shared log_dir, with symlinks and temp files.
run4=victim-logs-$$
planted=$work/shared_logs/$run4
as "$stranger" sh -c "mkdir '$planted' && chmod 0777 '$planted' && \
  ln -s '$work/victim/secret' '$planted/job' && ln -s '$work/victim/token' '$planted/token' && \
  ln -s '$work/stranger' '$planted/attempt_0' && touch '$planted/token.tmp.1' '$planted/job.tmp.1'"
before=$(snapshot)
rc=0; as "$victim" timeout -s KILL 60 "$launcher" --use_cpu --num_processes 2 --run_id "$run4" \
  --log_dir "$work/shared_logs" --status_interval 0.5 "$fake" --sleep=1 >"$work/out" 2>&1 || rc=$?
expect_refused "4. pre-created run directory 0777 with symlinks" "owned by uid $suid" "$rc" "$work/out"
[[ $(snapshot) == "$before" ]] || fail "4. the stranger's files changed"

# The victim's own logs in the shared log_dir: private by default, group-readable by log_mode.
run9=victim-own-$$
as "$victim" timeout -s KILL 60 "$launcher" --use_cpu --num_processes 2 --run_id "$run9" \
  --log_dir "$work/shared_logs" --status_interval 0.5 "$fake" --progress=5 --sleep=1 \
  >"$work/job9.log" 2>&1 || fail "the victim's job with log_dir failed"
logdir=$work/shared_logs/$run9
[[ $(stat -c %a "$logdir") == 700 && $(stat -c %a "$logdir/attempt_0/rank_0/stdout.log") == 600 ]] ||
  fail "8. logs are $(stat -c %a "$logdir") / $(stat -c %a "$logdir/attempt_0/rank_0/stdout.log")"
if as "$stranger" cat "$logdir/attempt_0/rank_0/stdout.log" >/dev/null 2>&1; then
  fail "8. the stranger read the victim's log"
fi
[[ ! -e $logdir/token ]] || fail "the job's token stayed in $logdir after the job"
echo "ok: 8b. logs private (0700 / 0600), the stranger cannot read them; no token left behind"
as "$victim" timeout -s KILL 60 "$launcher" --use_cpu --num_processes 2 --run_id "$run9-g" \
  --log_dir "$work/shared_logs" --log_mode group "$fake" --sleep=1 >"$work/job9g.log" 2>&1 ||
  fail "the victim's job with log_mode group failed"
[[ $(stat -c %a "$work/shared_logs/$run9-g/attempt_0/rank_0/stdout.log") == 640 ]] ||
  fail "log_mode group: log is not 0640"
echo "ok: 8c. log_mode group shares the logs with the group only (0750 / 0640)"

# 5. The predictable scratch name pre-created 0777, symlinks and temp files for many pids.
run5=victim-scratch-$$
planted=$work/tmp/accel-$run5-m0
as "$stranger" sh -c "mkdir '$planted' && chmod 0777 '$planted' && \
  ln -s '$work/victim/secret' '$planted/job' && ln -s '$work/victim/token' '$planted/token' && \
  for p in \$(seq 1 2000); do ln -s '$work/stranger/got' '$planted/token.tmp.'\$p; \
    ln -s '$work/stranger/got' '$planted/job.tmp.'\$p; done"
before=$(cd "$planted" && ls -lA --time-style=full-iso | sha256sum)
as "$victim" timeout -s KILL 60 "$launcher" --use_cpu --num_processes 2 --run_id "$run5" \
  --status_interval 0.5 "$fake" --progress=5 --sleep=2 >"$work/job5.log" 2>&1 ||
  fail "5. the victim's job failed beside the planted scratch directory"
[[ $(cd "$planted" && ls -lA --time-style=full-iso | sha256sum) == "$before" ]] || fail "5. the planted directory changed"
[[ ! -e $work/stranger/got ]] || fail "5. something was written through a planted temp file"
echo "ok: 5. the planted scratch directory was not used (the job ran in a fresh one)"

# 6. A group-readable token file of the victim's.
cp -p "$work/victim/token" "$work/victim/token640"
chmod 0640 "$work/victim/token640"
rc=0; as "$victim" "$launcher" --use_cpu --num_processes 2 --rdzv_token_file "$work/victim/token640" \
  "$fake" --sleep=0 >"$work/out" 2>&1 || rc=$?
expect_refused "6. group-readable token file" "chmod 600 $work/victim/token640" "$rc" "$work/out"
# 7. A token file the stranger owns (readable by all).
as "$stranger" sh -c "echo $(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n') > '$work/stranger/token' && chmod 0644 '$work/stranger/token'"
rc=0; as "$victim" "$launcher" --use_cpu --num_processes 2 --rdzv_token_file "$work/stranger/token" \
  "$fake" --sleep=0 >"$work/out" 2>&1 || rc=$?
expect_refused "7. token file owned by the stranger" "owned by uid $suid, not by you" "$rc" "$work/out"
rc=0; as "$victim" "$launcher" status --run_id x --rdzv_token_file "$work/stranger/token" \
  --main_process_ip 127.0.0.1 --main_process_port "$port" >"$work/out" 2>&1 || rc=$?
expect_refused "7b. status with the stranger's token file" "not by you" "$rc" "$work/out"

# 9. `accel-launch config` writing a token file where the stranger planted temp-file symlinks.
as "$stranger" sh -c "for p in \$(seq 1 2000); do ln -s '$work/stranger/got' '$work/shared_cfg/rdzv_token.tmp.'\$p; done"
as "$victim" "$launcher" config default --config_file "$work/shared_cfg/cfg.yaml" --num_machines 2 --use_cpu --num_processes 2 \
  --main_process_ip 127.0.0.1 >"$work/out" 2>&1 || fail "9. config default failed: $(cat "$work/out")"
[[ ! -e $work/stranger/got ]] || fail "9. the token was written through a planted temp file"
[[ $(stat -c '%a %U' "$work/shared_cfg/rdzv_token") == "600 $victim" ]] ||
  fail "9. the token file is $(stat -c '%a %U' "$work/shared_cfg/rdzv_token")"
echo "ok: 9. the config token file was written new, 0600, never through a planted temp file"

# Nothing of the victim's changed, and the stranger's server received nothing at all.
[[ $(cat "$work/victim/secret" "$work/victim/token" | sha256sum) == "$victim_sum" ]] ||
  fail "the victim's files changed"
received=$(wc -c <"$work/stranger/received")
[[ $received -eq 0 ]] || fail "the stranger's server received $received bytes: $(head -c 200 "$work/stranger/received" | od -c | head)"
if grep -rqF "$secret" "$work/stranger" "$work/tmp" 2>/dev/null; then fail "the victim's secret is in the stranger's reach"; fi
echo "ok: the stranger's server received 0 bytes, 0 connections; the victim's files are unchanged"
echo "PASS"
