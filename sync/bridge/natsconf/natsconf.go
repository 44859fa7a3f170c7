package natsconf

import (
	"fmt"
	"strings"

	"github.com/agora/agorad/sync/protocol"
)

// BridgeUser is the bridge's user name (as in configs/mosquitto/acl).
const BridgeUser = "agora-bridge"

// PartitionedTopics are the device topics the mapping partitions; status
// stays on agora.v1.<device>.status (retained, read by every bridge).
var PartitionedTopics = []string{"utterances", "batches", "events", "acks"}

// Options are what the rendered configuration says.
type Options struct {
	ServerName string // server_name; default agora-1
	Listen     string // NATS clients (the bridges); default 127.0.0.1:4222
	MQTTListen string // the devices; default 0.0.0.0:1883
	StoreDir   string // JetStream's; default /var/lib/nats
	Partitions int    // N of partition(N,1): the bridges' --partitions
	Users      []User // the bridge and every device
}

// Render returns the nats-server configuration for o, or an error naming
// what is wrong (no bridge user, a name that is no device id).
func Render(o Options) (string, error) {
	if o.Partitions < 1 || o.Partitions > 1024 {
		return "", fmt.Errorf("partitions: %d is not 1 to 1024", o.Partitions)
	}
	def := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	def(&o.ServerName, "agora-1")
	def(&o.Listen, "127.0.0.1:4222")
	def(&o.MQTTListen, "0.0.0.0:1883")
	def(&o.StoreDir, "/var/lib/nats")
	var b strings.Builder
	fmt.Fprintf(&b, "# nats-server for an AGORA fleet (agora-bridge nats-config): devices speak MQTT,\n")
	fmt.Fprintf(&b, "# bridges read JetStream; every device may act only as itself.\n")
	fmt.Fprintf(&b, "server_name: %q\nlisten: %q\njetstream { store_dir: %q }\nmqtt { listen: %q }\n",
		o.ServerName, o.Listen, o.StoreDir, o.MQTTListen)
	b.WriteString("mappings = {\n")
	for _, t := range PartitionedTopics {
		fmt.Fprintf(&b, "  \"agora.v1.*.%s\": \"agora.in.{{partition(%d,1)}}.{{wildcard(1)}}.%s\"\n", t, o.Partitions, t)
	}
	b.WriteString("}\nauthorization {\n  users = [\n")
	bridge := false
	seen := map[string]bool{}
	for _, u := range o.Users {
		if seen[u.Name] {
			return "", fmt.Errorf("user %q: listed twice", u.Name)
		}
		seen[u.Name] = true
		if err := checkUser(u); err != nil {
			return "", err
		}
		if u.Name == BridgeUser {
			bridge = true
			fmt.Fprintf(&b, "    {user: %q, password: %q}\n", u.Name, u.Hash)
			continue
		}
		pub, sub := DevicePermissions(u.Name)
		fmt.Fprintf(&b, "    {user: %q, password: %q, permissions: {publish: {allow: [%s]}, subscribe: {allow: [%s]}}}\n",
			u.Name, u.Hash, quoted(pub), quoted(sub))
	}
	if !bridge {
		return "", fmt.Errorf("no user %q: the bridges could not connect (add it to the passwd file)", BridgeUser)
	}
	b.WriteString("  ]\n}\n")
	return b.String(), nil
}

// DevicePermissions are the subjects device may publish and subscribe to.
// The server checks a publish after the mapping (measured on nats-server
// 2.9: "Publish Violation ... agora.in.3.dev1.utterances" with only
// agora.v1.dev1.utterances allowed), so the partitioned topics are allowed
// in their mapped form, any partition, this device's id only.
func DevicePermissions(device string) (publish, subscribe []string) {
	for _, t := range PartitionedTopics {
		publish = append(publish, "agora.in.*."+device+"."+t)
	}
	publish = append(publish, "agora.v1."+device+".status", "agora.doctor."+device)
	return publish, []string{"agora.v1." + device + ".commands", "$MQTT.sub.>"}
}

func checkUser(u User) error {
	if u.Name != BridgeUser {
		if err := protocol.ValidateDeviceID(u.Name); err != nil {
			return fmt.Errorf("user %q: %w", u.Name, err)
		}
		// A '.' would be a subject separator: "a.b" would be two tokens and
		// its permissions another device's.
		if strings.Contains(u.Name, ".") {
			return fmt.Errorf("user %q: a device id with '.' cannot be confined on nats-server (a subject separator); rename the device", u.Name)
		}
	}
	if !strings.HasPrefix(u.Hash, "$2") {
		return fmt.Errorf("user %q: password is not a bcrypt hash (agora-bridge nats-passwd writes one)", u.Name)
	}
	return nil
}

func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
