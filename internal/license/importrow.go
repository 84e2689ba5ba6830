package license

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The fields of an imported key, in KeyCSVHeader's order. CSV columns and
// JSON members name them by any of their aliases (importAliases).
const (
	fKey = iota
	fStatus
	fType
	fDuration
	fMaxDevices
	fActivated
	fExpires
	fNote
	fFeatures
	fHWIDs
	fCreated
	fFloating
	numImportFields
)

// importAliases maps a normalized column or member name (importName) to its
// field. Two names of one field in one header or object are refused as
// ambiguous. docs/api.md lists them.
var importAliases = map[string]int{
	"license_key": fKey, "licence_key": fKey, "key": fKey, "license": fKey, "licence": fKey, "licensekey": fKey,
	"serial": fKey, "serial_key": fKey,
	"status": fStatus, "state": fStatus, "key_status": fStatus,
	"key_type": fType, "type": fType, "keytype": fType, "license_type": fType,
	"duration": fDuration, "duration_days": fDuration, "duration_value": fDuration, "days": fDuration,
	"max_devices": fMaxDevices, "maxdevices": fMaxDevices, "device_limit": fMaxDevices, "max_hwids": fMaxDevices,
	"seats":        fMaxDevices,
	"activated_at": fActivated, "activated": fActivated, "activated_on": fActivated, "activation_date": fActivated,
	"expires_at": fExpires, "expires": fExpires, "expiry": fExpires, "expiration": fExpires, "expires_on": fExpires,
	"expiry_date": fExpires, "expiration_date": fExpires, "valid_until": fExpires,
	"note": fNote, "notes": fNote, "comment": fNote, "comments": fNote,
	"features": fFeatures, "feature_flags": fFeatures, "flags": fFeatures,
	"hwids": fHWIDs, "hwid": fHWIDs, "devices": fHWIDs, "device": fHWIDs, "hardware_id": fHWIDs,
	"hardware_ids": fHWIDs, "device_ids": fHWIDs,
	"created_at": fCreated, "created": fCreated, "created_on": fCreated, "creation_date": fCreated,
	"floating": fFloating, "is_floating": fFloating, "floating_license": fFloating, "concurrent": fFloating,
}

// importBools maps a normalized boolean cell (importName) to its value.
var importBools = map[string]bool{
	"true": true, "1": true, "yes": true, "y": true, "on": true,
	"false": false, "0": false, "no": false, "n": false, "off": false,
}

// importName normalizes a column or member name: trimmed, lower case, runs
// of spaces, '-' and '.' as '_' ("License Key" → license_key).
func importName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '-' || r == '.' {
			return '_'
		}
		return r
	}, s)
}

// importStatuses maps a normalized status (importName) to a Status: the
// API reference's names in any case and the synonyms exports use.
var importStatuses = map[string]Status{
	"unused": StatusUnused, "new": StatusUnused, "unactivated": StatusUnused, "not_activated": StatusUnused,
	"available": StatusUnused,
	"active":    StatusActive, "activated": StatusActive, "used": StatusActive, "in_use": StatusActive,
	"paused": StatusPaused, "suspended": StatusPaused,
	"banned": StatusBanned, "revoked": StatusBanned, "blocked": StatusBanned, "blacklisted": StatusBanned,
	"expired":  StatusExpired,
	"redeemed": StatusRedeemed,
}

// importLifetime are the markers that say "no expiry" in the expiry, key
// type and duration fields.
var importLifetime = map[string]bool{
	"lifetime": true, "never": true, "unlimited": true, "permanent": true, "forever": true, "infinite": true,
	"perpetual": true,
}

// importNull reports whether a cell means "none": empty, null, none, nil or n/a.
func importNull(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "null", "none", "nil", "n/a":
		return true
	}
	return false
}

// rawRow is one key as read from a CSV record or a JSON object, before
// validation: each field's text ("" and null markers mean none), whether the
// record gave the field at all, and the device IDs when a JSON list gave them.
type rawRow struct {
	val   [numImportFields]string
	given [numImportFields]bool
	hwids []string // from a JSON array; nil to split val[fHWIDs]
	list  bool     // hwids came from a JSON array
}

// ImportRow is one valid key of an import file: Key carries the key's
// fields (CreatedAt zero and ActivatedAt nil where the file gave none, see
// Complete), HWIDs its bound devices in order, Line where the key starts
// (its CSV row, or the line of its JSON object).
type ImportRow struct {
	Line  int
	Key   Key
	HWIDs []string
	given uint16 // the fields the file named (bit per field)
	// needs are what a new key lacks (a type, a duration, an expiry) that
	// an existing key a merge updates already has.
	needs []ImportError
}

// Needs lists what the row lacks to be a new key (a key type, the duration
// of an unused days key, the expiry of an active or expired one); a merge
// into an existing key takes those from the key.
func (r *ImportRow) Needs() []ImportError { return r.needs }

// Has reports whether the file gave field (a KeyCSVHeader name), possibly
// as none (an empty cell or null); a field the file does not name is left
// as it is by a merge.
func (r *ImportRow) Has(field string) bool {
	for i, n := range KeyCSVHeader {
		if n == field {
			return r.given&(1<<i) != 0
		}
	}
	return false
}

// Complete fills what the file left to the import time: the creation time,
// the activation of a key whose status needs one (active, expired,
// redeemed) and, for such a days key without an expiry, the expiry its
// duration gives from that activation; and an active key whose expiry has
// passed at now becomes expired.
func (r *ImportRow) Complete(now time.Time) {
	k := &r.Key
	now = now.UTC().Truncate(time.Second)
	if k.CreatedAt.IsZero() {
		k.CreatedAt = now
	}
	if k.ActivatedAt == nil && (k.Status == StatusActive || k.Status == StatusExpired || k.Status == StatusRedeemed) {
		a := now
		k.ActivatedAt = &a
	}
	if k.Type == TypeDays && k.ExpiresAt == nil && k.ActivatedAt != nil && k.Status != StatusUnused {
		e := k.ActivatedAt.Add(time.Duration(k.Duration) * 24 * time.Hour)
		k.ExpiresAt = &e
	}
	// A key the file calls active whose expiry has passed is stored as
	// expired: otherwise it would count as active until the next expiry
	// sweep, which would then record key_expired (a webhook each) for every
	// such key of an old export at once.
	if k.Status == StatusActive && k.ExpiresAt != nil && !k.ExpiresAt.After(now) {
		k.Status = StatusExpired
	}
}

// importRow validates one raw key at line and returns it; problems are
// recorded in p and reported by ok, what only a new key needs in the row's
// needs. Missing fields are derived where the
// file says enough (docs/api.md, "Importing keys"): the status from an
// activation, expiry or devices; the key type from the expiry (a lifetime
// marker or null is lifetime) or duration; the duration of an activated
// days key from its activation and expiry; one device seat.
func (p *ParsedCSV) importRow(line int, raw *rawRow) (ImportRow, bool) {
	ok := true
	bad := func(field int, format string, args ...any) {
		p.fail(line, KeyCSVHeader[field], format, args...)
		ok = false
	}
	p.key = clip(strings.TrimSpace(raw.val[fKey]))
	defer func() { p.key = "" }()
	row := ImportRow{Line: line}
	need := func(field int, format string, args ...any) {
		row.needs = append(row.needs, ImportError{Line: line, LicenseKey: p.key, Field: KeyCSVHeader[field], Message: fmt.Sprintf(format, args...)})
	}
	for i, g := range raw.given {
		if g {
			row.given |= 1 << i
		}
	}
	k := &row.Key
	val := func(f int) (string, bool) { // the trimmed text, false when none
		v := strings.TrimSpace(raw.val[f])
		if f == fNote {
			return raw.val[f], raw.val[f] != "" && raw.val[f] != "null"
		}
		return v, !importNull(v)
	}

	if v, has := val(fKey); !has {
		bad(fKey, "is required")
	} else if k.LicenseKey = v; !importKeyRE.MatchString(v) {
		bad(fKey, "must be 1 to 128 letters, digits, '-', '_' or '.', starting with a letter or digit")
	}

	var status Status
	if v, has := val(fStatus); has {
		s, known := importStatuses[importName(v)]
		if !known {
			bad(fStatus, "must be unused, active, paused, banned, expired or redeemed (any case), not %q", clip(v))
		}
		status = s
	}

	var typ KeyType
	lifetimeBy := "" // the field whose lifetime marker set typ
	if v, has := val(fType); has {
		switch n := importName(v); {
		case n == "days" || n == "day" || n == "timed" || n == "time_limited":
			typ = TypeDays
		case importLifetime[n]:
			typ = TypeLifetime
		default:
			bad(fType, "must be days or lifetime, not %q", clip(v))
		}
	}

	durGiven := false
	if v, has := val(fDuration); has {
		n := importName(v)
		if importLifetime[n] {
			lifetimeBy = "duration"
		} else {
			n = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "days"), "day"), "d")
			d, err := strconv.Atoi(strings.TrimRight(n, "_"))
			if err != nil || d < 0 || d > maxImportDuration {
				bad(fDuration, "must be a whole number of days from 0 to %d", maxImportDuration)
			} else {
				k.Duration, durGiven = d, true
			}
		}
	}

	k.MaxDevices = 1
	if v, has := val(fMaxDevices); has {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 10000 {
			bad(fMaxDevices, "must be a whole number from 1 to 10000")
		} else {
			k.MaxDevices = n
		}
	}

	if v, has := val(fFloating); has {
		b, known := importBools[importName(v)]
		if !known {
			bad(fFloating, "must be true or false, not %q", clip(v))
		}
		k.Floating = b
	}

	optTime := func(f int) *time.Time {
		v, has := val(f)
		if !has {
			return nil
		}
		t, err := parseImportTime(v)
		if err != nil {
			bad(f, "must be a time such as 2026-11-20T12:00:00Z, 2026-11-20 12:00:00 (UTC), 2026-11-20 or Unix seconds, not %q", clip(v))
			return nil
		}
		return &t
	}
	k.ActivatedAt = optTime(fActivated)
	if v, has := val(fExpires); has && importLifetime[importName(v)] {
		lifetimeBy = "expires_at"
	} else {
		k.ExpiresAt = optTime(fExpires)
	}
	if c := optTime(fCreated); c != nil {
		k.CreatedAt = *c
	}

	if note, has := val(fNote); has {
		note = strings.ReplaceAll(strings.ReplaceAll(note, "\r\n", "\n"), "\r", "\n")
		if len(note) > 1000 {
			bad(fNote, "must be at most 1000 bytes")
		} else if !utf8.ValidString(note) {
			bad(fNote, "must be UTF-8 text")
		}
		k.Note = note
	}

	feat := raw.val[fFeatures]
	if _, has := val(fFeatures); !has {
		feat = ""
	}
	if f, err := CheckFeatures([]byte(strings.TrimSpace(feat))); err != nil {
		bad(fFeatures, "must be a JSON object of flag names to booleans, numbers or strings")
	} else {
		k.Features = f
	}

	hw := raw.hwids
	if !raw.list {
		if v, has := val(fHWIDs); has {
			sep := ","
			if strings.Contains(v, ";") {
				sep = ";"
			}
			for _, h := range strings.Split(v, sep) {
				if h = strings.TrimSpace(h); h != "" {
					hw = append(hw, h)
				}
			}
		}
	}
	if len(hw) > 0 {
		dup := map[string]bool{}
		for _, h := range hw {
			switch {
			case h == "" || len(h) > 256:
				bad(fHWIDs, "each device ID must be 1 to 256 bytes")
			case strings.ContainsFunc(h, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }):
				bad(fHWIDs, "device IDs must be printable UTF-8 text")
			case dup[h]:
				bad(fHWIDs, "device ID %q is listed twice", clip(h))
			}
			dup[h] = true
		}
		if len(hw) > 10000 {
			bad(fHWIDs, "at most 10000 devices")
		}
		row.HWIDs = hw
	}
	if !ok {
		return row, false
	}

	// The key type: given, or a lifetime marker, or what the expiry and
	// duration say. With neither a type nor an expiry field a key is not
	// taken as lifetime by default.
	switch {
	case lifetimeBy != "" && typ == TypeDays:
		bad(fType, "is days but %s says lifetime", lifetimeBy)
	case lifetimeBy != "":
		typ = TypeLifetime
	case typ != "":
	case k.ExpiresAt != nil || k.Duration > 0:
		typ = TypeDays
	case raw.given[fExpires]:
		typ = TypeLifetime // an expiry of null is a lifetime key (the API reference)
	default:
		need(fType, "is needed when there is no expires_at: say whether the key is days or lifetime")
	}
	k.Type = typ

	// The status: given, or active when the key was used.
	if status == "" {
		status = StatusUnused
		if k.ActivatedAt != nil || k.ExpiresAt != nil || len(row.HWIDs) > 0 {
			status = StatusActive
		}
	}
	k.Status = status
	if !ok {
		return row, false
	}

	if k.Type == TypeDays && !durGiven && k.ActivatedAt != nil && k.ExpiresAt != nil && k.ExpiresAt.After(*k.ActivatedAt) {
		k.Duration = int((k.ExpiresAt.Sub(*k.ActivatedAt) + 24*time.Hour - time.Second) / (24 * time.Hour))
		if k.Duration > maxImportDuration {
			k.Duration = maxImportDuration
		}
	}

	// The states keyward's own transitions can produce.
	switch {
	case k.Status == StatusUnused && (k.ActivatedAt != nil || k.ExpiresAt != nil):
		bad(fStatus, "an unused key has no activated_at or expires_at")
	case k.Type == TypeLifetime && k.ExpiresAt != nil:
		bad(fExpires, "must be empty for a lifetime key")
	case k.Type == TypeLifetime && k.Duration != 0:
		bad(fDuration, "must be 0 for a lifetime key")
	case k.Status == StatusExpired && k.ExpiresAt == nil:
		need(fExpires, "is required for an expired key")
	case k.Type == TypeDays && k.Status == StatusUnused && !durGiven:
		need(fDuration, "is required for an unused days key (its days start at activation)")
	case k.Type == TypeDays && k.Status == StatusActive && k.ExpiresAt == nil && k.Duration == 0:
		need(fExpires, "is required for an active days key (or a duration to count from activated_at)")
	}
	return row, ok
}

// clip shortens a cell quoted in a message.
func clip(s string) string {
	if len(s) > 40 {
		for i := 40; i > 0; i-- {
			if utf8.RuneStart(s[i]) {
				return s[:i] + "…"
			}
		}
	}
	return s
}

// importTimeLayouts are the time forms an import reads besides Unix
// seconds; those without a zone are UTC.
var importTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseImportTime reads an RFC 3339 time, YYYY-MM-DD HH:MM:SS (UTC; also
// with a T, fractional seconds or without seconds), YYYY-MM-DD (midnight
// UTC) or Unix seconds, kept to the second in UTC (the precision exports
// write), between 1970 and 9999.
func parseImportTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	var t time.Time
	err := errors.New("unknown time format")
	if v != "" && len(v) <= 12 && strings.Trim(v, "0123456789") == "" {
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr == nil && n <= 253402300799 {
			t, err = time.Unix(n, 0), nil
		}
	} else {
		for _, l := range importTimeLayouts {
			if t, err = time.Parse(l, v); err == nil {
				break
			}
		}
	}
	if err != nil {
		return time.Time{}, err
	}
	if t.Year() < 1970 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("%d is out of range", t.Year())
	}
	return t.UTC().Truncate(time.Second), nil
}
