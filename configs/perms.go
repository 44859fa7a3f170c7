package configs

import (
	"fmt"
	"os"
)

// SecretWarnings reports secrets other users can read: a password_file with
// any group or other permission, and a configuration file that holds
// mqtt.password and is world-readable. They are warnings, not errors: the
// daemon still starts (a fleet must not go deaf over a chmod), but the
// deployer hears about it at every start. path is the configuration file
// ("" for none).
func (c *Config) SecretWarnings(path string) []string {
	var out []string
	if c.MQTT.PasswordFile != "" && os.Getenv(EnvMQTTPassword) == "" {
		p := os.ExpandEnv(c.MQTT.PasswordFile)
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			out = append(out, fmt.Sprintf("mqtt.password_file: %s has mode %04o: other users may read the broker password; chmod 600 (or 640 for a trusted group) or use systemd LoadCredential=", p, st.Mode().Perm()))
		}
	}
	if path != "" {
		if data, err := os.ReadFile(path); err == nil {
			if fc, err := Parse(data, path); err == nil && fc.MQTT.Password != "" {
				if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o004 != 0 {
					out = append(out, fmt.Sprintf("%s: holds mqtt.password and has mode %04o (world-readable): move the password to mqtt.password_file or AGORAD_MQTT_PASSWORD, or chmod o-r", path, st.Mode().Perm()))
				}
			}
		}
	}
	return out
}
