#!/bin/bash
# The README's main-job line as a new user meets it, output into a log: a fresh Docker engine (a data root of its
# own, beside the host's engine, on a bridge of its own with NAT rules added and removed here), an empty dlrepro
# cache, a fresh clone of this checkout and a fresh venv. Every output line is stamped with the seconds since the
# start; the five longest silences are printed at the end.  Root only.  Usage: bash benchmarks/fresh_main_job.sh [LOG]
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd); LOG=$(realpath -m "${1:-/tmp/fresh-main-job.log}")
B=dlrfresh0; NET=10.213.78; D=/run/dlr-fresh; ROOT=/var/lib/dlr-fresh
rm -rf "$ROOT"; mkdir -p $D  # an empty data root: no base, no image
ip link add $B type bridge && ip addr add $NET.1/24 dev $B && ip link set $B up
iptables -I DOCKER-USER -i $B -j ACCEPT
iptables -I DOCKER-USER -o $B -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
iptables -t nat -A POSTROUTING -s $NET.0/24 ! -o $B -j MASQUERADE
dockerd --host unix://$D/docker.sock --data-root $ROOT --exec-root $D/exec --pidfile $D/docker.pid \
  --bridge $B --iptables=false --ip-masq=false > $D/dockerd.log 2>&1 &
DPID=$!
export DOCKER_HOST=unix://$D/docker.sock
for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
docker info --format 'fresh engine {{.ServerVersion}}, images {{.Images}}, root {{.DockerRootDir}}'
rm -rf /tmp/fresh-clone /tmp/fresh-cache; git clone -q "$REPO" /tmp/fresh-clone; cd /tmp/fresh-clone
git log --oneline | head -1
export DLREPRO_CACHE=/tmp/fresh-cache
main=$(grep -A1 '^# main job$' README.md | tail -n 1)
echo "+ $main"
T0=$(date +%s.%N)
( eval "$main" ) 2>&1 | python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print("%7.1f %s" % (time.time() - t0, line.rstrip("\n")), flush=True)' "$T0" > $LOG
echo "rc ${PIPESTATUS[0]}" >> $LOG
python3 - "$LOG" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]) if l[:7].strip().replace(".", "").isdigit()]
t = [float(l[:7]) for l in lines]
gaps = sorted(((b - a, i) for i, (a, b) in enumerate(zip(t, t[1:]))), reverse=True)[:5]
print("lines %d, total %.0f s" % (len(t), t[-1]))
for g, i in gaps:
    print("silence %.1f s between:\n  %s  %s" % (g, lines[i].rstrip(), lines[i + 1].rstrip()))
PY
kill $DPID; wait $DPID
iptables -D DOCKER-USER -i $B -j ACCEPT
iptables -D DOCKER-USER -o $B -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
iptables -t nat -D POSTROUTING -s $NET.0/24 ! -o $B -j MASQUERADE
ip link delete $B
umount $ROOT 2>/dev/null; rm -rf "$ROOT"; true
