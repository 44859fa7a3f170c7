package control

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
)

// Handler carries out the daemon's operations. Requests are validated before
// a method is called (mode is listen or feedback, text is not empty).
type Handler interface {
	Status(ctx context.Context) (Status, error)
	SetMode(ctx context.Context, mode string) (ModeResult, error)
	Say(ctx context.Context, text string) (SayResult, error)
	BufferList(ctx context.Context, limit int) (BufferList, error)
	// BufferExport calls emit for every listen-buffer record in order; an
	// error from emit (the client went away) must stop the export.
	BufferExport(ctx context.Context, emit func(Record) error) error
	BufferClear(ctx context.Context) (ClearResult, error)
	Outbox(ctx context.Context, limit int) (Outbox, error)
	Flush(ctx context.Context) (FlushResult, error)
	PTT(ctx context.Context, down bool) (PTTResult, error)
}

// SocketMode is the permission of the control socket: connecting needs write
// permission, so only the agorad user and group can talk to the daemon.
const SocketMode fs.FileMode = 0o660

// MaxRequest bounds one request line (say text included).
const MaxRequest = 64 << 10

// Listen creates the control socket at path with SocketMode. The socket is
// bound inside a private temporary directory, chmod-ed, then renamed into
// place, so nobody can connect while it still has the umask's permissions.
// An existing socket file is removed only if nothing answers on it; any other
// file at path is left alone and reported.
func Listen(path string) (net.Listener, error) {
	if st, err := os.Lstat(path); err == nil {
		if st.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("control socket %s: a file that is not a socket is in the way", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("control socket %s: another agorad is already answering on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove stale control socket %s: %w", path, err)
		}
	}
	dir := filepath.Dir(path)
	tmp, err := os.MkdirTemp(dir, ".agorad-sock-")
	if err != nil {
		return nil, fmt.Errorf("create control socket %s: %w", path, err)
	}
	defer os.RemoveAll(tmp)
	tmpPath := filepath.Join(tmp, "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmpPath, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("create control socket %s: %w", path, err)
	}
	// The listener would unlink its temporary name on Close; the wrapper
	// removes the real one instead.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(tmpPath, SocketMode); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod control socket %s: %w", path, err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		ln.Close()
		return nil, fmt.Errorf("create control socket %s: %w", path, err)
	}
	return &socketListener{UnixListener: ln, path: path}, nil
}

type socketListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *socketListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }

func (l *socketListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}

// ServeOptions tune Serve. Zero values take the defaults.
type ServeOptions struct {
	// MaxConns caps open connections (default 64). At the cap a new
	// connection evicts the one idle longest, so a pile of idle clients
	// never locks out `agoractl status`; when every one is busy the new
	// one is told so and closed.
	MaxConns int
	// IdleTimeout closes a connection that sends no request for this long
	// (default 2m); WriteTimeout one whose client stops reading (default 30s).
	IdleTimeout  time.Duration
	WriteTimeout time.Duration
	// Logger for accept errors and panics; nil means slog.Default().
	Logger *slog.Logger
	// OnAcceptError is called for each accept error (for a metric).
	OnAcceptError func(error)
}

// conn is one served connection.
type conn struct {
	net.Conn
	busy     atomic.Bool  // handling a request
	lastUsed atomic.Int64 // unix nanoseconds of the last request
}

// Serve answers connections on ln until ctx ends, one goroutine per
// connection; it closes ln and every connection and waits for their
// goroutines before returning. It returns nil when ctx ended, and an error
// only when ln was closed under it. Accept errors such as EMFILE (out of file
// descriptors) are logged and retried with backoff, never fatal: the control
// socket must not take the daemon down. Errors of single requests go back
// to their client and are logged at debug level.
func Serve(ctx context.Context, ln net.Listener, h Handler, opts ...ServeOptions) error {
	var o ServeOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 64
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 30 * time.Second
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	var (
		mu     sync.Mutex
		conns  = map[*conn]struct{}{}
		closed bool
	)
	g.Go(func() error {
		<-gctx.Done()
		ln.Close()
		mu.Lock()
		closed = true
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		return nil
	})
	// admit adds c, evicting the connection idle longest at the cap; false
	// when every connection is busy (or Serve is stopping).
	admit := func(c *conn) bool {
		mu.Lock()
		defer mu.Unlock()
		if closed {
			return false
		}
		if len(conns) >= o.MaxConns {
			var victim *conn
			for x := range conns {
				if !x.busy.Load() && (victim == nil || x.lastUsed.Load() < victim.lastUsed.Load()) {
					victim = x
				}
			}
			if victim == nil {
				return false
			}
			delete(conns, victim)
			victim.Close()
		}
		conns[c] = struct{}{}
		return true
	}
	var (
		acceptErr error
		delay     time.Duration
		failures  int
	)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if gctx.Err() != nil {
				break
			}
			if errors.Is(err, net.ErrClosed) {
				acceptErr = fmt.Errorf("accept on control socket %s: %w", ln.Addr(), err)
				break
			}
			// EMFILE, ENFILE, ENOBUFS, ECONNABORTED...: wait and retry, as
			// net/http does; connections closing free what is missing.
			failures++
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			if o.OnAcceptError != nil {
				o.OnAcceptError(err)
			}
			if failures == 1 || failures%100 == 0 {
				logger.Error("control socket: accept failed; retrying", "err", err, "failures", failures, "retry_in", delay)
			}
			select {
			case <-gctx.Done():
			case <-time.After(delay):
			}
			continue
		}
		if failures > 0 {
			logger.Info("control socket: accepting again", "failures", failures)
			failures, delay = 0, 0
		}
		c := &conn{Conn: nc}
		c.lastUsed.Store(time.Now().UnixNano())
		if !admit(c) {
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			json.NewEncoder(nc).Encode(Response{Error: fmt.Sprintf("too many control connections (%d), all busy; try again", o.MaxConns)})
			nc.Close()
			if gctx.Err() != nil {
				break
			}
			continue
		}
		g.Go(func() error {
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			serveConn(gctx, c, h, logger, o)
			return nil
		})
	}
	cancel()
	g.Wait()
	return acceptErr
}

// deadlineWriter bounds writes, so a client that stops reading cannot hold
// a handler forever. The deadline is moved at most every d/4 (a long export
// makes thousands of writes), so each write has between 3d/4 and d.
type deadlineWriter struct {
	c   net.Conn
	d   time.Duration
	set time.Time
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	if now := time.Now(); now.Sub(w.set) > w.d/4 {
		w.c.SetWriteDeadline(now.Add(w.d))
		w.set = now
	}
	return w.c.Write(p)
}

func serveConn(ctx context.Context, c *conn, h Handler, logger *slog.Logger, o ServeOptions) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), MaxRequest)
	w := bufio.NewWriter(&deadlineWriter{c: c, d: o.WriteTimeout})
	enc := json.NewEncoder(w)
	for {
		c.SetReadDeadline(time.Now().Add(o.IdleTimeout))
		if !sc.Scan() {
			break
		}
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		c.busy.Store(true)
		resp := handle(ctx, line, h, enc, logger)
		err := enc.Encode(resp)
		if err == nil {
			err = w.Flush()
		}
		c.lastUsed.Store(time.Now().UnixNano())
		c.busy.Store(false)
		if err != nil {
			return
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		enc.Encode(Response{Error: fmt.Sprintf("request longer than %d bytes", MaxRequest)})
		w.Flush()
	}
}

func parseRequest(line []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("bad request: %v", err)
	}
	if dec.More() {
		return req, errors.New("bad request: more than one JSON value on the line")
	}
	switch req.Op {
	case "":
		return req, errors.New("op: missing")
	case OpMode:
		if req.Mode != ModeListen && req.Mode != ModeFeedback {
			return req, fmt.Errorf("mode: %q is not listen or feedback", req.Mode)
		}
	case OpSay:
		if strings.TrimSpace(req.Text) == "" {
			return req, errors.New("text: empty")
		}
	case OpBufferList, OpOutbox, OpReplies:
		if req.Limit < 0 {
			return req, fmt.Errorf("limit: %d is negative", req.Limit)
		}
	case OpBufferClear:
		if !req.Yes {
			return req, errors.New("yes: buffer.clear deletes the listen buffer; send \"yes\": true to confirm")
		}
	case OpOutboxDrop:
		if strings.TrimSpace(req.ID) == "" {
			return req, errors.New("id: missing (the parked entry to drop)")
		}
	case OpStatus, OpBufferExport, OpFlush, OpPTT, OpRepliesPlay, OpStop:
	default:
		return req, fmt.Errorf("op: unknown %q (want one of %s)", req.Op, strings.Join(ops, ", "))
	}
	return req, nil
}

func handle(ctx context.Context, line []byte, h Handler, enc *json.Encoder, logger *slog.Logger) (resp Response) {
	req, err := parseRequest(line)
	if err != nil {
		return Response{Error: err.Error()}
	}
	defer func() {
		// A bug in one operation must not take the daemon down.
		if r := recover(); r != nil {
			logger.Error("control: handler panicked", "op", req.Op, "panic", r, "stack", string(debug.Stack()))
			resp = Response{Error: fmt.Sprintf("%s: internal error", req.Op)}
		}
	}()
	var result any
	switch req.Op {
	case OpStatus:
		result, err = h.Status(ctx)
	case OpMode:
		result, err = h.SetMode(ctx, req.Mode)
	case OpSay:
		result, err = h.Say(ctx, req.Text)
	case OpBufferList:
		result, err = h.BufferList(ctx, req.Limit)
	case OpBufferExport:
		n := 0
		err = h.BufferExport(ctx, func(r Record) error {
			n++
			return enc.Encode(streamLine{Record: &r})
		})
		result = ExportResult{Count: n}
	case OpBufferClear:
		result, err = h.BufferClear(ctx)
	case OpOutbox:
		result, err = h.Outbox(ctx, req.Limit)
	case OpFlush:
		result, err = h.Flush(ctx)
	case OpPTT:
		result, err = h.PTT(ctx, req.Down)
	case OpReplies, OpRepliesPlay, OpStop:
		result, err = handleReplyOp(ctx, h, req)
	case OpOutboxDrop:
		result, err = handleParkedOp(ctx, h, req)
	}
	if err != nil {
		logger.Debug("control: request failed", "op", req.Op, "err", err)
		return Response{Error: fmt.Sprintf("%s: %v", req.Op, err)}
	}
	b, err := json.Marshal(result)
	if err != nil {
		return Response{Error: fmt.Sprintf("%s: encode result: %v", req.Op, err)}
	}
	return Response{OK: true, Result: b}
}

// isNotRunning reports errors meaning nothing listens at the path.
func isNotRunning(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT)
}
