package agui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/events"
	"github.com/ag-ui-protocol/ag-ui/sdks/community/go/pkg/core/types"
)

// ExcerptLen bounds how much received data an error message quotes.
const ExcerptLen = 200

// Client posts runs to one AG-UI endpoint. The zero value is not usable:
// create it with New.
type Client struct {
	url  string
	http *http.Client
	// MaxEventBytes bounds one SSE event (all its data lines); default 64
	// MiB: a state snapshot carries the thread's buffered notes, and a full
	// listen buffer (up to 16 MiB on the device, about 50,000 notes) comes
	// back with ids and message wrappers at a few times that (10,000 notes
	// already pass 4 MiB).
	MaxEventBytes int
	// MaxStreamBytes bounds a whole stream; default 256 MiB.
	MaxStreamBytes int64
	// Header is added to every request (e.g. Authorization).
	Header http.Header
}

// New returns a client for url with its own connection pool sized for
// maxConns concurrent runs. timeout bounds a whole run (0: no bound beyond
// the caller's context).
func New(url string, maxConns int, timeout time.Duration) *Client {
	if maxConns <= 0 {
		maxConns = 64
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          maxConns,
		MaxIdleConnsPerHost:   maxConns,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: timeout,
		DisableCompression:    true,
	}
	return &Client{url: url, http: &http.Client{Transport: tr, Timeout: timeout},
		MaxEventBytes: 64 << 20, MaxStreamBytes: 256 << 20}
}

// URL is the endpoint the client posts to.
func (c *Client) URL() string { return c.url }

// CloseIdle closes pooled connections.
func (c *Client) CloseIdle() { c.http.CloseIdleConnections() }

// Result is what a finished run produced.
type Result struct {
	RunID string
	// Text is the concatenated TEXT_MESSAGE_CONTENT / _CHUNK deltas of the
	// last assistant message streamed.
	Text string
	// State is the last STATE_SNAPSHOT (nil when none was sent).
	State map[string]any
	// Events counts the events read; Unknown those of a type the SDK does not
	// know (skipped).
	Events, Unknown int
}

// StateString returns State[key] when it is a string.
func (r Result) StateString(key string) string {
	s, _ := r.State[key].(string)
	return s
}

// Error is a failed run. Permanent errors are the agent's answer to this
// input (retrying the same input is unlikely to help); the rest are about
// reaching or reading the agent.
type Error struct {
	Kind      string // "http", "connect", "run_error", "stream", "garbage", "timeout"
	Permanent bool
	Status    int    // HTTP status, when Kind is "http"
	Msg       string // what went wrong, with a bounded excerpt
	Err       error
}

func (e *Error) Error() string {
	s := "agui " + e.Kind + ": " + e.Msg
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// IsPermanent reports whether err is an *Error the agent meant.
func IsPermanent(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Permanent
}

// Excerpt returns at most ExcerptLen bytes of b as printable text.
func Excerpt(b []byte) string {
	if len(b) > ExcerptLen {
		b = b[:ExcerptLen]
		for len(b) > 0 && !utf8.Valid(b) { // do not cut a rune in half
			b = b[:len(b)-1]
		}
		return fmt.Sprintf("%q…", b)
	}
	return fmt.Sprintf("%q", b)
}

// Run posts in and reads its event stream to the end.
func (c *Client) Run(ctx context.Context, in types.RunAgentInput) (Result, error) {
	return c.run(ctx, in, nil)
}

func (c *Client) run(ctx context.Context, in types.RunAgentInput, sink Sink) (Result, error) {
	body, err := json.Marshal(in)
	if err != nil {
		return Result{}, &Error{Kind: "input", Permanent: true, Msg: "encode RunAgentInput", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return Result{}, &Error{Kind: "input", Permanent: true, Msg: "build request", Err: err}
	}
	for k, v := range c.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		kind := "connect"
		if isTimeout(err) {
			kind = "timeout"
		}
		return Result{}, &Error{Kind: kind, Msg: "POST " + c.url, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, ExcerptLen+1))
		// 4xx: the agent refused this input (422 for a schema error); 408
		// and 429 are about load, not the input.
		perm := resp.StatusCode >= 400 && resp.StatusCode < 500 &&
			resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests
		return Result{}, &Error{Kind: "http", Permanent: perm, Status: resp.StatusCode,
			Msg: fmt.Sprintf("status %d: %s", resp.StatusCode, Excerpt(b))}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, ExcerptLen+1))
		return Result{}, &Error{Kind: "garbage", Msg: fmt.Sprintf("content-type %q, body %s", ct, Excerpt(b))}
	}
	res, err := c.read(io.LimitReader(resp.Body, c.MaxStreamBytes), sink)
	if err != nil && ctx.Err() != nil {
		return res, ctx.Err()
	}
	return res, err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// read parses SSE (data:, event:, id:, comments, CRLF) and folds the events.
func (c *Client) read(r io.Reader, sink Sink) (Result, error) {
	var res Result
	br := bufio.NewReaderSize(r, 64<<10)
	var data bytes.Buffer
	haveData := false
	dispatch := func() (done bool, err error) {
		if !haveData {
			return false, nil
		}
		ev := data.Bytes()
		haveData = false
		defer data.Reset()
		return c.fold(&res, ev, sink)
	}
	for {
		line, err := readLine(br, c.MaxEventBytes)
		if err != nil && !errors.Is(err, io.EOF) {
			kind := "stream"
			if errors.Is(err, errLineTooLong) {
				kind = "garbage"
			}
			if isTimeout(err) {
				kind = "timeout"
			}
			return res, &Error{Kind: kind, Msg: fmt.Sprintf("after %d events", res.Events), Err: err}
		}
		eof := errors.Is(err, io.EOF)
		if len(line) == 0 {
			// Blank line (or EOF): dispatch. A final frame without its blank
			// line is still an event (the SDK client drops it).
			done, derr := dispatch()
			if derr != nil || done {
				return res, derr
			}
			if eof {
				return res, &Error{Kind: "stream", Msg: fmt.Sprintf("stream ended after %d events without RUN_FINISHED or RUN_ERROR", res.Events)}
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			if haveData {
				data.WriteByte('\n')
			}
			if data.Len()+len(value) > c.MaxEventBytes {
				return res, &Error{Kind: "garbage", Msg: fmt.Sprintf("event larger than %d bytes", c.MaxEventBytes)}
			}
			data.Write(value)
			haveData = true
		case "", "event", "id", "retry":
			// comment / fields AG-UI does not use: the type is in the JSON.
		default:
			return res, &Error{Kind: "garbage", Msg: fmt.Sprintf("not an SSE line: %s", Excerpt(line))}
		}
		if eof {
			done, derr := dispatch()
			if derr != nil || done {
				return res, derr
			}
			return res, &Error{Kind: "stream", Msg: fmt.Sprintf("stream ended after %d events without RUN_FINISHED or RUN_ERROR", res.Events)}
		}
	}
}

var errLineTooLong = errors.New("SSE line too long")

// readLine returns one line without its terminator (\n, \r\n); io.EOF with
// the last unterminated line.
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > max+2 {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) > 0 {
				return line, io.EOF
			}
			return line, err
		}
		return line, nil
	}
}

// known are the event types the SDK decodes; anything else is skipped.
func (c *Client) fold(res *Result, data []byte, sink Sink) (done bool, err error) {
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil || head.Type == "" {
		return false, &Error{Kind: "garbage", Msg: fmt.Sprintf("event %d is not an AG-UI event: %s", res.Events+1, Excerpt(data))}
	}
	res.Events++
	ev, err := events.EventFromJSON(data)
	if err != nil {
		if strings.HasPrefix(err.Error(), "unknown event type") {
			res.Unknown++
			return false, nil
		}
		return false, &Error{Kind: "garbage", Msg: fmt.Sprintf("event %s: %s", head.Type, Excerpt(data)), Err: err}
	}
	switch e := ev.(type) {
	case *events.RunStartedEvent:
		res.RunID = e.RunIDValue
	case *events.TextMessageStartEvent:
		res.Text = ""
		return false, sink.put(StreamStart, "")
	case *events.TextMessageContentEvent:
		res.Text += e.Delta
		return false, sink.put(StreamText, e.Delta)
	case *events.TextMessageChunkEvent:
		if e.Delta != nil {
			res.Text += *e.Delta
			return false, sink.put(StreamText, *e.Delta)
		}
	case *events.CustomEvent:
		if d, ok := spokenDelta(e); ok {
			return false, sink.put(StreamSpoken, d)
		}
	case *events.StateSnapshotEvent:
		if m, ok := e.Snapshot.(map[string]any); ok {
			res.State = m
		}
	case *events.RunFinishedEvent:
		return true, nil
	case *events.RunErrorEvent:
		code := ""
		if e.Code != nil {
			code = " (" + *e.Code + ")"
		}
		return true, &Error{Kind: "run_error", Permanent: true, Msg: fmt.Sprintf("RUN_ERROR%s: %s", code, Excerpt([]byte(e.Message)))}
	}
	return false, nil
}
