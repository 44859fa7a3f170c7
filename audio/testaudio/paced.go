package testaudio

import (
	"context"
	"time"

	"github.com/agora/agorad/audio"
)

// Paced wraps a Source so that chunks come out no faster than real time:
// the chunk at stream offset o is returned no earlier than o/16 kHz after
// the first one was. The ALSA file microphone captures far faster than real
// time (how much audio arrives while a test sleeps then depends on the
// machine); tests whose expectations depend on that, such as a push-to-talk
// press of a given length, read the real capture through Paced so they mean
// the same on every machine.
func Paced(src audio.Source) audio.Source { return &paced{Source: src} }

type paced struct {
	audio.Source
	started bool
	t0      time.Time
	off0    int64
}

func (p *paced) Read(ctx context.Context) (audio.Chunk, error) {
	c, err := p.Source.Read(ctx)
	if err != nil {
		return c, err
	}
	if !p.started {
		p.started, p.t0, p.off0 = true, time.Now(), c.Offset
	}
	due := p.t0.Add(time.Duration(c.Offset-p.off0) * time.Second / audio.SampleRate)
	if wait := time.Until(due); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return audio.Chunk{}, ctx.Err()
		}
	}
	return c, nil
}
