package control_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agora/agorad/cmd/internal/control"
	"github.com/agora/agorad/cmd/internal/control/controltest"
	"github.com/agora/agorad/cmd/internal/testrun"
)

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func dial(t *testing.T, path string) *control.Client {
	t.Helper()
	c, err := control.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestClientServerOperations(t *testing.T) {
	f := controltest.NewFake(3)
	path := controltest.Serve(t, f)
	c := dial(t, path)
	cx := ctx(t)

	st, err := c.Status(cx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != "listen" || st.Buffered != 3 || st.LastUtterance == nil || st.LastUtterance.Text != "meting 3" {
		t.Fatalf("status = %+v", st)
	}

	l, err := c.BufferList(cx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 3 || len(l.Records) != 2 || l.Records[0].ID != "rec-1" || !l.Records[1].StartedAt.Equal(f.Records[1].StartedAt) {
		t.Fatalf("list = %+v", l)
	}

	var got []control.Record
	ex, err := c.BufferExport(cx, func(r control.Record) error { got = append(got, r); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if ex.Count != 3 || len(got) != 3 || !reflect.DeepEqual(got[2].Text, "meting 3") {
		t.Fatalf("export = %+v %+v", ex, got)
	}

	s, err := c.Say(cx, "agora hoe laat is het")
	if err != nil {
		t.Fatal(err)
	}
	if s.Stored != "listen_buffer" || s.ID == "" {
		t.Fatalf("say = %+v", s)
	}

	m, err := c.SetMode(cx, "feedback")
	if err != nil {
		t.Fatal(err)
	}
	if m.Previous != "listen" || m.Mode != "feedback" || m.Flushed != 4 {
		t.Fatalf("mode = %+v", m)
	}
	ob, err := c.Outbox(cx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ob.Count != 1 || ob.Entries[0].Kind != "batch" {
		t.Fatalf("outbox = %+v", ob)
	}
	fl, err := c.Flush(cx)
	if err != nil {
		t.Fatal(err)
	}
	if fl.Items != 0 {
		t.Fatalf("flush of empty buffer = %+v", fl)
	}
	p, err := c.PTT(cx, true)
	if err != nil || !p.Down || !f.PTTDown {
		t.Fatalf("ptt = %+v %v", p, err)
	}
	cl, err := c.BufferClear(cx)
	if err != nil || cl.Deleted != 0 {
		t.Fatalf("clear = %+v %v", cl, err)
	}
	want := []string{"status", "buffer.list 2", "buffer.export", "say agora hoe laat is het", "mode feedback",
		"outbox 0", "flush", "ptt true", "buffer.clear"}
	if !reflect.DeepEqual(f.CallLog(), want) {
		t.Fatalf("calls = %q, want %q", f.CallLog(), want)
	}
}

// Raw protocol: bad requests get an error naming what was wrong and never
// reach the handler; the connection stays usable.
func TestBadRequests(t *testing.T) {
	f := controltest.NewFake(1)
	path := controltest.Serve(t, f)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	tests := []struct{ req, want string }{
		{`{"op":"dance"}`, `op: unknown "dance"`},
		{`{}`, "op: missing"},
		{`not json`, "bad request"},
		{`{"op":"status","colour":"red"}`, `unknown field "colour"`},
		{`{"op":"mode","mode":"loud"}`, `mode: "loud" is not listen or feedback`},
		{`{"op":"say","text":"   "}`, "text: empty"},
		{`{"op":"buffer.list","limit":-1}`, "limit: -1 is negative"},
		{`{"op":"buffer.clear"}`, "yes:"},
		{`{"op":"mode","mode":5}`, "bad request"},
	}
	for _, tc := range tests {
		fmt.Fprintln(conn, tc.req)
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", tc.req, err)
		}
		var resp control.Response
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatal(err)
		}
		if resp.OK || !strings.Contains(resp.Error, tc.want) {
			t.Errorf("%s: got %+v, want error containing %q", tc.req, resp, tc.want)
		}
	}
	if calls := f.CallLog(); len(calls) != 0 {
		t.Fatalf("handler called on bad requests: %q", calls)
	}
	fmt.Fprintln(conn, `{"op":"status"}`)
	line, _ := r.ReadString('\n')
	if !strings.Contains(line, `"ok":true`) {
		t.Fatalf("connection unusable after errors: %s", line)
	}
	// An oversized request gets an error, not a crash.
	fmt.Fprintln(conn, `{"op":"say","text":"`+strings.Repeat("a", control.MaxRequest)+`"}`)
	line, _ = r.ReadString('\n')
	if !strings.Contains(line, "longer than") {
		t.Fatalf("oversized request: %q", line)
	}
}

func TestHandlerErrorAndPanic(t *testing.T) {
	f := controltest.NewFake(0)
	f.Err = errors.New("store is full")
	path := controltest.Serve(t, f)
	c := dial(t, path)
	_, err := c.Say(ctx(t), "hallo")
	var re *control.RemoteError
	if !errors.As(err, &re) || re.Msg != "say: store is full" {
		t.Fatalf("err = %v", err)
	}

	ppath := controltest.Serve(t, panicky{f})
	pc := dial(t, ppath)
	if _, err := pc.Flush(ctx(t)); err == nil || !strings.Contains(err.Error(), "flush: internal error") {
		t.Fatalf("panic answer = %v", err)
	}
	// The server survived.
	if _, err := dial(t, ppath).Status(ctx(t)); err == nil || !strings.Contains(err.Error(), "store is full") {
		t.Fatalf("after panic: %v", err)
	}
}

type panicky struct{ *controltest.Fake }

func (panicky) Flush(context.Context) (control.FlushResult, error) { panic("boom") }

func TestSocketPermissionsAndStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "agctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")

	// A stale socket (nobody listening) is replaced.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatal("stale socket not left behind")
	}

	ln, err := control.Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&fs.ModeSocket == 0 || st.Mode().Perm() != 0o660 {
		t.Fatalf("socket mode = %v, want socket 0660", st.Mode())
	}
	if ln.Addr().String() != path {
		t.Fatalf("Addr = %s", ln.Addr())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	serve := testrun.Start(t, "Serve", func(ctx context.Context) error { return control.Serve(ctx, ln, controltest.NewFake(0)) })

	// A live socket is not taken over.
	if _, err := control.Listen(path); err == nil || !strings.Contains(err.Error(), "already answering") || !strings.Contains(err.Error(), path) {
		t.Fatalf("second Listen: %v", err)
	}
	// An open client is disconnected when the server stops.
	c := dial(t, path)
	if _, err := c.Status(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := serve.Stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := c.Status(ctx(t)); err == nil {
		t.Fatal("client still served after shutdown")
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket not removed on close: %v", err)
	}

	// A regular file in the way is never deleted.
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := control.Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "x" {
		t.Fatal("file in the way was touched")
	}
	// A missing directory is named.
	if _, err := control.Listen(filepath.Join(dir, "nope", "s.sock")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("Listen in missing dir: %v", err)
	}
}

func TestDialNotRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.sock")
	_, err := control.Dial(path)
	if !errors.Is(err, control.ErrNotRunning) || err.Error() != "agorad is not running (no control socket at "+path+")" {
		t.Fatalf("err = %v", err)
	}
}

// Permission denied is checked for real: a helper process running as nobody
// dials a 0660 root-owned socket. It needs root to switch users.
func TestDialPermissionDenied(t *testing.T) {
	if os.Getenv("AGORAD_CONTROL_DIAL_HELPER") != "" {
		_, err := control.Dial(os.Getenv("AGORAD_CONTROL_DIAL_HELPER"))
		fmt.Println(err)
		os.Exit(0)
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the helper as another user")
	}
	dir, err := os.MkdirTemp("", "agctl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := controltest.Serve(t, controltest.NewFake(0))
	// The test binary must be executable by nobody.
	bin := filepath.Join(dir, "control.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestDialPermissionDenied$")
	cmd.Env = append(os.Environ(), "AGORAD_CONTROL_DIAL_HELPER="+path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	want := "permission denied on " + path + " (are you in the agorad group?)"
	if !strings.Contains(string(out), want) {
		t.Fatalf("helper said %q, want %q", out, want)
	}
}

func TestContextCancelsRequest(t *testing.T) {
	path := controltest.Serve(t, slow{controltest.NewFake(0)})
	c := dial(t, path)
	cx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Status(cx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

type slow struct{ *controltest.Fake }

func (s slow) Status(ctx context.Context) (control.Status, error) {
	<-ctx.Done() // ends when the server shuts down
	return control.Status{}, ctx.Err()
}

// A large export streams (it is not built in memory on either side) and
// arrives complete and in order; the connection is reusable afterwards.
func TestLargeExport(t *testing.T) {
	f := controltest.NewFake(20000)
	c := dial(t, controltest.Serve(t, f))
	var n int
	var last uint64
	res, err := c.BufferExport(ctx(t), func(r control.Record) error {
		if r.Seq <= last {
			return fmt.Errorf("out of order: %d after %d", r.Seq, last)
		}
		last = r.Seq
		n++
		return nil
	})
	if err != nil || n != 20000 || res.Count != 20000 {
		t.Fatalf("export: %v, got %d records, count %d", err, n, res.Count)
	}
	if _, err := c.Status(ctx(t)); err != nil {
		t.Fatalf("after export: %v", err)
	}
	// A client that stops early (its callback fails) gets that error back.
	stop := errors.New("disk full")
	c2 := dial(t, controltest.Serve(t, f))
	if _, err := c2.BufferExport(ctx(t), func(control.Record) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("early stop: %v", err)
	}
}
