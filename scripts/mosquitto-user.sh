#!/usr/bin/env bash
# Adds (or changes) one client's credentials in a mosquitto password file:
#   scripts/mosquitto-user.sh PASSWORD_FILE NAME [PASSWORD]
# NAME is a device's device_id (the ACL's %u: it may act only as that device)
# or agora-bridge. Without PASSWORD a random one is made. The password is
# printed once on stdout: put it in the device's secrets (mqtt.password_file
# or AGORAD_MQTT_PASSWORD) or the bridge's. Then reload mosquitto
# (systemctl reload mosquitto, or SIGHUP) so it reads the file again.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 PASSWORD_FILE NAME [PASSWORD]" >&2
  exit 2
fi
file=$1 name=$2 pass=${3:-}
# The same rule as a device_id (protocol.ValidDeviceID): it is a topic level.
if ! [[ $name =~ ^[A-Za-z0-9._-]{1,64}$ ]]; then
  echo "$0: name '$name' is not a device id (1 to 64 letters, digits, '.', '_' or '-')" >&2
  exit 2
fi
if [ -z "$pass" ]; then
  pass=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
fi
command -v mosquitto_passwd >/dev/null || { echo "$0: mosquitto_passwd not found (apt-get install mosquitto)" >&2; exit 1; }
umask 077
[ -e "$file" ] || : > "$file"
mosquitto_passwd -b "$file" "$name" "$pass"
if getent group mosquitto >/dev/null && [ "$(id -u)" = 0 ]; then
  chgrp mosquitto "$file" && chmod 0640 "$file"
fi
echo "$pass"
