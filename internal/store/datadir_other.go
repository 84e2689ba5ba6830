//go:build !unix

package store

import "io/fs"

// ownerUID: no owner uid on this platform.
func ownerUID(fs.FileInfo) (string, bool) { return "", false }
