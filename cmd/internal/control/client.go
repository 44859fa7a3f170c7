package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// DefaultSocket is where the systemd unit's RuntimeDirectory puts the socket.
const DefaultSocket = "/run/agorad/agorad.sock"

// ErrNotRunning means no daemon answers on the socket path.
var ErrNotRunning = errors.New("agorad is not running")

// ErrPermission means the socket exists but the caller may not connect.
var ErrPermission = errors.New("permission denied")

// Client talks to a running daemon. Requests on one Client are serialised.
type Client struct {
	path string
	mu   sync.Mutex
	conn net.Conn
	r    *bufio.Reader
}

// Dial connects to the daemon's control socket.
func Dial(path string) (*Client, error) {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		switch {
		case isNotRunning(err):
			return nil, fmt.Errorf("%w (no control socket at %s)", ErrNotRunning, path)
		case errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
			return nil, fmt.Errorf("%w on %s (are you in the agorad group?)", ErrPermission, path)
		}
		return nil, fmt.Errorf("connect to agorad at %s: %w", path, err)
	}
	return &Client{path: path, conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// roundTrip sends req and decodes the final response's result into out;
// onRecord, when not nil, receives streamed records first.
func (c *Client) roundTrip(ctx context.Context, req Request, out any, onRecord func(Record) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	// A past deadline is what interrupts a blocked read when ctx ends.
	dl, _ := ctx.Deadline() // zero: no deadline
	c.conn.SetDeadline(dl)
	stop := context.AfterFunc(ctx, func() { c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("%s: encode request: %w", req.Op, err)
	}
	if _, err := c.conn.Write(append(b, '\n')); err != nil {
		return c.ioErr(ctx, req.Op, err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return c.ioErr(ctx, req.Op, err)
		}
		var probe struct {
			Record *Record `json:"record"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return fmt.Errorf("%s: bad answer from agorad: %w", req.Op, err)
		}
		if probe.Record != nil {
			if onRecord == nil {
				return fmt.Errorf("%s: agorad streamed records unasked", req.Op)
			}
			if err := onRecord(*probe.Record); err != nil {
				// The rest of the stream cannot be skipped reliably: drop
				// the connection.
				c.conn.Close()
				return err
			}
			continue
		}
		var resp Response
		if err := json.Unmarshal(line, &resp); err != nil {
			return fmt.Errorf("%s: bad answer from agorad: %w", req.Op, err)
		}
		if !resp.OK {
			return &RemoteError{Msg: resp.Error}
		}
		if out != nil && len(resp.Result) > 0 {
			if err := json.Unmarshal(resp.Result, out); err != nil {
				return fmt.Errorf("%s: bad result from agorad: %w", req.Op, err)
			}
		}
		return nil
	}
}

func (c *Client) ioErr(ctx context.Context, op string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", op, ctx.Err())
	}
	// The connection deadline is ctx's deadline; it may fire just before
	// ctx's own timer does.
	if dl, ok := ctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		return fmt.Errorf("%s: %w", op, context.DeadlineExceeded)
	}
	// The peer address in a net.OpError is the socket's temporary bind name
	// (see Listen); the path given to Dial is the one to show.
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return fmt.Errorf("%s: connection to agorad at %s: %w", op, c.path, err)
}

// RemoteError is an error the daemon answered with.
type RemoteError struct{ Msg string }

func (e *RemoteError) Error() string { return e.Msg }

// Status asks for the daemon's state.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	return s, c.roundTrip(ctx, Request{Op: OpStatus}, &s, nil)
}

// SetMode switches between listen and feedback.
func (c *Client) SetMode(ctx context.Context, mode string) (ModeResult, error) {
	var r ModeResult
	return r, c.roundTrip(ctx, Request{Op: OpMode, Mode: mode}, &r, nil)
}

// Say hands typed text to the daemon as if it had been spoken.
func (c *Client) Say(ctx context.Context, text string) (SayResult, error) {
	var r SayResult
	return r, c.roundTrip(ctx, Request{Op: OpSay, Text: text}, &r, nil)
}

// BufferList returns up to limit listen-buffer records (0: server default).
func (c *Client) BufferList(ctx context.Context, limit int) (BufferList, error) {
	var r BufferList
	return r, c.roundTrip(ctx, Request{Op: OpBufferList, Limit: limit}, &r, nil)
}

// BufferExport streams every listen-buffer record to fn, in order.
func (c *Client) BufferExport(ctx context.Context, fn func(Record) error) (ExportResult, error) {
	var r ExportResult
	return r, c.roundTrip(ctx, Request{Op: OpBufferExport}, &r, fn)
}

// BufferClear deletes the listen buffer.
func (c *Client) BufferClear(ctx context.Context) (ClearResult, error) {
	var r ClearResult
	return r, c.roundTrip(ctx, Request{Op: OpBufferClear, Yes: true}, &r, nil)
}

// Outbox describes the outbox (up to limit entries; 0: server default).
func (c *Client) Outbox(ctx context.Context, limit int) (Outbox, error) {
	var r Outbox
	return r, c.roundTrip(ctx, Request{Op: OpOutbox, Limit: limit}, &r, nil)
}

// Flush moves the listen buffer into the outbox as one batch.
func (c *Client) Flush(ctx context.Context) (FlushResult, error) {
	var r FlushResult
	return r, c.roundTrip(ctx, Request{Op: OpFlush}, &r, nil)
}

// PTT presses (down) or releases the push-to-talk key.
func (c *Client) PTT(ctx context.Context, down bool) (PTTResult, error) {
	var r PTTResult
	return r, c.roundTrip(ctx, Request{Op: OpPTT, Down: down}, &r, nil)
}
