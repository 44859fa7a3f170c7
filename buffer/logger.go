package buffer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
)

// slogBadger adapts Badger's logger to slog. Badger's Info lines (tables
// opened, WAL replayed, compaction progress) are routine: they go to Debug;
// its Debug lines go below Debug.
type slogBadger struct{ log *slog.Logger }

func (l slogBadger) emit(level slog.Level, format string, args ...any) {
	if !l.log.Enabled(context.Background(), level) {
		return
	}
	l.log.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(format, args...)), "src", "badger")
}

func (l slogBadger) Errorf(f string, a ...any)   { l.emit(slog.LevelError, f, a...) }
func (l slogBadger) Warningf(f string, a ...any) { l.emit(slog.LevelWarn, f, a...) }
func (l slogBadger) Infof(f string, a ...any)    { l.emit(slog.LevelDebug, f, a...) }
func (l slogBadger) Debugf(f string, a ...any)   { l.emit(slog.LevelDebug-4, f, a...) }
