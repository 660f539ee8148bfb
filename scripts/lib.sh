# shellcheck shell=bash
# Shared by scripts/setup and scripts/test (sourced, not run): sudo when not root, and an
# apt-get install that runs `apt-get update` once, on first use.

sudo=""
if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
apt_updated=""

apt_install() {
  if [ -z "$apt_updated" ]; then
    $sudo apt-get update
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "$@"
}

have() { command -v "$1" >/dev/null 2>&1; }

# rustup_components C…: adds the components not installed yet (no network when all are).
rustup_components() {
  local installed missing=()
  installed=$(rustup component list --installed)
  for c in "$@"; do
    grep -q "^$c" <<<"$installed" || missing+=("$c")
  done
  if [ ${#missing[@]} -gt 0 ]; then rustup component add "${missing[@]}"; fi
}

# rustup_targets T…: adds the targets whose standard library is not installed yet.
rustup_targets() {
  local installed missing=()
  installed=$(rustup target list --installed)
  for t in "$@"; do
    grep -qx "$t" <<<"$installed" || missing+=("$t")
  done
  if [ ${#missing[@]} -gt 0 ]; then rustup target add "${missing[@]}"; fi
}

# apt_tool CMD PACKAGE WHY: installs PACKAGE (Debian) unless CMD is on PATH; WHY says what
# goes without it when it cannot be installed.
apt_tool() {
  local cmd=$1 pkg=$2 why=$3
  if have "$cmd"; then
    echo "$(basename "$0"): $cmd is installed"
  elif have apt-get; then
    apt_install "$pkg" || echo "$(basename "$0"): could not install $pkg; $why" >&2
  else
    echo "$(basename "$0"): no apt-get here; install $pkg by hand ($why)" >&2
  fi
}
