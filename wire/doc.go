// Package wire is keyward's client wire contract, defined once: the
// error_code values the server sends and the request and reply bodies of
// every client route (/api/auth/*.php, /api/app/*.php, /api/update/*.php,
// /api/customer/reset-hwid.php). The server encodes these types, the Go SDK
// in package client decodes them, and a test holds docs/openapi.yaml to
// them, field for field.
//
// The package depends on the standard library only, so vendors' code may
// import it. Field presence is part of the contract: a field without
// omitempty is always sent (JSON null where the type is a pointer), a field
// with omitempty or omitzero is absent when empty. Timestamps are UTC with
// whole seconds, encoded as in 2026-11-01T12:00:00Z; use [At] and [AtPtr] to
// make them.
//
// Request types name each field's primary spelling; the server also accepts
// the aliases their comments list (sdk-compat §7.6).
package wire

import "time"

// At returns t as the wire sends timestamps: UTC, whole seconds.
func At(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// AtPtr is [At] for an optional time: nil stays nil (JSON null).
func AtPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := At(*t)
	return &v
}
