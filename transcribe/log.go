package transcribe

import "C"

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

// whisper and ggml have one process-wide log callback, so the logger it
// writes to is process-wide too: the last Transcriber's, or slog.Default().
var (
	logHookOnce sync.Once
	nativeLog   atomic.Pointer[slog.Logger]
	logMu       sync.Mutex
	logLine     strings.Builder
	logLevel    int
)

// routeNativeLogs sends whisper/ggml log lines to logger at debug level.
func routeNativeLogs(logger *slog.Logger) {
	nativeLog.Store(logger)
	logHookOnce.Do(installLogHook)
}

//export agoraGoLog
func agoraGoLog(level C.int, text *C.char) {
	s := C.GoString(text)
	logMu.Lock()
	if int(level) != 5 { // GGML_LOG_LEVEL_CONT continues the previous line
		logLevel = int(level)
	}
	logLine.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		logMu.Unlock()
		return
	}
	line := strings.TrimSpace(logLine.String())
	lvl := logLevel
	logLine.Reset()
	logMu.Unlock()
	if line == "" {
		return
	}
	logger := nativeLog.Load()
	if logger == nil {
		logger = slog.Default()
	}
	logger.Log(context.Background(), slog.LevelDebug, line, "component", "whisper", "native_level", lvl)
}
