package uplink

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"time"
)

// TLSConfig builds the client TLS config; errors name the file at fault.
func TLSConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read MQTT CA file %s: %w", caFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("MQTT CA file %s: no PEM certificates found", caFile)
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("MQTT client certificate: cert file %q and key file %q must be set together", certFile, keyFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("load MQTT client certificate %s / key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// certHint says why the client certificate in certFile is not valid at
// now ("" when it is, or cannot be read: TLSConfig reported that).
func certHint(certFile string, now time.Time) string {
	if certFile == "" {
		return ""
	}
	b, err := os.ReadFile(certFile)
	if err != nil {
		return ""
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		return ""
	}
	leaf, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return ""
	}
	switch {
	case now.After(leaf.NotAfter):
		return fmt.Sprintf("client certificate %s expired at %s: the broker refuses it; install a renewed certificate", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return fmt.Sprintf("client certificate %s is not valid before %s: is the device clock right?", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	return ""
}
