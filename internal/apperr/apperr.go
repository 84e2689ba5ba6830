// Package apperr defines keyward's single error type. Domain code returns *Error
// values carrying the wire error_code; the HTTP layer alone maps Kind to a status.
package apperr

import (
	"errors"
	"fmt"

	"github.com/keyward/keyward/wire"
)

// Kind classifies an error for transport mapping. It says nothing about wording.
type Kind int

// The kinds of error. The zero value is Internal so that a forgotten Kind never
// leaks as a client error.
const (
	Internal         Kind = iota // a bug or an unavailable dependency: generic 500
	Invalid                      // malformed or missing input: 400
	Unauthenticated              // missing or wrong credentials: 401
	Forbidden                    // authenticated but not allowed, or a refused state: 403
	NotFound                     // no such resource: 404
	Conflict                     // the state forbids the change: 409
	RateLimited                  // too many attempts: 429
	MethodNotAllowed             // the route does not answer the request's method: 405
)

// Error is the one error type of keyward. Code is the wire error_code (for
// example INVALID_KEY); Message is safe to show to an end user; Err is the
// cause, logged but never sent.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Err     error
	// Fields are extra top-level reply fields, such as devices_used on DEVICE_LIMIT.
	Fields map[string]any
	// RetryAfter, in seconds, is sent as retry_after and Retry-After when positive.
	RetryAfter int
}

// New returns an error of the given kind, wire code and user-safe message.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Wrap returns an Internal error around err; its message is never sent to clients.
func Wrap(err error, format string, args ...any) *Error {
	return &Error{Kind: Internal, Message: "internal error", Err: fmt.Errorf(format+": %w", append(args, err)...)}
}

// Missing is the MISSING_FIELDS refusal (400) of a required field that is
// absent or empty.
func Missing(field string) *Error {
	return New(Invalid, wire.CodeMissingFields, "Missing required field: "+field+".")
}

// InvalidField is the MISSING_FIELDS refusal (400) of a field out of range;
// why completes "Invalid field <field>: …".
func InvalidField(field, why string) *Error {
	return New(Invalid, wire.CodeMissingFields, "Invalid field "+field+": "+why+".")
}

// NotFoundOf is the NOT_FOUND refusal (404) of a missing resource, named
// by what ("Key", "App", …).
func NotFoundOf(what string) *Error { return New(NotFound, wire.CodeNotFound, what+" not found.") }

// NotFoundAs turns ErrNotFound from a store into the NOT_FOUND refusal of
// what; other errors pass unchanged.
func NotFoundAs(err error, what string) error {
	if errors.Is(err, ErrNotFound) {
		return NotFoundOf(what)
	}
	return err
}

// With returns a copy of e carrying one more reply field.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Fields = make(map[string]any, len(e.Fields)+1)
	for k, v := range e.Fields {
		c.Fields[k] = v
	}
	c.Fields[key] = value
	return &c
}

// Error implements error.
func (e *Error) Error() string {
	msg := e.Message
	if e.Code != "" {
		msg = e.Code + ": " + msg
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// From returns the *Error inside err, or an Internal error wrapping err.
func From(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: Internal, Message: "internal error", Err: err}
}

// CodeOf returns the wire code of err, or "" when err carries none.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// Storage-level sentinels. The store translates driver errors into these so that
// nothing above it sees a driver type.
var (
	// ErrNotFound means no row matched.
	ErrNotFound = errors.New("not found")
	// ErrConflict means a uniqueness constraint refused the write.
	ErrConflict = errors.New("conflict")
)
