# Sourced by the benchmarks that start from nothing: a fresh Docker engine beside the host's (a data root, exec
# root and socket of its own, on a bridge of its own with NAT rules added here and removed by fresh_engine_down), a
# Podman storage of its own and an empty Buildah cache (CONTAINERS_STORAGE_CONF; TMPDIR, where Buildah 1.28 keeps
# its RUN --mount=type=cache folders), an empty dlrepro cache and a fresh clone of this checkout with its own venv.
# Root only.
#   fresh_engine_up NAME NET   NAME: a short word for the paths; NET: three octets of a /24 no one uses
#   fresh_clone DIR            clone this checkout into DIR (cd there)
#   fresh_engine_down          stop the engine by its PID, undo the bridge and rules, delete the data root
FRESH_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

fresh_engine_up() {
  FRESH_BRIDGE=dlr$1; FRESH_NET=$2; FRESH_RUN=/run/dlr-$1; FRESH_ROOT=/var/lib/dlr-$1
  rm -rf "$FRESH_ROOT" "$FRESH_RUN"; mkdir -p "$FRESH_RUN"  # an empty data root: no base, no image, no build cache
  ip link add "$FRESH_BRIDGE" type bridge && ip addr add "$FRESH_NET.1/24" dev "$FRESH_BRIDGE" \
    && ip link set "$FRESH_BRIDGE" up
  iptables -I DOCKER-USER -i "$FRESH_BRIDGE" -j ACCEPT
  iptables -I DOCKER-USER -o "$FRESH_BRIDGE" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  iptables -t nat -A POSTROUTING -s "$FRESH_NET.0/24" ! -o "$FRESH_BRIDGE" -j MASQUERADE
  dockerd --host "unix://$FRESH_RUN/docker.sock" --data-root "$FRESH_ROOT" --exec-root "$FRESH_RUN/exec" \
    --pidfile "$FRESH_RUN/docker.pid" --bridge "$FRESH_BRIDGE" --iptables=false --ip-masq=false \
    > "$FRESH_RUN/dockerd.log" 2>&1 &
  FRESH_DOCKERD=$!
  export DOCKER_HOST=unix://$FRESH_RUN/docker.sock
  FRESH_PODMAN=$FRESH_ROOT-podman; rm -rf "$FRESH_PODMAN"; mkdir -p "$FRESH_PODMAN/tmp"
  printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' "$FRESH_PODMAN/root" "$FRESH_RUN/podman" \
    > "$FRESH_PODMAN/storage.conf"
  export CONTAINERS_STORAGE_CONF=$FRESH_PODMAN/storage.conf TMPDIR=$FRESH_PODMAN/tmp
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info --format 'fresh engine {{.ServerVersion}}, images {{.Images}}, root {{.DockerRootDir}}'
}

fresh_clone() {
  rm -rf "$1" "$1.cache"; git clone -q "$FRESH_REPO" "$1" && cd "$1" && git log --oneline | head -1
  export DLREPRO_CACHE=$1.cache
}

fresh_engine_down() {
  kill "$FRESH_DOCKERD"; wait "$FRESH_DOCKERD"
  iptables -D DOCKER-USER -i "$FRESH_BRIDGE" -j ACCEPT
  iptables -D DOCKER-USER -o "$FRESH_BRIDGE" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
  iptables -t nat -D POSTROUTING -s "$FRESH_NET.0/24" ! -o "$FRESH_BRIDGE" -j MASQUERADE
  ip link delete "$FRESH_BRIDGE"
  umount "$FRESH_ROOT" 2>/dev/null; rm -rf "$FRESH_ROOT"
  umount "$FRESH_PODMAN/root/overlay" 2>/dev/null; rm -rf "$FRESH_PODMAN"; true
}

# Each line of standard input stamped with the seconds since $1 (a `date +%s.%N`).
stamped() {
  python3 -u -c '
import sys, time
t0 = float(sys.argv[1])
for line in sys.stdin:
    print("%7.1f %s" % (time.time() - t0, line.rstrip("\n")), flush=True)' "$1"
}
