# shellcheck shell=bash
# guest-lib.sh: helpers for scenario scripts (sourced: `source "$RDMAHD_VM_LIB"`).
#
# A scenario runs as root inside the VM with rxe0 ACTIVE and these set (see guest-runner.sh):
#   RDMAHD_BIN            the rdma-healthd binary under test (may be empty)
#   RDMAHD_VM_NETDEV      rxe0's netdev (veth0, or eth0 for the peer topology)
#   RDMAHD_VM_ADDR        this VM's IPv4 address on that netdev
#   RDMAHD_VM_PEER_ADDR   the other VM's address (peer topology; empty otherwise)
#   RDMAHD_VM_NODE        1 or 2
#   RDMAHD_VM_OUT         folder copied back to the host (vm-run.sh --out=DIR)
# Every helper that waits is bounded. A failed assertion prints "FAIL: ..." and exits 1.
set -uo pipefail

readonly RDMAHD_LISTEN=127.0.0.1:19400
RDMAHD_DAEMON_PID=

step() { echo "== $*"; }
ok() { echo "ok: $*"; }
fail() {
  echo "FAIL: $*"
  exit 1
}

# A helper that failed inside $(...) only ended the subshell; its message is the value.
failed_in_subshell() {
  [[ "$1" != "FAIL: "* ]] && return 1
  echo "$1 ($2)"
  exit 1
}

# expect_eq ACTUAL EXPECTED WHAT
expect_eq() {
  failed_in_subshell "$1" "$3" || true
  [[ "$1" == "$2" ]] || fail "$3: got '$1', want '$2'"
  ok "$3 = '$1'"
}

# expect_num ACTUAL OP EXPECTED WHAT, OP one of == != > >= < <= (numbers may be floats, 1.25e+09).
expect_num() {
  local actual="$1" op="$2" want="$3" what="$4"
  failed_in_subshell "$actual" "$what" || true
  [[ -n "$actual" ]] || fail "$what: no value (want $op $want)"
  awk -v a="$actual" -v b="$want" -v op="$op" 'BEGIN {
    a += 0; b += 0
    if (op == "==") r = a == b; else if (op == "!=") r = a != b
    else if (op == ">") r = a > b; else if (op == ">=") r = a >= b
    else if (op == "<") r = a < b; else if (op == "<=") r = a <= b; else r = 0
    exit !r }' || fail "$what: got $actual, want $op $want"
  ok "$what = $actual ($op $want)"
}

# wait_until SECONDS WHAT CMD...: retries CMD every 0.2 s until it succeeds or time runs out.
wait_until() {
  local secs="$1" what="$2" deadline
  shift 2
  deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || fail "$what: not true within $secs s"
    sleep 0.2
  done
}

# rxe0 port 1 hw counter (sysfs), e.g. sent_pkts.
hw_counter() { cat "/sys/class/infiniband/rxe0/ports/1/hw_counters/$1"; }

# Runs ib_send_lat from rxe0 to its own GID (rxe loops it back): real RC send traffic.
# rxe_self_traffic [ITERS [min]]: prints the typical latency in microseconds (with "min", then
# t_min after it).
rxe_self_traffic() {
  local iters="${1:-200}" port=18515 server_log client_log
  server_log="$(mktemp)" client_log="$(mktemp)"
  # PERFTEST_SERVER_CPUS / PERFTEST_CLIENT_CPUS (taskset lists), when set, pin each end.
  ${PERFTEST_SERVER_CPUS:+taskset -c "$PERFTEST_SERVER_CPUS"} \
    timeout 60 ib_send_lat -d rxe0 -i 1 -x 1 -n "$iters" -p "$port" >"$server_log" 2>&1 &
  local server=$!

  for _ in $(seq 1 50); do
    if ${PERFTEST_CLIENT_CPUS:+taskset -c "$PERFTEST_CLIENT_CPUS"} \
        timeout 60 ib_send_lat -d rxe0 -i 1 -x 1 -n "$iters" -p "$port" "$RDMAHD_VM_ADDR" \
        >"$client_log" 2>&1; then
      break
    fi
    # Only "server not listening yet" is worth another try.
    grep -q "Couldn't connect" "$client_log" || { cat "$client_log"; fail "ib_send_lat client failed"; }
    sleep 0.2
  done
  wait "$server" || { cat "$server_log"; fail "ib_send_lat server failed"; }
  # Result row: #bytes #iterations t_min t_max t_typical ...
  local typical
  typical="$(awk -v with_min="${2:-}" '$1 == 2 && $2 ~ /^[0-9]+$/ { print (with_min == "min") ? $5 " " $3 : $5 }' "$client_log" | tail -n1)"
  [[ -n "$typical" ]] || { cat "$client_log"; fail "ib_send_lat printed no result row"; }
  rm -f "$server_log" "$client_log"
  echo "$typical"
}

# thread_cpus PID NAME: the Cpus_allowed_list of PID's thread named NAME (the first one), or "none".
thread_cpus() {
  local t
  for t in /proc/"$1"/task/*; do
    if [[ "$(cat "$t/comm" 2>/dev/null)" == "$2" ]]; then
      awk '$1 == "Cpus_allowed_list:" { print $2 }' "$t/status"
      return
    fi
  done
  echo none
}

need_daemon() {
  [[ -n "${RDMAHD_BIN:-}" && -x "$RDMAHD_BIN" ]] ||
    fail "RDMAHD_BIN='${RDMAHD_BIN:-}' is not an executable rdma-healthd"
}

daemon_alive() {
  [[ -n "$RDMAHD_DAEMON_PID" ]] && kill -0 "$RDMAHD_DAEMON_PID" 2>/dev/null &&
    [[ "$(awk '{print $3}' "/proc/$RDMAHD_DAEMON_PID/stat" 2>/dev/null)" != Z ]]
}

# start_daemon [ARGS...]: starts rdma-healthd on $RDMAHD_LISTEN, waits (bounded) for /-/ready.
start_daemon() {
  need_daemon
  "$RDMAHD_BIN" --web.listen-address="$RDMAHD_LISTEN" "$@" >>"$RDMAHD_VM_OUT/daemon.log" 2>&1 &
  RDMAHD_DAEMON_PID=$!
  trap 'stop_daemon >/dev/null 2>&1 || true' EXIT
  local deadline=$((SECONDS + 30))
  until curl -fsS -m 5 -o /dev/null "http://$RDMAHD_LISTEN/-/ready" 2>/dev/null; do
    daemon_alive || { cat "$RDMAHD_VM_OUT/daemon.log"; fail "rdma-healthd exited during start-up"; }
    ((SECONDS < deadline)) || { cat "$RDMAHD_VM_OUT/daemon.log"; fail "rdma-healthd not ready within 30 s"; }
    sleep 0.2
  done
  ok "rdma-healthd ready (pid $RDMAHD_DAEMON_PID)"
}

# stop_daemon: SIGTERM, bounded wait; fails unless it exits cleanly (0, or 143 = default SIGTERM).
stop_daemon() {
  [[ -n "$RDMAHD_DAEMON_PID" ]] || return 0
  local pid="$RDMAHD_DAEMON_PID" status
  RDMAHD_DAEMON_PID=
  kill -TERM "$pid" 2>/dev/null
  local deadline=$((SECONDS + 15))
  while kill -0 "$pid" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]]; do
    if ((SECONDS >= deadline)); then
      kill -KILL "$pid" 2>/dev/null
      fail "rdma-healthd did not exit within 15 s of SIGTERM"
    fi
    sleep 0.2
  done
  wait "$pid"
  status=$?
  [[ $status == 0 || $status == 143 ]] || fail "rdma-healthd exited with status $status on SIGTERM"
  ok "rdma-healthd stopped (status $status)"
}

# scrape FILE [PATH]: GET http://$RDMAHD_LISTEN/PATH (default metrics) into FILE; fails unless 200.
scrape() {
  local file="$1" path="${2:-metrics}" code
  code="$(curl -sS -m 20 -o "$file" -w '%{http_code}' "http://$RDMAHD_LISTEN/$path")" ||
    fail "GET /$path failed (daemon alive: $(daemon_alive && echo yes || echo no))"
  [[ "$code" == 200 ]] || fail "GET /$path: HTTP $code"
}

# metric FILE NAME [LABEL=VALUE...]: prints the value of each series of NAME whose labels include
# all the given ones (one per line). Returns 1 when no series matches.
metric() {
  local file="$1" name="$2"
  shift 2
  local want=() kv
  for kv in "$@"; do want+=("${kv%%=*}=\"${kv#*=}\""); done
  awk -v name="$name" -v want="$(IFS=$'\x1f'; echo "${want[*]}")" '
    BEGIN { n = split(want, w, "\x1f") }
    /^#/ || NF == 0 { next }
    {
      brace = index($0, "{")
      if (brace) {
        close_at = index($0, "} ")
        series = substr($0, 1, brace - 1)
        labels = "," substr($0, brace + 1, close_at - brace - 1) ","
        rest = substr($0, close_at + 2)
      } else {
        series = $1; labels = ",,"; rest = $2
      }
      if (series != name) next
      for (i = 1; i <= n; i++) if (index(labels, "," w[i] ",") == 0) next
      split(rest, v, " "); print v[1]; found = 1
    }
    END { exit !found }' "$file"
}

# metric_one FILE NAME [LABEL=VALUE...]: like metric, but fails unless exactly one series matches.
metric_one() {
  local values count
  values="$(metric "$@")" || fail "no series $2{${*:3}}"
  count="$(wc -l <<<"$values")"
  ((count == 1)) || fail "$count series match $2{${*:3}}, want 1"
  echo "$values"
}

# All collector_success series must be 1 (a failing collector is an error even when it is quiet).
expect_collectors_succeeded() {
  local file="$1" bad
  metric "$file" rdma_healthd_collector_success >/dev/null || fail "no rdma_healthd_collector_success series"
  bad="$(grep -E '^rdma_healthd_collector_success\{' "$file" | awk '$NF + 0 != 1')"
  [[ -z "$bad" ]] || fail "collectors failed: $bad"
  ok "every collector succeeded ($(grep -c '^rdma_healthd_collector_success{' "$file") collectors)"
}

# Lines of FILE that mention device="DEVICE" (for the scenario's log and the closing note).
series_of_device() { grep -E "device=\"$2\"" "$1" || true; }

# time_scrapes N RATE: N GETs of /metrics from one curl, at most RATE a second (`--rate 3/s`: one
# process, so under TCG the scrapes come at that pace rather than at curl's start-up cost; keep
# RATE under 1 / scrape.cache_window so that every scrape collects afresh), each timed by curl
# (time_total, seconds). Sets SCRAPE_MEDIAN and SCRAPE_MAX (not printed, so a failure ends the
# scenario rather than a subshell). Fails when a scrape fails or is not 200.
SCRAPE_MEDIAN="" SCRAPE_MAX=""
# shellcheck disable=SC2034 # the results are for the scenario that sourced this file
time_scrapes() {
  local n="$1" rate="$2" i args=() lines
  for ((i = 0; i < n; i++)); do args+=(-o /dev/null "http://$RDMAHD_LISTEN/metrics"); done
  lines="$(curl -sS -m 60 --rate "$rate" -w '%{http_code} %{time_total}\n' "${args[@]}")"
  [[ "$(grep -c '^200 ' <<<"$lines")" == "$n" ]] || fail "timed scrapes: not $n answered 200: $(tr '\n' ' ' <<<"$lines")"
  read -r SCRAPE_MEDIAN SCRAPE_MAX <<<"$(awk '{ print $2 }' <<<"$lines" | sort -g |
    awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                              printf "%.4f %.4f\n", m, v[NR] }')"
}

# peer_barrier PORT SECONDS WHAT (peer topology): returns once the other VM has reached
# peer_barrier with the same PORT too; fails after SECONDS. Each side listens on PORT, connects to
# the other's PORT (again while nobody listens there yet), then waits for the other's connection:
# neither passes before both have arrived, and a side that passed first has already connected, so
# the other never waits for it. A new PORT for each barrier of a scenario.
peer_barrier() {
  local port="$1" secs="$2" what="$3" got listener deadline
  [[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "peer_barrier needs the peer topology"
  got="$(mktemp)"
  busybox nc -l -p "$port" </dev/null >"$got" 2>&1 &
  listener=$!
  deadline=$((SECONDS + secs))
  until timeout 5 bash -c "echo node$RDMAHD_VM_NODE >/dev/tcp/$RDMAHD_VM_PEER_ADDR/$port" 2>/dev/null; do
    ((SECONDS < deadline)) || { kill "$listener"; fail "$what: $RDMAHD_VM_PEER_ADDR did not get there within $secs s"; }
    sleep 0.5
  done
  while kill -0 "$listener" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$listener/stat" 2>/dev/null)" != Z ]]; do
    ((SECONDS < deadline)) || { kill "$listener"; fail "$what: $RDMAHD_VM_PEER_ADDR did not get there within $secs s"; }
    sleep 0.5
  done
  wait "$listener"
  ok "$what: $RDMAHD_VM_PEER_ADDR got there too ($(<"$got"))"
  rm -f "$got"
}
