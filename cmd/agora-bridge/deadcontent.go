package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/agora/agorad/sync/bridge"
)

// printDeadLetterContent prints each dead letter's id and its full payload
// (deadletters --content): quoted text when it is UTF-8 (a device message
// is JSON), else base64; quoting keeps a device's bytes from driving the
// operator's terminal.
func printDeadLetterContent(w io.Writer, dls []bridge.DeadLetter) {
	for _, d := range dls {
		if utf8.Valid(d.Payload) {
			fmt.Fprintf(w, "%s/%s content:\n  %s\n", d.DeviceID, d.ID, strconv.Quote(string(d.Payload)))
		} else {
			fmt.Fprintf(w, "%s/%s content (base64):\n  %s\n", d.DeviceID, d.ID, base64.StdEncoding.EncodeToString(d.Payload))
		}
	}
}
