# Sourced (sh) by the tests that need a private view of the machine, run
# under `unshare -m` as root with ROOT set to the tree: fresh tmpfs on
# /dev/shm (of SHM_SIZE when set), /tmp and /var/tmp, and the tree at its
# own path, read-only, so that anything written outside the places a test
# expects either fails or shows up. TMPDIR is unset, HOME is /tmp/home.
set -eu
mount --make-rprivate /
# The tree stays at its own path even when it lives under a directory
# about to be covered (a checkout in /tmp): parked on /mnt, put back.
mount -t tmpfs cc-stash /mnt
mkdir /mnt/root
mount --bind "$ROOT" /mnt/root
mount -t tmpfs ${SHM_SIZE:+-o size=$SHM_SIZE} cc-shm /dev/shm
mount -t tmpfs cc-tmp /tmp
mount -t tmpfs cc-vartmp /var/tmp
mkdir -p "$ROOT"
mount --bind /mnt/root "$ROOT"
mount -o remount,bind,ro "$ROOT"
unset TMPDIR
export HOME=/tmp/home
mkdir -p /tmp/home
