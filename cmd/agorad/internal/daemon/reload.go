package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agora/agorad/cmd/agorad/internal/sdnotify"
	"github.com/agora/agorad/configs"
	"github.com/agora/agorad/wake"
)

// reloadable are the fields a SIGHUP applies to the running daemon, keyed by
// field path or by section ("wake" is every wake.* field), each with what
// applies it; any other change waits for a restart. Log level, earcons and
// wake rules are read at the point of use, and a new mode goes through the
// router exactly as `agoractl mode` does (to feedback flushes the listen
// buffer): none of them can lose or reorder stored data.
var reloadable = map[string]func(c *commands, next *configs.Config) error{
	"log.level": (*commands).reloadLogLevel,
	"sounds":    (*commands).reloadSounds,
	"wake":      (*commands).reloadWake,
	"mode":      (*commands).reloadMode,
}

// restartOnly are fields of a reloadable section that a reload cannot
// apply: whisper's bias and the keyword spotter are set up at start.
var restartOnly = map[string]bool{"wake.bias": true, "wake.spotter": true, "wake.spotter_threshold": true}

// planReload splits changed field paths into those a reload applies (with
// the keys of reloadable to run, once each, in order) and those that need a
// restart.
func planReload(changed []string) (applied, keys, needRestart []string) {
	for _, f := range changed {
		if restartOnly[f] {
			needRestart = append(needRestart, f)
			continue
		}
		key := f
		if _, ok := reloadable[key]; !ok {
			key, _, _ = strings.Cut(f, ".")
		}
		if _, ok := reloadable[key]; !ok {
			needRestart = append(needRestart, f)
			continue
		}
		applied = append(applied, f)
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return applied, keys, needRestart
}

// reloadLoop applies SIGHUP until ctx ends.
func (c *commands) reloadLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Reload:
			c.reload()
		}
	}
}

// reload re-reads the configuration file; a file that does not load keeps
// the running configuration whole.
func (c *commands) reload() {
	_ = sdnotify.Reloading()
	defer func() { _ = sdnotify.Ready("reloaded") }()
	next, err := configs.Load(c.opts.ConfigPath)
	if err != nil {
		c.log.Error("reload: configuration rejected; keeping the running one", "err", err)
		return
	}
	applied, keys, restart := planReload(c.cfg.Diff(next))
	for _, k := range keys {
		if err := reloadable[k](c, next); err != nil {
			c.log.Error("reload: "+k+" not applied", "err", err)
		}
	}
	c.log.Info("configuration reloaded", "applied", applied, "need_restart", restart)
}

func (c *commands) reloadLogLevel(next *configs.Config) error {
	if c.opts.LevelVar == nil {
		return nil // a logger with a fixed level (tests)
	}
	c.opts.LevelVar.Set(next.Log.SlogLevel())
	c.cfg.Log.Level = next.Log.Level
	return nil
}

func (c *commands) reloadSounds(next *configs.Config) error {
	c.sounds.Configure(next.Sounds)
	c.cfg.Sounds = next.Sounds
	return nil
}

func (c *commands) reloadWake(next *configs.Config) error {
	r, err := wake.New(next.Wake.Rules())
	if err != nil {
		return fmt.Errorf("wake rules: %w", err)
	}
	c.rules.set(r)
	c.cfg.Wake = next.Wake
	return nil
}

func (c *commands) reloadMode(next *configs.Config) error {
	if _, err := c.router.SetMode(context.Background(), next.Mode); err != nil {
		return err
	}
	c.cfg.Mode = next.Mode
	return nil
}

// wakeRules are the wake rules in use; a reload swaps them.
type wakeRules struct{ p atomic.Pointer[wake.Rules] }

// Match finds wake phrases with the current rules (Matcher).
func (w *wakeRules) Match(text string) wake.Match { return w.p.Load().Match(text) }

// MatchSpot fuses the keyword spotter's verdict with the text under the
// current rules.
func (w *wakeRules) MatchSpot(text string, words []wake.Word, s wake.Spot) wake.Match {
	return w.p.Load().MatchSpot(text, words, s)
}

// TailFrom says whether and from where an utterance's audio after a name
// the spotter heard is transcribed again, under the current rules.
func (w *wakeRules) TailFrom(text string, words []wake.Word, s wake.Spot) (time.Duration, bool) {
	return w.p.Load().TailFrom(text, words, s)
}

func (w *wakeRules) set(r *wake.Rules) { w.p.Store(r) }
