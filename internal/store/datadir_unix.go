//go:build unix

package store

import (
	"io/fs"
	"strconv"
	"syscall"
)

// ownerUID is the owner's uid of the file fi describes.
func ownerUID(fi fs.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return strconv.FormatUint(uint64(st.Uid), 10), true
}
