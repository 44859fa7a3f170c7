package daemon

import (
	"log/slog"
	"sync"

	"github.com/agora/agorad/audio"
	"github.com/agora/agorad/configs"
)

// sounder plays the earcons. A device without a speaker still works: the
// player that cannot open is logged once and the daemon runs silent.
type sounder struct {
	log    *slog.Logger
	mu     sync.Mutex
	cfg    configs.Sounds
	player *audio.Player
	tried  bool
	clips  map[string][]float32
}

func newSounder(cfg configs.Sounds, log *slog.Logger) *sounder {
	s := &sounder{log: log.With("component", "sounds"), cfg: cfg, clips: map[string][]float32{}}
	for _, name := range audio.EarconNames() {
		if c, err := audio.Earcon(name); err == nil {
			s.clips[name] = c
		}
	}
	return s
}

// Play queues an earcon; it never blocks on the audio device.
func (s *sounder) Play(name string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cfg.Enabled || s.cfg.Volume == 0 {
		return
	}
	if s.player == nil && !s.tried {
		s.tried = true
		p, err := audio.OpenPlayer(audio.PlayerOptions{Device: s.cfg.Device, Volume: s.cfg.Volume, Logger: s.log})
		if err != nil {
			s.log.Warn("feedback sounds off: cannot open the speaker", "device", s.cfg.Device, "err", err)
			return
		}
		s.player = p
	}
	if s.player == nil {
		return
	}
	clip, ok := s.clips[name]
	if !ok {
		s.log.Error("unknown earcon", "name", name)
		return
	}
	if err := s.player.Play(clip); err != nil {
		s.log.Warn("earcon not played", "name", name, "err", err)
	}
}

// Configure applies a reloaded sounds section; the player is reopened on
// the next sound so that a new device or volume takes effect.
func (s *sounder) Configure(cfg configs.Sounds) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg = cfg
	s.closeLocked()
}

func (s *sounder) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

func (s *sounder) closeLocked() {
	if s.player != nil {
		if err := s.player.Close(); err != nil {
			s.log.Warn("close speaker", "err", err)
		}
	}
	s.player, s.tried = nil, false
}
