// Package fsfault makes real file-system faults for tests: a loop-mounted
// ext4 image (errors=remount-ro) that the kernel's own error path turns
// read-only and the way back from it (unmount, e2fsck, mount), a copy of such an image as a pulled card holds it, a small
// tmpfs, and a file system filled to its last block. It needs root (mount,
// losetup); without it the tests skip, saying why. Invariant: everything it
// mounts or attaches is undone at the test's cleanup, lazily, so a store
// left open (as a dead process would not) cannot keep it busy.
package fsfault
