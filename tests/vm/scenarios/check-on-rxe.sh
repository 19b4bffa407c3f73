#!/usr/bin/env bash
# check-on-rxe (single VM): `rdma-healthd check` on a real Soft-RoCE device prints verdicts for rxe0
# and exits 0 when the policy holds, 1 when a check fails (a minimum rate above rxe's 10 Gb/s), and
# 2 when it cannot run (no such config file).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
printf 'ports: {min_rate_gbps: 10}\n' >"$dir/rate-10.yaml"
printf 'ports: {min_rate_gbps: 100}\n' >"$dir/rate-100.yaml"

# run_check NAME ARGS...: runs `rdma-healthd check ARGS` (bounded), output in $dir/NAME.out;
# prints the exit status.
run_check() {
  local name="$1"
  shift
  timeout 60 "$RDMAHD_BIN" check "$@" >"$dir/$name.out" 2>"$dir/$name.err"
  echo $?
}

# verdict FILE CHECK DEVICE: the verdict of CHECK for a subject naming DEVICE in `--output=json`
# output: objects with check, subject and status (the CLI's name for the verdict).
verdict() {
  jq -r --arg check "$2" --arg dev "$3" '
    [.. | objects | select(has("check") and has("subject") and has("status"))
        | select(.check == $check and (.subject | tostring | contains($dev)))
        | .status] | if length == 0 then "<none>" else unique | join(",") end' "$1"
}

step "policy that rxe0 meets (min_rate_gbps: 10)"
status="$(run_check pass-table --config.file="$dir/rate-10.yaml" --output=table)"
cat "$dir/pass-table.out" "$dir/pass-table.err"
expect_eq "$status" 0 "exit status of check (table)"
grep -q rxe0 "$dir/pass-table.out" || fail "table output does not mention rxe0"
for c in port_active port_rate roce_v2_gid; do
  grep -q "$c" "$dir/pass-table.out" || fail "table output has no $c verdict"
done
ok "table names rxe0 and port_active, port_rate, roce_v2_gid"
status="$(run_check pass-json --config.file="$dir/rate-10.yaml" --output=json)"
expect_eq "$status" 0 "exit status of check (json)"
jq -e . "$dir/pass-json.out" >/dev/null || fail "--output=json is not JSON: $(head -c 300 "$dir/pass-json.out")"
expect_eq "$(verdict "$dir/pass-json.out" port_active rxe0)" ok "port_active for rxe0"
expect_eq "$(verdict "$dir/pass-json.out" port_rate rxe0)" ok "port_rate for rxe0 (10 >= 10)"
expect_eq "$(verdict "$dir/pass-json.out" roce_v2_gid rxe0)" ok "roce_v2_gid for rxe0"

step "policy that rxe0 fails (min_rate_gbps: 100)"
status="$(run_check fail-table --config.file="$dir/rate-100.yaml" --output=table)"
cat "$dir/fail-table.out" "$dir/fail-table.err"
expect_eq "$status" 1 "exit status of check (table)"
status="$(run_check fail-json --config.file="$dir/rate-100.yaml" --output=json)"
expect_eq "$status" 1 "exit status of check (json)"
expect_eq "$(verdict "$dir/fail-json.out" port_rate rxe0)" failed "port_rate for rxe0 (10 < 100)"
expect_eq "$(verdict "$dir/fail-json.out" port_active rxe0)" ok "port_active for rxe0"
jq -e '[.. | objects | select(.check? == "port_rate" and .status? == "failed")
        | (.reason // "") + (.fix // "") | length > 0] | all' "$dir/fail-json.out" >/dev/null ||
  fail "the failed port_rate verdict has no reason or fix"
ok "the failed verdict carries a reason and a fix"

step "a check that cannot run (config file missing)"
status="$(run_check missing --config.file=/nonexistent/rdma-healthd.yaml)"
cat "$dir/missing.out" "$dir/missing.err"
expect_eq "$status" 2 "exit status of check with a missing config file"
