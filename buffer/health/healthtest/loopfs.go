// Package healthtest gives tests a real file system to break: an ext4
// image on a loop device, mounted with errors=remount-ro, and the kernel's
// own ways to fail it (ext4's error path, filling it, removing the
// directory). Tests that cannot have one (not root, no loop device, no
// mkfs.ext4) are skipped with the reason.
package healthtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ext4 is a loop-mounted ext4 image.
type Ext4 struct {
	t     testing.TB
	Image string // the image file
	Dev   string // /dev/loopN
	Mnt   string // the mount point
}

// NewExt4 makes an ext4 image of size (e.g. "64M"), attaches it to a loop
// device and mounts it with errors=remount-ro. Everything is undone at the
// end of the test.
func NewExt4(t testing.TB, size string) *Ext4 {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a loop-device ext4 image")
	}
	for _, tool := range []string{"losetup", "mkfs.ext4", "mount", "umount", "e2fsck"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	dir := t.TempDir()
	fs := &Ext4{t: t, Image: filepath.Join(dir, "disk.img"), Mnt: filepath.Join(dir, "mnt")}
	if err := os.Mkdir(fs.Mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("truncate", "-s", size, fs.Image).CombinedOutput(); err != nil {
		t.Fatalf("truncate: %v: %s", err, out)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", fs.Image).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	out, err := exec.Command("losetup", "-f", "--show", fs.Image).CombinedOutput()
	if err != nil {
		t.Skipf("needs a loop device (losetup -f): %v: %s", err, out)
	}
	fs.Dev = strings.TrimSpace(string(out))
	t.Cleanup(func() {
		_ = exec.Command("umount", "-l", fs.Mnt).Run()
		_ = exec.Command("losetup", "-d", fs.Dev).Run()
	})
	fs.Mount()
	return fs
}

// Mount mounts the image (again) with errors=remount-ro.
func (fs *Ext4) Mount() {
	fs.t.Helper()
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "errors=remount-ro", fs.Dev, fs.Mnt).CombinedOutput(); err != nil {
		fs.t.Fatalf("mount %s: %v: %s", fs.Dev, err, out)
	}
}

// TriggerError runs ext4's error path (as a detected corruption would):
// with errors=remount-ro the kernel remounts the file system read-only.
func (fs *Ext4) TriggerError() {
	fs.t.Helper()
	p := filepath.Join("/sys/fs/ext4", filepath.Base(fs.Dev), "trigger_fs_error")
	if err := os.WriteFile(p, []byte("1"), 0o200); err != nil {
		fs.t.Skipf("this kernel offers no ext4 error trigger (%s): %v", p, err)
	}
}

// Repair is the way back from ext4's emergency read-only state measured on
// this kernel (a remount rw keeps it read-only): unmount, e2fsck, mount. The
// unmount fails while a process holds files on it.
func (fs *Ext4) Repair() error {
	if out, err := exec.Command("umount", fs.Mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("umount: %v: %s", err, out)
	}
	// e2fsck exits 1 when it fixed something.
	if out, err := exec.Command("e2fsck", "-fy", fs.Dev).CombinedOutput(); err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() > 1 {
			return fmt.Errorf("e2fsck: %v: %s", err, out)
		}
	}
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "errors=remount-ro", fs.Dev, fs.Mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("mount: %v: %s", err, out)
	}
	return nil
}

// Fill writes a file until the file system is full and returns its path
// (remove it to give the space back).
func (fs *Ext4) Fill() string {
	fs.t.Helper()
	p := filepath.Join(fs.Mnt, "filler")
	f, err := os.Create(p)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	small := make([]byte, 4096)
	for {
		if _, err := f.Write(small); err != nil {
			break
		}
	}
	_ = f.Sync()
	return p
}
