//go:build unix

package loadtest

import "syscall"

// offHeap returns n zeroed bytes the Go collector neither counts nor scans
// (an anonymous mapping), so that a paced phase's sealed requests do not
// change how often an in-process server collects.
func offHeap(n int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	return syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
}

// releaseOffHeap returns what offHeap gave.
func releaseOffHeap(b []byte) {
	if b != nil {
		syscall.Munmap(b)
	}
}
