package uplink

import (
	"fmt"
	"net/url"
)

// brokerSchemes are the broker URL schemes the uplink connects with (all
// paho's), and whether each is TLS. WebSockets (ws, wss) are left out: the
// broker the tests run (Debian's mosquitto) has no WebSocket listener, so
// they could not be tested here.
var brokerSchemes = map[string]bool{
	"tcp": false, "mqtt": false,
	"ssl": true, "tls": true, "mqtts": true, "tcps": true,
}

// ParseBrokerURL is the one check of a broker URL, used by the
// configuration (mqtt.broker) and by New, so a configuration that validates
// also connects. tls says whether the scheme is a TLS one. Errors show the
// URL with its password redacted.
func ParseBrokerURL(raw string) (u *url.URL, tls bool, err error) {
	u, err = url.Parse(raw)
	if err != nil {
		return nil, false, fmt.Errorf("is not a URL scheme://host:port (scheme tcp, mqtt, ssl, tls, mqtts or tcps)")
	}
	if u.Hostname() == "" {
		return nil, false, fmt.Errorf("%q is not a URL scheme://host:port (scheme tcp, mqtt, ssl, tls, mqtts or tcps)", u.Redacted())
	}
	tls, ok := brokerSchemes[u.Scheme]
	if !ok {
		return nil, false, fmt.Errorf("%q: scheme %q is not one of tcp, mqtt (plain) or ssl, tls, mqtts, tcps (TLS)", u.Redacted(), u.Scheme)
	}
	return u, tls, nil
}
