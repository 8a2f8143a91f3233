# shellcheck shell=bash
# env.sh - part of a device bundle (scripts/device-bundle.sh,
# docs/device.md); source it after relocate.sh:
#   . BUNDLE/env.sh
# Puts the bundle's tools on PATH, finds the GPU driver's libcuda.so.1
# (the one library the bundle does not carry) and tells libibverbs which
# providers to load where the machine has no /etc/libibverbs.d. Sets
# BUNDLE_DIR and BUNDLE_LIBCUDA (the directory, or empty: no driver); not
# ORDO_*: every ordo process reads those as configuration keys.
BUNDLE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export BUNDLE_DIR
export PATH=$BUNDLE_DIR/tools:$PATH
BUNDLE_LIBCUDA=
for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }} /usr/local/nvidia/lib64 /usr/local/nvidia/lib \
	/usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /lib64 \
	/usr/local/cuda/compat /usr/lib/wsl/lib; do
	if [ -e "$d/libcuda.so.1" ]; then
		BUNDLE_LIBCUDA=$d
		break
	fi
done
if [ -z "$BUNDLE_LIBCUDA" ] && command -v ldconfig >/dev/null; then
	BUNDLE_LIBCUDA=$(ldconfig -p 2>/dev/null | sed -n 's/.*libcuda\.so\.1 .*=> \(.*\)\/libcuda\.so\.1$/\1/p' | head -1)
fi
export BUNDLE_LIBCUDA
# the bundle's DT_RPATH comes before LD_LIBRARY_PATH: adding the driver's
# directory cannot bring the machine's other libraries in
if [ -n "$BUNDLE_LIBCUDA" ]; then
	case ":${LD_LIBRARY_PATH:-}:" in
	*":$BUNDLE_LIBCUDA:"*) ;;
	*) export LD_LIBRARY_PATH=$BUNDLE_LIBCUDA${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
	esac
fi
if [ -z "$(ls /etc/libibverbs.d 2>/dev/null)" ]; then
	RDMAV_DRIVERS=$(sed -n 's/^providers: //p' "$BUNDLE_DIR/MANIFEST")
	export RDMAV_DRIVERS
fi
