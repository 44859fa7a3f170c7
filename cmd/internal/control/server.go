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

// Serve answers connections on ln until ctx ends, one goroutine per
// connection; it closes ln and every connection and waits for their
// goroutines before returning. It returns nil when ctx ended and the accept
// error otherwise. Errors of single requests go back to their client and are
// logged at debug level through slog.Default().
func Serve(ctx context.Context, ln net.Listener, h Handler) error {
	logger := slog.Default()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	var (
		mu     sync.Mutex
		conns  = map[net.Conn]struct{}{}
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
	var acceptErr error
	for {
		c, err := ln.Accept()
		if err != nil {
			if gctx.Err() == nil {
				acceptErr = fmt.Errorf("accept on control socket %s: %w", ln.Addr(), err)
			}
			break
		}
		mu.Lock()
		if closed {
			mu.Unlock()
			c.Close()
			break
		}
		conns[c] = struct{}{}
		mu.Unlock()
		g.Go(func() error {
			defer func() {
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
				c.Close()
			}()
			serveConn(gctx, c, h, logger)
			return nil
		})
	}
	cancel()
	g.Wait()
	return acceptErr
}

func serveConn(ctx context.Context, c net.Conn, h Handler, logger *slog.Logger) {
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 4096), MaxRequest)
	w := bufio.NewWriter(c)
	enc := json.NewEncoder(w)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		resp := handle(ctx, line, h, enc, logger)
		if err := enc.Encode(resp); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
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
