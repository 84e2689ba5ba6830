// Package event names the webhook events and the outbox record every domain
// package writes in the same transaction as the change that caused it. The
// webhook dispatcher delivers what is recorded here.
package event

import (
	"strconv"
	"time"
)

// Event is one outbox row.
type Event struct {
	ID    int64
	AppID string // empty for installation-wide events
	Type  string
	Data  map[string]any
	// Encoded, when set, is the data already encoded as a JSON object, and
	// Data is not read: a writer of many events of one shape (the expiry
	// sweep) encodes a struct rather than a map per event.
	Encoded   []byte
	CreatedAt time.Time
	// Subject names the one thing the event is about ("key:42", see the
	// helpers below); "" for events about no single thing (several keys,
	// an address, a test). Deliveries of one subject to one endpoint go
	// out in the events' order; the emit site sets it, knowing the row it
	// changed (a key's id outlives a rotation of its string).
	Subject string
}

// Subjects of events. Ids are the rows' own, so a subject stays one while
// the thing's visible name changes (a rotated key string).
func KeySubject(id int64) string          { return "key:" + strconv.FormatInt(id, 10) }
func AccountSubject(id int64) string      { return "account:" + strconv.FormatInt(id, 10) }
func OrderSubject(id string) string       { return "order:" + id }
func SubscriptionSubject(id int64) string { return "subscription:" + strconv.FormatInt(id, 10) }
func ReleaseSubject(id int64) string      { return "release:" + strconv.FormatInt(id, 10) }

// Event types of the API reference.
const (
	KeyCreated         = "key.created"
	KeyActivated       = "key.activated"
	KeyBanned          = "key.banned"
	KeyUnbanned        = "key.unbanned"
	KeyDeleted         = "key.deleted"
	KeyRotated         = "key.rotated"
	KeySuspectedLeak   = "key.suspected_leak"
	KeyExpiring        = "key_expiring"
	KeyExpired         = "key_expired"
	TrialCreated       = "trial.created"
	HWIDResetRequested = "hwid_reset.requested"
	AppRevoked         = "app.revoked"
	SuspiciousActivity = "suspicious_activity"
	NewOrder           = "new_order"
	OrderApproved      = "order.approved"
	UpdatePublished    = "update.published"
	Test               = "test" // a manual test delivery to one webhook

	// keyward's own events, beyond the API reference's list.
	AccountCreated = "account.created" // an app user account signed up
	KeyRedeemed    = "key.redeemed"    // a key's time went to an account
	SeatDenied     = "seat.denied"     // a login to a floating key found every seat held
	// LicenseFileIssued: a signed license file was handed out (online,
	// air-gapped through the portal, or by an admin).
	LicenseFileIssued = "license_file.issued"
)
