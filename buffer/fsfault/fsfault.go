package fsfault

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Ext4 is a loop-mounted ext4 image mounted with errors=remount-ro.
type Ext4 struct {
	Img, Dir, Loop string
}

func run(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// MountExt4 creates a sizeMiB ext4 image, attaches it to a loop device and
// mounts it; it skips the test when that cannot be done here.
func MountExt4(t testing.TB, sizeMiB int) *Ext4 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: losetup and mount of an ext4 image")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount", "e2fsck"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	base := t.TempDir()
	e := &Ext4{Img: filepath.Join(base, "fs.img"), Dir: filepath.Join(base, "mnt")}
	if err := os.Mkdir(e.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := run("truncate", "-s", strconv.Itoa(sizeMiB)+"M", e.Img); err != nil {
		t.Fatalf("truncate: %v: %s", err, out)
	}
	if out, err := run("mkfs.ext4", "-q", "-F", e.Img); err != nil {
		t.Skipf("mkfs.ext4 unavailable: %v: %s", err, out)
	}
	loop, err := run("losetup", "--find", "--show", e.Img)
	if err != nil {
		t.Skipf("no loop device: %v: %s", err, loop)
	}
	e.Loop = loop
	t.Cleanup(func() { _, _ = run("losetup", "-d", e.Loop) })
	if out, err := run("mount", "-t", "ext4", "-o", "errors=remount-ro", e.Loop, e.Dir); err != nil {
		t.Skipf("mount ext4 on %s: %v: %s", e.Loop, err, out)
	}
	t.Cleanup(func() { _, _ = run("umount", "-l", e.Dir) })
	return e
}

// TriggerError runs ext4's error path (as a detected corruption would):
// with errors=remount-ro the kernel remounts the file system read-only. It
// does not wait for that: RemountReadOnly does.
func (e *Ext4) TriggerError(t testing.TB) {
	t.Helper()
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(e.Loop), "trigger_fs_error")
	if err := os.WriteFile(trigger, []byte("1"), 0o200); err != nil {
		t.Skipf("cannot trigger an ext4 error (%s): %v", trigger, err)
	}
}

// RemountReadOnly makes the kernel's ext4 error path remount the file
// system read-only, as a worn SD card does, and waits until a create fails
// with EROFS. (The kernel here marks the mount emergency_ro, which statfs
// does not report as read-only.)
func (e *Ext4) RemountReadOnly(t testing.TB) {
	t.Helper()
	e.TriggerError(t)
	probe := filepath.Join(e.Dir, ".fsfault-probe")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		f, err := os.Create(probe)
		if err == nil {
			f.Close()
			os.Remove(probe)
		}
		if errors.Is(err, syscall.EROFS) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still writable 5s after the ext4 error: %v", e.Dir, err)
		}
	}
}

// Repair is the way back from ext4's emergency read-only state measured on
// this kernel (a remount rw keeps it read-only): unmount, e2fsck, mount. The
// unmount fails while a process holds files on it.
func (e *Ext4) Repair() error {
	if out, err := run("umount", e.Dir); err != nil {
		return fmt.Errorf("umount: %v: %s", err, out)
	}
	if out, err := e2fsck(e.Loop); err != nil {
		return fmt.Errorf("e2fsck: %v: %s", err, out)
	}
	if out, err := run("mount", "-t", "ext4", "-o", "errors=remount-ro", e.Loop, e.Dir); err != nil {
		return fmt.Errorf("mount: %v: %s", err, out)
	}
	return nil
}

// e2fsck repairs dev; its exit 1 (something was fixed: the point) is no error.
func e2fsck(dev string) (string, error) {
	out, err := run("e2fsck", "-fy", dev)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil
	}
	return out, err
}

// Fill fills the file system with a file in it and returns the file's path
// (remove it to give the space back).
func (e *Ext4) Fill(t testing.TB) string {
	t.Helper()
	p := filepath.Join(e.Dir, "filler")
	Fill(t, p)
	return p
}

// CrashCopy copies the image as the device holds it now (what a pulled
// card holds), repairs the copy with e2fsck and mounts it read-write on a
// loop device of its own, returning its mount point: what the next start
// would find. The original stays mounted.
func (e *Ext4) CrashCopy(t testing.TB) string {
	t.Helper()
	img, mnt := e.Img+".copy", e.Dir+".copy"
	if out, err := run("cp", "--sparse=always", e.Img, img); err != nil {
		t.Fatalf("copy image: %v: %s", err, out)
	}
	if out, err := e2fsck(img); err != nil {
		t.Fatalf("e2fsck: %v: %s", err, out)
	}
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := run("mount", "-t", "ext4", "-o", "loop", img, mnt); err != nil {
		t.Fatalf("mount the copy: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = run("umount", "-l", mnt) })
	return mnt
}

// MountTmpfs mounts a tmpfs of size (e.g. "32m") on a fresh directory.
func MountTmpfs(t testing.TB, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := run("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir); err != nil {
		t.Skipf("needs to mount a tmpfs (root or CAP_SYS_ADMIN): %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = run("umount", "-l", dir) })
	return dir
}

// Fill writes path until its file system has no block left.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for n := len(buf); n >= 512; {
		if _, err := f.Write(buf[:n]); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			n /= 2 // the last partial megabyte
		}
	}
	_ = f.Sync()
}
