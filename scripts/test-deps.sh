#!/usr/bin/env bash
# Debian packages the integration tests use: a real Prometheus Alertmanager (paging), headless Chromium
# (looking at the HTML report as a person would) and kcat (a real Kafka producer for manual checks).
# Installs only what is missing; needs root (CI runs as root) or passwordless sudo.
set -euo pipefail
need=()
command -v prometheus-alertmanager >/dev/null 2>&1 || [ -x /usr/bin/prometheus-alertmanager ] || need+=(prometheus-alertmanager)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
echo "installing test dependencies from Debian: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# the package enables a service; the tests start their own Alertmanager on loopback ports
$SUDO systemctl disable --now prometheus-alertmanager >/dev/null 2>&1 || true
# without systemd the package's init script may have started it: stop that one only (its pid file)
$SUDO service prometheus-alertmanager stop >/dev/null 2>&1 || true
