package configs

import (
	"fmt"
	"os"
)

// SecretWarnings reports secrets other users can read: a password_file or
// an encryption_key_file with any group or other permission, and a configuration file that holds
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
	// The store key is held to the password_file rule: whoever reads it
	// reads every buffered note and reply (the key file is the only secret
	// of the encryption at rest).
	if c.Storage.EncryptionKeyFile != "" {
		p := os.ExpandEnv(c.Storage.EncryptionKeyFile)
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o077 != 0 {
			out = append(out, fmt.Sprintf("storage.encryption_key_file: %s has mode %04o: other users may read the store's encryption key; chmod 600 (or 640 for a trusted group) or use systemd LoadCredentialEncrypted=", p, st.Mode().Perm()))
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
