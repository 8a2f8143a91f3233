#!/usr/bin/env bash
# Installs ordo's build and test dependencies from Debian packages.
# Skips apt-get entirely when everything is already installed.
set -euo pipefail

packages=(
	build-essential dpkg-dev cmake pkg-config
	libzmq3-dev libsodium-dev libssl-dev libmsgpack-dev libinih-dev libgsl-dev libcmocka-dev
	libjansson-dev zlib1g-dev libibverbs-dev librdmacm-dev
	iproute2 procps python3 python3-venv
	patchelf perftest ibverbs-utils
	gnuplot-nox
	clang libclang-rt-14-dev help2man
	python3-torch python3-torchvision python3-sklearn
	openssh-server openssh-client openmpi-bin mpich slurm-wlm munge
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
