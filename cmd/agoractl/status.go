package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
)

// status: mode, buffered items, outbox, link, last utterance.
func status(ctx context.Context, c *control.Client, _ options, _ io.Writer) (result, error) {
	s, err := c.Status(ctx)
	return result{s, func(w io.Writer) { printStatus(w, s) }}, err
}

func printStatus(w io.Writer, s control.Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	link := "offline"
	if s.Online {
		link = "online"
	}
	fmt.Fprintf(tw, "device:\t%s\n", s.DeviceID)
	fmt.Fprintf(tw, "mode:\t%s\n", s.Mode)
	fmt.Fprintf(tw, "buffered:\t%d\n", s.Buffered)
	fmt.Fprintf(tw, "outbox:\t%d\n", s.Outbox)
	fmt.Fprintf(tw, "link:\t%s\n", link)
	if s.Unconfirmed > 0 {
		fmt.Fprintf(tw, "unconfirmed:\t%d (accepted by the broker, not confirmed by the backend: check ACLs and the bridge)\n", s.Unconfirmed)
	} else {
		fmt.Fprintf(tw, "unconfirmed:\t0\n")
	}
	if s.Parked > 0 {
		fmt.Fprintf(tw, "parked:\t%d (refused by the backend, kept on the device; agora-bridge deadletters has them too)\n", s.Parked)
		for _, p := range s.ParkedEntries {
			fmt.Fprintf(tw, "  parked:\tseq %d %s: %s\n", p.Seq, shown(p.ID), shown(p.Reason))
		}
	}
	if s.StuckSeconds > 0 {
		fmt.Fprintf(tw, "outbox stuck:\t%s\n", (time.Duration(s.StuckSeconds) * time.Second).String())
	}
	if l := s.Levels; l != nil {
		heard := "no speech kept"
		if l.WearerDBFS != nil {
			heard = fmt.Sprintf("wearer %.1f dBFS (%d utterances)", *l.WearerDBFS, l.Utterances)
		}
		fmt.Fprintf(tw, "levels:\tfloor %.1f dBFS, %s, %d dropped as others', over %.0f s (agorad doctor judges them)\n", l.FloorDBFS, heard, l.Dropped, l.Seconds)
	}
	if s.Storage != "" {
		fmt.Fprintf(tw, "storage:\t%s\n", s.Storage)
	}
	for _, p := range s.Problems {
		fmt.Fprintf(tw, "problem:\t%s\n", shown(p))
	}
	if s.LastUtterance != nil {
		fmt.Fprintf(tw, "last utterance:\t%q at %s\n", s.LastUtterance.Text, s.LastUtterance.At.Local().Format(time.DateTime))
	} else {
		fmt.Fprintf(tw, "last utterance:\t-\n")
	}
	fmt.Fprintf(tw, "transcribed:\t%d utterance(s)\n", s.Transcriptions)
	fmt.Fprintf(tw, "model:\t%s\n", s.Model)
	fmt.Fprintf(tw, "version:\t%s\n", s.Version)
	fmt.Fprintf(tw, "uptime:\t%s\n", (time.Duration(s.UptimeSeconds) * time.Second).String())
	fmt.Fprintf(tw, "refused (store full):\t%d\n", s.Refused)
	speaking := "-"
	if s.Speaking != "" {
		speaking = "reply " + shown(s.Speaking)
	}
	fmt.Fprintf(tw, "speaking:\t%s\n", speaking)
	fmt.Fprintf(tw, "replies waiting:\t%d\n", s.RepliesWaiting)
	if s.Speech != "" {
		fmt.Fprintf(tw, "speech:\t%s\n", shown(s.Speech))
	}
	tw.Flush()
}
