package update

import (
	"strings"

	"github.com/keyward/keyward/internal/apperr"
)

// Platform names and the aliases callers send for them (Go's GOOS/GOARCH,
// Node's process.platform/arch, .NET's RuntimeInformation).
var (
	osNames = map[string]string{
		"windows": "windows", "win": "windows", "win32": "windows", "win64": "windows",
		"macos": "macos", "mac": "macos", "darwin": "macos", "osx": "macos",
		"linux": "linux",
	}
	archNames = map[string]string{
		"x64": "x64", "amd64": "x64", "x86_64": "x64",
		"x86": "x86", "386": "x86", "i386": "x86", "i686": "x86", "ia32": "x86",
		"arm64": "arm64", "aarch64": "arm64",
	}
)

// OSList and ArchList name the accepted platforms, for messages and docs.
const (
	OSList   = "windows, macos or linux"
	ArchList = "x64, x86 or arm64"
)

// NormalizeOS maps an os name or alias to its canonical name ("" stays "").
func NormalizeOS(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", nil
	}
	if n, ok := osNames[s]; ok {
		return n, nil
	}
	return "", apperr.InvalidField("os", "use "+OSList)
}

// NormalizeArch maps an arch name or alias to its canonical name.
func NormalizeArch(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", nil
	}
	if n, ok := archNames[s]; ok {
		return n, nil
	}
	return "", apperr.InvalidField("arch", "use "+ArchList)
}

// RawRequest is an update check as the caller sent it.
type RawRequest struct {
	Version, Channel, OS, Arch, HWID, LicenseKey string
}

// ParseRequest validates a caller's check. The version must be strict
// semver and the channel known: a typo is refused with a clear 400 rather
// than guessed (an unknown channel never falls back to alpha).
func ParseRequest(raw RawRequest) (Request, error) {
	var req Request
	if strings.TrimSpace(raw.Version) == "" {
		return req, apperr.Missing("v")
	}
	v, err := ParseVersion(strings.TrimSpace(raw.Version))
	if err != nil {
		return req, apperr.InvalidField("v", err.Error())
	}
	ch := strings.ToLower(strings.TrimSpace(raw.Channel))
	if !ValidChannel(ch) {
		return req, apperr.InvalidField("channel", "use stable, beta or alpha")
	}
	if ch == "" {
		ch = Stable
	}
	req = Request{Version: v, Channel: ch, HWID: strings.TrimSpace(raw.HWID), LicenseKey: strings.TrimSpace(raw.LicenseKey)}
	if req.OS, err = NormalizeOS(raw.OS); err != nil {
		return Request{}, err
	}
	if req.Arch, err = NormalizeArch(raw.Arch); err != nil {
		return Request{}, err
	}
	if len(req.HWID) > 256 || len(req.LicenseKey) > 256 {
		return Request{}, apperr.InvalidField("hwid", "hwid and license_key must be at most 256 bytes")
	}
	return req, nil
}
