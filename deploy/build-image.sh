#!/usr/bin/env bash
# `make image`: builds deploy/Dockerfile with podman into localhost/kflow:local (the CPU image), offline and
# reproducibly, from a wheelhouse made on this host. Run from anywhere, as root (podman, debootstrap).
#
# - The base: python:3.11.13-slim-bookworm when podman has it or can pull it. Where no registry is reachable,
#   a STAND-IN BASE, localhost/kflow-stand-in-base:python3.11-bookworm: Debian bookworm's own Python 3.11
#   (debootstrap --variant=minbase), with python and pip in /usr/local/bin as in the real base (a venv at
#   /usr/local). Everything above the base is the real Dockerfile.
# - The wheels: `pip wheel` of the runtime dependencies (kflow's, no dev extras) pinned by requirements.lock, and
#   the build backend, into a wheelhouse on the host; the build installs from it alone (PIP_NO_INDEX), mounted
#   read-only for the install (it leaves no layer).
# - Both are cached under KFLOW_IMAGE_CACHE (default ~/.cache/kflow-image), never in the repository: the wheelhouse
#   keyed by the lock files, the base as a tarball. A second build reuses them and podman's layer cache.
#
# Podman here: runc with cgroupfs (crun refuses these machines' hybrid cgroups), and `nofile`/`nproc` limits at
# or below the machine's hard limits (podman's defaults exceed them).
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${KFLOW_IMAGE:-localhost/kflow:local}
CACHE=${KFLOW_IMAGE_CACHE:-$HOME/.cache/kflow-image}
PYTHON=${PYTHON:-.venv/bin/python}
REAL_BASE=docker.io/library/python:3.11.13-slim-bookworm
STAND_IN=localhost/kflow-stand-in-base:python3.11-bookworm
STAND_IN_TAR=$CACHE/stand-in-base-python3.11-bookworm.tar
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

podman_() { podman --runtime runc --cgroup-manager cgroupfs "$@"; }
say() { echo "image: $*" >&2; }
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
[ "$nproc" = unlimited ] || [ "$nproc" -ge 4096 ] && nproc=4096
ULIMITS=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

for tool in podman runc; do
  command -v "$tool" >/dev/null || { say "needs $tool (apt-get install -y podman runc debootstrap)"; exit 2; }
done
mkdir -p "$CACHE"

stand_in_base() {
  if podman_ image exists "$STAND_IN"; then return; fi
  if [ ! -s "$STAND_IN_TAR" ]; then
    command -v debootstrap >/dev/null || { say "needs debootstrap for the stand-in base"; exit 2; }
    local root
    root=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    trap 'rm -rf "$root"' EXIT
    say "preparing the stand-in base with debootstrap (about a minute)"
    # python3-distutils named too: debootstrap's resolver misses it (python3.11-venv needs it).
    debootstrap --variant=minbase --include=python3.11,python3.11-venv,python3-distutils,ca-certificates \
      bookworm "$root" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || { say "debootstrap failed: see $CACHE/debootstrap.log"; exit 1; }
    # python and pip in /usr/local/bin, site-packages of their own, as python:3.11-slim has them (Debian's own
    # Python refuses `pip install` into it: PEP 668).
    chroot "$root" /usr/bin/python3.11 -m venv /usr/local
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
      "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
    tar -C "$root" --numeric-owner -cf "$STAND_IN_TAR.part" .
    mv "$STAND_IN_TAR.part" "$STAND_IN_TAR"
    rm -rf "$root"
    trap - EXIT
  fi
  podman_ import --change 'ENV LANG=C.UTF-8' --change 'CMD ["python3"]' \
    --message "STAND-IN for python:3.11.13-slim-bookworm: Debian bookworm minbase + python3.11" \
    "$STAND_IN_TAR" "$STAND_IN" >/dev/null
}

if podman_ image exists "$REAL_BASE"; then
  BASE=$REAL_BASE
elif [ -z "${KFLOW_STAND_IN_BASE:-}" ] && timeout 60 podman_ pull -q "$REAL_BASE" >/dev/null 2>&1; then
  BASE=$REAL_BASE
else
  say "$REAL_BASE cannot be pulled: building on the stand-in base $STAND_IN"
  stand_in_base
  BASE=$STAND_IN
fi

# The wheelhouse: kflow's runtime dependencies at the lock's versions, and setuptools (the build backend).
key=$(cat requirements.lock pyproject.toml setup.py | sha256sum | cut -c1-16)
WHEELS=$CACHE/wheels-$key
if [ ! -f "$WHEELS/.complete" ]; then
  say "making the wheelhouse $WHEELS"
  rm -rf "$WHEELS"
  "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$WHEELS" -c requirements.lock . setuptools
  rm -f "$WHEELS"/kflow-*.whl  # The image installs the code itself, editable.
  touch "$WHEELS/.complete"
fi

# The code the image holds, as `kflow rehearse` digests the checkout (pipeline/rehearsal/podman.py: code_digest), so
# that a rehearsal says when the image was built from other code.
digest=$(find pipeline components schemas -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 \
  | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16)
say "building $IMAGE on $BASE (code $digest)"
podman_ build "${ULIMITS[@]}" --layers --file deploy/Dockerfile --tag "$IMAGE" --label "kflow.code-digest=$digest" \
  --build-arg BASE="$BASE" --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/wheels \
  --volume "$WHEELS:/wheels:ro" .
podman_ image inspect --format 'image: {{.RepoTags}} {{.Size}} bytes' "$IMAGE"
