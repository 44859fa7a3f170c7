package configs

import (
	"fmt"
	"strings"
)

// Broker engines (mqtt.engine).
const (
	EngineMosquitto = "mosquitto"
	EngineNATS      = "nats"
)

// EngineDeviceID checks a device id (already valid for MQTT topics, see
// protocol.ValidateDeviceID) against what the broker engine can carry.
// nats-server's MQTT listener maps topic levels to subject tokens, which
// '.' separates: it drops the connection of a client whose topics hold one,
// so the device would loop on "connect: EOF" with the reason only in the
// NATS log. The error names device_id and says why.
func EngineDeviceID(engine, id string) error {
	if engine == EngineNATS && strings.Contains(id, ".") {
		return fmt.Errorf("device_id: %q contains '.', which mqtt.engine nats cannot carry (NATS separates subject tokens with '.'; its MQTT listener refuses such topics): use '-' or '_' instead", id)
	}
	return nil
}

// engineSafeID makes a derived device id (the hostname fallback) one the
// engine can carry, so that a default configuration starts on any engine.
func engineSafeID(engine, id string) string {
	if engine == EngineNATS {
		return strings.ReplaceAll(id, ".", "-")
	}
	return id
}
